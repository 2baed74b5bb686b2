package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/trajlab/traj/orchestrator"
	"github.com/trajlab/traj/orchestrator/folder"
	"github.com/trajlab/traj/orchestrator/launch"
	"github.com/trajlab/traj/orchestrator/progress"
	"github.com/trajlab/traj/orchestrator/recovery"
	"github.com/trajlab/traj/orchestrator/task"
	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/sandbox/agent"
	"github.com/trajlab/traj/sandbox/harness"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store/location"
)

// RunCmd records one trajectory: the agent works on a task until the part
// budget, the timeout, a solution or an error, and every part lands in the
// trace. Exit status: 0 when the trajectory was recorded (any end reason
// but the ones below), 3 for agent_error or envoi_error, 4 when it was
// recorded but objects could not be uploaded to the store (`traj sync`
// uploads them later), 130 when interrupted, 1 when it could not be set up
// or recorded, 2 for bad flags.
type RunCmd struct {
	// Task has no kong default: "" is "not given", so --resume and --fork
	// keep the recorded task (a new run gets c-compiler, defaultTask).
	Task     string `help:"Built-in task name or a task folder (task.json + prompt.md). Default c-compiler; with --resume or --fork: the recorded one (a fork refuses another)."`
	Model    string `help:"Model as PROVIDER/MODEL (e.g. scripted/demo, anthropic/claude-sonnet-4-5). Required unless --resume."`
	MaxParts int    `name:"max-parts" help:"Part budget: the run never records more parts. Required unless --resume (then: a larger budget)."`
	Resume   string `help:"Continue trajectory REF (its id, or its folder on this machine) whose run died or ended early: same id and trace, parts continue, a continuation prompt; task, model and budget as recorded unless given." placeholder:"REF"`
	// Timeout has no kong default: zero lets --resume keep the recorded
	// timeout; a new run gets 4 h (orchestrator.Options).
	Timeout           time.Duration `help:"Time the agent may work (default 4h; with --resume: the recorded one)."`
	StallTimeout      time.Duration `name:"stall-timeout" help:"Stall watchdog: a turn with no new part for this long is aborted and sent again once; a second stall ends the run agent_error (default 30m)."`
	TrajectoryID      string        `name:"trajectory-id" help:"Trajectory id (default: <task>-<time>-<random>)."`
	Store             string        `help:"Artifact store: a folder, file:///abs/path or s3://bucket/prefix (default ./runs)." env:"TRAJ_STORE"`
	WorkDir           string        `name:"work-dir" help:"Local folder for trajectory folders and sandboxes (default: the store folder if local, else ./runs)." env:"TRAJ_WORK_DIR" type:"path"`
	Agent             string        `help:"Harness: ${harnesses} (default ${default_harness}; with --resume: the recorded one)."`
	AgentBin          string        `name:"agent-bin" help:"The harness's executable (default: $TRAJ_OPENCODE_BIN, $TRAJ_CLAUDE_BIN or $TRAJ_CODEX_BIN for that harness, else as make setup installs it)."`
	Script            string        `help:"Serve this scripted model (JSON Lines) in-process; use with --model scripted/<name>." type:"existingfile"`
	BaseURL           string        `name:"base-url" help:"The provider's API base URL, e.g. http://127.0.0.1:8000/v1 (default: the public API of anthropic/… and openai/… models). The harness reaches it through traj's model gateway."`
	APIKeyEnv         []string      `name:"api-key-env" help:"Environment variable holding the provider's API key. Only traj's model gateway reads it; the harness gets a per-trajectory token."`
	MaxTokens         int64         `name:"max-tokens" help:"Token budget over all model calls (input, output, reasoning, cache); the run ends with token_limit."`
	MaxCost           float64       `name:"max-cost" help:"Cost budget in dollars over all model calls (needs --price); the run ends with cost_limit."`
	Price             string        `help:"Prices in dollars per million tokens: INPUT,OUTPUT[,CACHE_READ[,CACHE_WRITE]] (cost in the trace and for --max-cost)." placeholder:"IN,OUT"`
	TestsDir          string        `name:"tests-dir" help:"Fixtures root holding c-testsuite/, wacct/ and torture/." env:"TRAJ_TESTS_DIR" type:"path"`
	Sandbox           string        `help:"Where the agent runs: bwrap, container (podman or docker, image from make image) or local (NO isolation). Default: bwrap where it works, else container; with --resume: the recorded one; with --fork: the source's unless it was local (local only when named)." enum:"bwrap,container,local," default:""`
	CPUs              float64       `name:"cpus" help:"CPU time the sandbox may use, in CPUs (default: no limit)."`
	Memory            string        `help:"Memory limit for the whole sandbox, e.g. 4g or 512m; 'none' for no limit (default 4g)."`
	Pids              int           `help:"Most processes and threads at once in the sandbox (default 4096)."`
	Disk              string        `help:"Disk cap of what the agent's sandbox writes (workspace, harness state), e.g. 4g or 512m: a filesystem image holding them (needs root), so the agent's writes beyond it fail with ENOSPC and never fill the disk of the store; 'off' for none (default 4g where traj runs as root and the sandbox is not local, else none; with --resume: the recorded one)."`
	Network           string        `help:"Network policy: none, gateways (only what traj serves: the model endpoint) or full (the host's). Default: gateways when the model endpoint is on this machine, else full." enum:"none,gateways,full," default:""`
	PassEnv           []string      `name:"pass-env" help:"Pass this variable from your environment into the sandbox (repeatable). The agent gets only LANG, LC_*, TERM, TZ, the --api-key-env variables and these." placeholder:"NAME"`
	Fork              string        `help:"Branch trajectory REF at --at-part: a new trajectory reruns its parts 1..P from its recorded model calls (same harness and version, task, sandbox), then continues live with --model/--script (default: the source's model), --prompt opening the next turn. Budget: --max-parts counts every part, inherited ones too (default: the source's)." placeholder:"REF"`
	AtPart            int           `name:"at-part" help:"The fork point: the last part of the source the fork inherits (rounded up to the end of the model response that produced it)." placeholder:"P"`
	Prompt            string        `help:"With --fork: a message that opens the first turn after the fork point (a hint)."`
	AllowOtherVersion bool          `name:"allow-other-version" help:"With --fork: run the installed harness even when its version is not the one the source recorded."`
	JSON              bool          `help:"Print progress as JSON lines on stdout (see orchestrator/progress)."`
	Quiet             bool          `help:"No progress output; only warnings, errors and the final summary."`
}

// Run wires flags to orchestrator.Run.
func (c *RunCmd) Run(ctx context.Context, g *Globals) error {
	if c.Fork != "" && c.Resume != "" {
		return &exitError{2, errors.New("--fork and --resume do not go together")}
	}
	if (c.AtPart != 0 || c.Prompt != "" || c.AllowOtherVersion) && c.Fork == "" {
		return &exitError{2, errors.New("--at-part, --prompt and --allow-other-version go with --fork REF")}
	}
	if c.Fork != "" && c.AtPart <= 0 {
		return &exitError{2, errors.New("--fork needs --at-part P, the last part of the source to inherit (> 0)")}
	}
	if c.Resume == "" && c.Fork == "" && c.Model == "" {
		return &exitError{2, errors.New("--model is required (or --resume ID)")}
	}
	if c.Resume == "" && c.Fork == "" && c.MaxParts == 0 {
		return &exitError{2, errors.New("--max-parts is required: the part budget, a number > 0 (the run never records more parts)")}
	}
	if c.MaxParts < 0 {
		return &exitError{2, errors.New("--max-parts must be > 0")}
	}
	if c.Resume != "" {
		id, work, err := folder.SplitRef(c.Resume, c.WorkDir)
		if err != nil {
			return &exitError{2, err}
		}
		c.Resume, c.WorkDir = id, work
	}
	start := orchestrator.Run
	if c.Resume != "" {
		start = func(ctx context.Context, o orchestrator.Options) (*orchestrator.Result, error) {
			return recovery.Resume(ctx, c.Resume, o, nil)
		}
	}
	mem, err := parseSize(c.Memory)
	if err != nil {
		return &exitError{2, fmt.Errorf("--memory: %w", err)}
	}
	diskCap, err := parseSize(c.Disk)
	if err != nil {
		return &exitError{2, fmt.Errorf("--disk: %w", err)}
	}
	diskOptional := false
	if c.Disk == "" && c.Resume == "" && c.Fork == "" { // resume and fork: the recorded cap
		diskCap, diskOptional = orchestrator.DefaultDisk, true
	}
	if c.CPUs < 0 || c.Pids < 0 {
		return &exitError{2, errors.New("--cpus and --pids must not be negative")}
	}
	price, err := parsePrice(c.Price)
	if err != nil {
		return &exitError{2, err}
	}
	if c.Task == "" && c.Resume == "" && c.Fork == "" {
		c.Task = defaultTask
	}
	opts := orchestrator.Options{
		Task: c.Task, Model: c.Model, MaxParts: c.MaxParts, Timeout: c.Timeout, StallTimeout: c.StallTimeout,
		TrajectoryID: c.TrajectoryID, Store: c.Store, WorkDir: c.WorkDir, Script: c.Script,
		BaseURL: c.BaseURL, APIKeyEnvs: c.APIKeyEnv, TestsDir: c.TestsDir,
		Sandbox: launch.SandboxOptions{Provider: c.Sandbox, Network: sandbox.Network(c.Network), Env: c.PassEnv,
			Limits: sandbox.Limits{CPUs: c.CPUs, Memory: mem, Processes: c.Pids}, Disk: diskCap, DiskOptional: diskOptional},
		Agent: c.Agent, AgentBin: c.AgentBin, MaxTokens: c.MaxTokens, MaxCost: c.MaxCost, Price: price,
		Logger: g.Logger,
	}
	var fork *rerunSource
	if c.Fork != "" {
		if fork, err = c.forkOptions(ctx, g, &opts); err != nil {
			return err
		}
	}
	var sinks progress.Multi
	var line *progress.Line
	// Below the status line (and with --quiet) only warnings are logged:
	// the line is the progress.
	quietLog := func(w io.Writer) *slog.Logger {
		return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: max(g.LogLevel, slog.LevelWarn)}))
	}
	switch {
	case c.JSON:
		sinks = append(sinks, progress.NewJSON(g.Stdout))
	case c.Quiet:
		opts.Logger = quietLog(g.Stderr)
	case isTerminal(g.Stderr):
		line = progress.NewLine(g.Stderr)
		sinks = append(sinks, line)
		opts.Logger = quietLog(line.LogWriter())
	default:
		sinks = append(sinks, progress.Log{L: g.Logger})
	}
	opts.Reporter = sinks
	res, err := start(ctx, opts)
	if line != nil {
		line.Close()
	}
	if res == nil {
		return err
	}
	if res.End.Reason != "" {
		if l, lerr := folder.Locate(ctx, folder.LocateOptions{ID: res.TrajectoryID, Store: c.Store, WorkDir: c.WorkDir, Logger: g.Logger}); lerr == nil {
			saveSummary(ctx, g.Logger, l.Store, res.TrajectoryID)
		}
	}
	if !c.JSON {
		printSummary(g.Stdout, res)
		printNext(g.Stdout, res, c.locateArgs(res.TrajectoryID))
	}
	if fork != nil && err == nil {
		// The inherited parts must be the source's: say so, or not.
		at := opts.Rerun.ForkAt
		rep, cerr := compareRerun(ctx, fork, res.TrajectoryID, location.Choose(c.Store, os.Getenv), at)
		if cerr != nil {
			return cerr
		}
		fmt.Fprintf(g.Stdout, "  forked from:   %s at part %d; inherited parts %s\n", fork.ref.ID, at, rep.Summary())
		if rep.Reproduced != at {
			printRerun(g.Stdout, rep)
			return &exitError{3, fmt.Errorf("the fork did not reproduce its inherited parts 1..%d of %s", at, fork.ref.ID)}
		}
	}
	if err != nil {
		return err
	}
	return runExit(res, c.locateArgs(res.TrajectoryID))
}

// runExit is a recorded run's exit status (see RunCmd): interrupted
// first, then uploads left pending, then an agent or environment error.
func runExit(res *orchestrator.Result, ref string) error {
	switch {
	case res.End.Reason == trace.EndInterrupted:
		return &exitError{130, nil}
	case len(res.NotUploaded) > 0:
		return &exitError{4, fmt.Errorf("%d objects are only in the trajectory folder: upload them with `traj sync %s`",
			len(res.NotUploaded), ref)}
	case res.End.Reason == trace.EndAgentError || res.End.Reason == trace.EndEnvoiError:
		return &exitError{3, nil}
	}
	return nil
}

// locateArgs names trajectory id for a later command as this run was
// given it: the id, plus --store and --work-dir when they were flags.
func (c *RunCmd) locateArgs(id string) string {
	args := trace.ShellWord(id)
	if c.Store != "" && c.Store != os.Getenv("TRAJ_STORE") {
		args += " --store " + trace.ShellWord(c.Store)
	}
	if c.WorkDir != "" && c.WorkDir != os.Getenv("TRAJ_WORK_DIR") {
		args += " --work-dir " + trace.ShellWord(c.WorkDir)
	}
	return args
}

// printNext says what to do after a run that can go on or whose uploads
// are pending.
func printNext(w io.Writer, res *orchestrator.Result, ref string) {
	switch res.End.Reason {
	case trace.EndInterrupted, trace.EndTimeout, trace.EndPartLimit, trace.EndAgentError:
		fmt.Fprintf(w, "  continue:      traj run --resume %s", ref)
		if res.End.Reason == trace.EndPartLimit {
			fmt.Fprint(w, " --max-parts N (a larger budget)")
		}
		fmt.Fprintln(w)
	}
	if len(res.NotUploaded) > 0 {
		fmt.Fprintf(w, "  upload later:  traj sync %s\n", ref)
	}
}

// parseSize reads a memory or disk size: a number of bytes with an
// optional k, m, g or t suffix (binary units; 4g, 4GiB), "" for the default
// (0) and "none", "off" or "0" for no limit (-1).
func parseSize(s string) (int64, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	switch s {
	case "":
		return 0, nil
	case "none", "off", "0":
		return -1, nil
	}
	mult := int64(1)
	if i := strings.IndexAny(s, "kmgt"); i >= 0 {
		mult = map[byte]int64{'k': 1 << 10, 'm': 1 << 20, 'g': 1 << 30, 't': 1 << 40}[s[i]]
		if rest := strings.TrimSuffix(s[i+1:], "b"); rest != "" && rest != "i" && rest != "ib" {
			return 0, fmt.Errorf("%q: want a size like 4g or 512m", s)
		}
		s = s[:i]
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q: want a size like 4g or 512m", s)
	}
	return int64(n * float64(mult)), nil
}

func printSummary(w io.Writer, res *orchestrator.Result) {
	e := res.End
	fmt.Fprintf(w, "trajectory %s: %s after %d parts in %d turns", res.TrajectoryID, e.Reason, e.TotalParts, e.TotalTurns)
	if e.Detail != "" {
		fmt.Fprintf(w, " (%s)", e.Detail)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  folder:        %s\n", res.Dir)
	fmt.Fprintf(w, "  final commit:  %s\n", e.FinalGitCommit)
	if e.Tokens != nil {
		fmt.Fprintf(w, "  tokens:        %d", e.Tokens.Total())
		if e.Cost != nil && *e.Cost > 0 {
			fmt.Fprintf(w, " (cost %.4f)", *e.Cost)
		}
		fmt.Fprintln(w)
	}
	for _, k := range []string{trace.ArtifactTrace, trace.ArtifactBundle} {
		if u := res.Artifacts[k]; u != "" {
			fmt.Fprintf(w, "  %-14s %s\n", k+":", u)
		}
	}
	if len(res.NotUploaded) > 0 {
		fmt.Fprintf(w, "  not uploaded:  %s\n", strings.Join(res.NotUploaded, ", "))
	}
}

// parsePrice reads --price: IN,OUT[,CACHE_READ[,CACHE_WRITE]] in dollars
// per million tokens ("" is no price).
func parsePrice(s string) (*agent.Price, error) {
	if s == "" {
		return nil, nil
	}
	fields := strings.Split(s, ",")
	if len(fields) < 2 || len(fields) > 4 {
		return nil, fmt.Errorf("--price %q: want INPUT,OUTPUT[,CACHE_READ[,CACHE_WRITE]] in dollars per million tokens", s)
	}
	var v [4]float64
	for i, f := range fields {
		x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || x < 0 {
			return nil, fmt.Errorf("--price %q: %q is not a price (dollars per million tokens, ≥ 0)", s, f)
		}
		v[i] = x
	}
	return &agent.Price{Input: v[0], Output: v[1], CacheRead: v[2], CacheWrite: v[3]}, nil
}

// forkOptions makes opts a fork of c.Fork at c.AtPart: the source's
// harness, task, sandbox and budgets (what the flags do not set), its
// model calls to play up to the fork point, its lineage.
func (c *RunCmd) forkOptions(ctx context.Context, g *Globals, opts *orchestrator.Options) (*rerunSource, error) {
	storeURL := location.Choose(c.Store, os.Getenv)
	src, err := openRerunSource(ctx, c.Fork, storeURL)
	if err != nil {
		return nil, err
	}
	if c.AtPart > src.parts {
		return nil, &exitError{2, fmt.Errorf("--at-part %d: %s has %d parts", c.AtPart, src.ref.ID, src.parts)}
	}
	base, err := src.options(c.Fork, c.Store, storeURL, c.Sandbox)
	if err != nil {
		return nil, err
	}
	at, err := src.forkPoint(c.AtPart)
	if err != nil {
		return nil, err
	}
	if at != c.AtPart {
		fmt.Fprintf(g.Stdout, "fork: part %d is not where a model response of %s ended; the fork inherits parts 1..%d\n", c.AtPart, src.ref.ID, at)
	}
	if c.Agent != "" && c.Agent != base.Agent {
		return nil, &exitError{2, fmt.Errorf("--agent %s: the fork reruns %s's harness, %s", c.Agent, src.ref.ID, base.Agent)}
	}
	opts.Agent = base.Agent
	if c.Task != "" {
		tk, err := task.Load(c.Task)
		if err != nil {
			return nil, &exitError{2, fmt.Errorf("--task: %w", err)}
		}
		if strings.TrimPrefix(tk.Source, "builtin:") != base.Task {
			return nil, &exitError{2, fmt.Errorf("--task %s: the fork reruns %s's task, %s (a fork cannot change the task)", c.Task, src.ref.ID, base.Task)}
		}
	}
	opts.Task = base.Task
	if opts.Model == "" {
		opts.Model = base.Model
	}
	// What resume inherits (orchestrator/recovery's remembered): the
	// source's script or base URL when the model is the source's, its key
	// variables and harness binary. An inherited script goes on from
	// where the source was at the fork point.
	if st := src.state; st != nil {
		if opts.Model == base.Model && opts.Script == "" && opts.BaseURL == "" {
			opts.Script, opts.BaseURL = st.Script, st.BaseURL
			if opts.Script != "" {
				if _, err := os.Stat(opts.Script); err != nil {
					return nil, &exitError{2, fmt.Errorf("%s was recorded with the script %s, which is not on this machine: give --script (%w)", src.ref.ID, opts.Script, err)}
				}
				base.Rerun.ContinueScript = true
			}
		}
		if len(opts.APIKeyEnvs) == 0 {
			opts.APIKeyEnvs = st.APIKeyEnvs
		}
		if opts.AgentBin == "" && st.HarnessBin != "" && cmp.Or(st.Agent, harness.Default) == base.Agent {
			if _, err := os.Stat(st.HarnessBin); err == nil {
				opts.AgentBin = st.HarnessBin
			}
		}
	}
	if opts.MaxParts == 0 {
		opts.MaxParts = max(at+1, src.maxParts())
	}
	if opts.Timeout == 0 {
		opts.Timeout = base.Timeout
	}
	if opts.TestsDir == "" {
		opts.TestsDir = base.TestsDir
	}
	opts.Sandbox = opts.Sandbox.Or(base.Sandbox)
	opts.Sandbox.Provider = base.Sandbox.Provider // --sandbox, else the source's unless local
	if opts.MaxTokens == 0 && opts.MaxCost == 0 && opts.Price == nil && opts.Model == base.Model {
		opts.MaxTokens, opts.MaxCost, opts.Price = base.MaxTokens, base.MaxCost, base.Price
	}
	if opts.TrajectoryID == "" {
		opts.TrajectoryID = fmt.Sprintf("%s-fork%d-%s", src.ref.ID, at, time.Now().UTC().Format("20060102-150405"))
	}
	base.Rerun.ForkAt, base.Rerun.Prompt, base.Rerun.AllowOtherVersion = at, c.Prompt, c.AllowOtherVersion
	opts.Rerun = base.Rerun
	return src, nil
}

// defaultTask is the task of a new run that names none.
const defaultTask = "c-compiler"
