package orchestrator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/trajlab/traj/environment/evaluation/registry"
	"github.com/trajlab/traj/orchestrator/engine"
	"github.com/trajlab/traj/orchestrator/folder"
	"github.com/trajlab/traj/orchestrator/launch"
	"github.com/trajlab/traj/orchestrator/progress"
	"github.com/trajlab/traj/orchestrator/task"
	"github.com/trajlab/traj/sandbox/agent"
	"github.com/trajlab/traj/sandbox/harness"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/location"
)

// Options configure one run (`traj run`).
type Options struct {
	// Task is a built-in task name or a task folder.
	Task string
	// Model is PROVIDER/MODEL, as OpenCode names models.
	Model string
	// MaxParts is the part budget (required, > 0).
	MaxParts int
	// Timeout bounds the agent's work (default 4 h; Resume: the recorded
	// one); finishing the trajectory afterwards has its own bound.
	Timeout time.Duration
	// TrajectoryID defaults to <task>-<UTC time>-<random>.
	TrajectoryID string
	// Store is the store URL (see package location); "" means the default.
	Store string
	// StoreImpl, when set, is used instead of opening Store (tests inject
	// a failing store here).
	StoreImpl store.Store
	// WorkDir holds local trajectory folders and sandboxes. Default: the
	// store's folder when the store is local, else ./runs.
	WorkDir string
	// Script serves this scripted model in-process (offline runs); Model's
	// provider must then be "scripted".
	Script string
	// Provider settings for a real model: the base URL of an
	// OpenAI-compatible endpoint (custom provider) and the names of the
	// environment variables holding API keys, passed to OpenCode by name
	// so their values never reach the trajectory folder.
	BaseURL    string
	APIKeyEnvs []string
	// Agent is the harness (see sandbox/harness; "" is harness.Default).
	// AgentBin is its executable (default: the harness's own rule, e.g.
	// $TRAJ_OPENCODE_BIN, then where `make setup` installs it).
	Agent    string
	AgentBin string
	// harness is Agent's harness, resolved once by Validate and passed
	// down as a value (preflight, disk cap, launch, the loop).
	harness harness.Harness
	// MaxTokens and MaxCost are the model gateway's budgets over all
	// model calls (0: none); Price (dollars per million tokens) prices the
	// calls for MaxCost and the trace's cost. The scripted model has a
	// nominal price by default.
	MaxTokens int64
	MaxCost   float64
	Price     *agent.Price
	// TrajBin is the traj executable OpenCode runs as the MCP server
	// (`traj mcp`); default os.Executable().
	TrajBin string
	// TestsDir holds the public test suites' fixtures (TRAJ_TESTS_DIR).
	TestsDir string
	// Environments is what the task's environment name picks (zero:
	// registry.Builtin()).
	Environments registry.Environments
	// Sandbox is where the agent runs (provider, limits, network,
	// variables passed); a resume takes what is not set from run.json.
	Sandbox launch.SandboxOptions
	// Reporter receives progress events (default: none).
	Reporter engine.Reporter
	Logger   *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// FinishTimeout bounds each stage of the finish after the loop ends
	// (default 5 min): the final checkpoint, the ground truth still
	// queued, and the record (session_end, bundle, uploads).
	FinishTimeout time.Duration
	// AbortGrace and MaxEmptyTurns tune the loop (see LoopConfig).
	AbortGrace    time.Duration
	MaxEmptyTurns int
	// StallTimeout is the stall watchdog (LoopConfig.StallTimeout; 30 min
	// when 0).
	StallTimeout time.Duration
	// Rerun, when set, makes the run a re-execution of a recorded
	// trajectory (`traj replay rerun`): its model calls are answered from
	// the source's record, never by a provider.
	Rerun *Rerun
}

// Rerun is what re-executes a recorded trajectory, or forks it.
type Rerun struct {
	// Of names the source (the trace's rerun_of, or forked_from with
	// Of.Part the fork point).
	Of trace.Lineage
	// ForkAt > 0 makes the run a fork (traj run --fork): the source's
	// calls are played until its part ForkAt, then the model Options name
	// (Script, BaseURL, …) answers, and Prompt (when set) opens the first
	// turn that starts after that part.
	ForkAt int
	Prompt string
	// ContinueScript: the fork's Script is its source's, inherited, so it
	// goes on from where the source was at the fork point.
	ContinueScript bool
	// SourceModel is the source's PROVIDER/MODEL (a fork may name
	// another).
	SourceModel string
	// Calls is the source's model_calls.jsonl on this machine; Trace its
	// trace, whose part → call attribution places a fork's calls ("":
	// their parts_before alone).
	Calls, Trace string
	// AgentVersion is the harness version the source recorded; another is
	// refused unless AllowOtherVersion.
	AgentVersion      string
	AllowOtherVersion bool
}

// Result is what a run produced.
type Result struct {
	TrajectoryID string
	// Dir is the local trajectory folder.
	Dir string
	// Workspace is the agent's workspace (a git repository).
	Workspace string
	End       trace.SessionEnd
	Artifacts map[string]string
	// NotUploaded lists store keys that could not be uploaded (the local
	// files are complete; `traj sync` can retry).
	NotUploaded []string
}

// NewTrajectoryID makes an id: <task>-<UTC yyyymmdd-hhmmss>-<6 hex>.
func NewTrajectoryID(taskName string, now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%s-%s", taskName, now.UTC().Format("20060102-150405"), hex.EncodeToString(b[:]))
}

// Harness is the harness Validate resolved from Agent (the zero value
// before Validate).
func (o Options) Harness() harness.Harness { return o.harness }

// Validate checks the options and fills the defaults; it resolves Agent's
// harness once (Harness).
func (o *Options) Validate() error {
	if o.MaxParts <= 0 {
		return errors.New("the part budget (--max-parts) is required and must be > 0")
	}
	if o.Timeout <= 0 {
		o.Timeout = 4 * time.Hour
	}
	if o.FinishTimeout <= 0 {
		o.FinishTimeout = 5 * time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Reporter == nil {
		o.Reporter = progress.Discard{}
	}
	if prov, model, ok := strings.Cut(o.Model, "/"); !ok || prov == "" || model == "" {
		return fmt.Errorf("model %q: want PROVIDER/MODEL (for example scripted/demo or anthropic/claude-sonnet-4-5)", o.Model)
	}
	if o.harness.Name == "" || o.harness.Name != o.Agent {
		h, err := harness.Lookup(o.Agent)
		if err != nil {
			return err
		}
		o.Agent, o.harness = h.Name, h
	}
	if o.MaxTokens < 0 || o.MaxCost < 0 {
		return errors.New("--max-tokens and --max-cost must not be negative")
	}
	if o.MaxCost > 0 && o.Price == nil && o.Script == "" {
		return errors.New("--max-cost needs --price (dollars per million input and output tokens) to price the model calls")
	}
	if o.Rerun != nil && o.Rerun.Calls == "" {
		return errors.New("a rerun or fork needs its source's model calls")
	}
	if o.Rerun != nil && o.Rerun.ForkAt == 0 && (o.Script != "" || o.BaseURL != "") {
		return errors.New("a rerun is answered from its source's model calls: no --script or --base-url")
	}
	if o.Script != "" && !strings.HasPrefix(o.Model, launch.ScriptedProvider+"/") {
		return fmt.Errorf("--script serves the %q provider: use --model %s/<name>", launch.ScriptedProvider, launch.ScriptedProvider)
	}
	if o.TrajBin == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("find the traj executable: %w", err)
		}
		o.TrajBin = exe
	}
	return nil
}

// Run records one trajectory end to end: task, sandbox, agent server,
// the turn loop, then the final checkpoint, session_end, bundle and
// uploads. It returns an error only when the trajectory could not be set
// up or its trace not written; agent failures are end reasons.
func Run(ctx context.Context, opts Options) (*Result, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	tk, err := task.Load(opts.Task)
	if err != nil {
		return nil, err
	}
	id := opts.TrajectoryID
	if id == "" {
		id = NewTrajectoryID(tk.Name, opts.Now())
	}
	if err := store.ValidateID(id); err != nil {
		return nil, err
	}
	s := Start{Task: tk, StartedAt: trace.Timestamp(opts.Now())}
	if s.Store, s.StoreURL, err = openStore(ctx, opts); err != nil {
		return nil, err
	}
	work, err := workDir(opts.WorkDir, s.Store, id)
	if err != nil {
		return nil, err
	}
	s.Paths = folder.PathsOf(work, id)
	s.InPlace = folder.InPlace(s.Store, id, s.Paths.TracePath())
	if err := Preflight(ctx, opts, tk); err != nil {
		return nil, err
	}
	if !s.InPlace {
		if err := probeStore(ctx, s.Store, id, opts); err != nil {
			return nil, err
		}
	}
	if err := makeFolders(ctx, s); err != nil {
		return nil, err
	}
	opts.Sandbox = taskDisk(tk, opts.Sandbox)
	unmount, err := MountWorkspace(ctx, s.Paths, opts.Sandbox, opts.harness, opts.Logger)
	if err != nil {
		return nil, err
	}
	defer unmount()
	return Record(ctx, opts, s)
}

// Preflight checks, before anything is written, what would otherwise fail
// only after the trajectory folder exists (see launch.Preflight).
func Preflight(ctx context.Context, opts Options, tk *task.Task) error {
	return launch.Preflight(ctx, launch.Check{Environments: opts.environments(), Task: tk, TestsDir: opts.TestsDir, HarnessBin: opts.AgentBin, Harness: opts.harness,
		Model: opts.Model, Script: opts.Script, BaseURL: opts.BaseURL, Playback: opts.playback(), Fork: opts.forkAt() > 0, Sandbox: opts.Sandbox})
}

// forkAt is a fork's point (0: not a fork).
func (o Options) forkAt() int {
	if o.Rerun == nil {
		return 0
	}
	return o.Rerun.ForkAt
}

// playback is the model-call record a rerun plays ("": none).
func (o Options) playback() string {
	if o.Rerun == nil {
		return ""
	}
	return o.Rerun.Calls
}

// openStore opens the run's store (opts.StoreImpl, else opts.Store).
func openStore(ctx context.Context, opts Options) (store.Store, string, error) {
	url := location.Choose(opts.Store, os.Getenv)
	if opts.StoreImpl != nil {
		return opts.StoreImpl, url, nil
	}
	st, err := location.Open(ctx, url, location.Options{Logger: opts.Logger})
	return st, url, err
}

// workDir is the folder holding trajectory folders and sandboxes: the
// given one, else the store's own folder for a local store, else ./runs.
func workDir(work string, st store.Store, id string) (string, error) {
	if work == "" {
		work = location.Default
		if lp, ok := store.AsLocal(st); ok {
			if p, err := lp.LocalPath(store.TraceKey(id)); err == nil {
				// <root>/trajectories/<id>/agent_trace.json → <root>
				work = filepath.Dir(filepath.Dir(filepath.Dir(p)))
			}
		}
	}
	abs, err := filepath.Abs(work)
	if err != nil {
		return "", fmt.Errorf("work dir %q: %w", work, err)
	}
	return abs, nil
}

// ProbeTimeout bounds the store probe of a new run.
const ProbeTimeout = 30 * time.Second

// probeStore writes and removes a small object before anything is
// created, so a store that refuses writes (no credentials, no bucket,
// access denied: a permanent error) fails the run at once. A store that
// is only unreachable now is reported and the run goes on: a store that
// is down never fails a run; what is not uploaded by its end is listed for
// `traj sync`.
func probeStore(ctx context.Context, st store.Store, id string, opts Options) error {
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	key := store.ProbeKey(id)
	err := st.Save(ctx, key, store.Bytes("traj run write probe\n"))
	if err == nil {
		if rerr := st.Remove(ctx, key); rerr != nil {
			opts.Logger.Warn("remove the store's write probe", "key", key, "err", rerr)
		}
		return nil
	}
	if store.IsPermanent(err) {
		return fmt.Errorf("store %s refuses writes (check its credentials and bucket): %w", st.URI(""), err)
	}
	opts.Reporter.Report(progress.Event{Type: progress.Warning, Time: opts.Now(),
		Message: fmt.Sprintf("store %s cannot be reached now (%v); recording locally, uploads are retried and what is left is listed for `traj sync %s`", st.URI(""), err, trace.ShellWord(id))})
	return nil
}

// makeFolders creates a new trajectory's folders, refusing an id in use.
func makeFolders(ctx context.Context, s Start) error {
	p := s.Paths
	if _, err := os.Lstat(p.Dir); err == nil {
		return fmt.Errorf("trajectory %s already exists at %s (choose another --trajectory-id)", p.ID, p.Dir)
	}
	if _, err := os.Lstat(p.Sandbox); err == nil {
		return fmt.Errorf("sandbox of trajectory %s already exists at %s", p.ID, p.Sandbox)
	}
	if !s.InPlace {
		if _, err := s.Store.Stat(ctx, store.TraceKey(p.ID)); err == nil {
			return fmt.Errorf("trajectory %s already exists in the store", p.ID)
		}
	}
	for _, d := range []string{p.Dir, p.LogsDir(), p.HistoryDir(), p.Sandbox} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create trajectory folder: %w", err)
		}
	}
	return nil
}
