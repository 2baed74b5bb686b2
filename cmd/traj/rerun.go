package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/trajlab/traj/orchestrator"
	"github.com/trajlab/traj/orchestrator/folder"
	"github.com/trajlab/traj/orchestrator/progress"
	"github.com/trajlab/traj/replay/githistory"
	"github.com/trajlab/traj/replay/rerun"
	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/sandbox/harness"
	"github.com/trajlab/traj/sandbox/playback"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/location"
	"github.com/trajlab/traj/trace/store/ref"
)

// ReplayRerunCmd re-executes a recorded trajectory: a new trajectory with
// the same harness (name and version), task, environment and sandbox,
// whose model calls are answered from the source's recorded responses,
// never by a provider; then compares it with its source. Exit status: 0
// when every part was reproduced, 3 when the rerun differs, 2 for bad
// flags, 1 when it could not run.
type ReplayRerunCmd struct {
	Ref               string        `arg:"" name:"ref" help:"The trajectory to rerun: an id in the store, a trajectory folder, an agent_trace.json path or an s3://…/trajectories/<id> URL."`
	UntilPart         int           `name:"until-part" help:"Rerun the source's parts 1..P only (default: all)." placeholder:"P"`
	Store             string        `help:"Store of the source (for a bare id) and of the rerun: a folder, file:///path or s3://bucket/prefix (default ./runs)." env:"TRAJ_STORE"`
	WorkDir           string        `name:"work-dir" help:"Local folder for the rerun's trajectory folder and sandbox (default: the store folder if local, else ./runs)." env:"TRAJ_WORK_DIR" type:"path"`
	TrajectoryID      string        `name:"trajectory-id" help:"The rerun's id (default: <source>-rerun-<time>)." placeholder:"NEW"`
	AllowOtherVersion bool          `name:"allow-other-version" help:"Rerun with the installed harness even when its version is not the one the source recorded."`
	AgentBin          string        `name:"agent-bin" help:"The harness's executable (default: as for traj run)."`
	TestsDir          string        `name:"tests-dir" help:"Fixtures root (default: $TRAJ_TESTS_DIR, else the source's)." env:"TRAJ_TESTS_DIR" type:"path"`
	Timeout           time.Duration `help:"Time the agent may work (default: the source's)."`
	Sandbox           string        `help:"Where the rerun's agent runs: bwrap, container or local (NO isolation). Default: the source's provider unless it was local, else bwrap where it works, else container; local only when named here." enum:"bwrap,container,local," default:""`
	Quiet             bool          `help:"Print only the summary and warnings."`
	Output            string        `type:"path" help:"Also write the comparison (rerun.json) to this file."`
}

// rerunSource is what a rerun needs of its source, as local files.
type rerunSource struct {
	ref    *ref.Trajectory
	trace  string
	calls  string
	state  *folder.RunState
	header trace.Header
	parts  int
}

func (c *ReplayRerunCmd) Run(ctx context.Context, g *Globals) error {
	if c.UntilPart < 0 {
		return &exitError{2, errors.New("--until-part must be > 0")}
	}
	storeURL := location.Choose(c.Store, os.Getenv)
	src, err := openRerunSource(ctx, c.Ref, storeURL)
	if err != nil {
		return err
	}
	until := src.parts
	if c.UntilPart > 0 {
		if c.UntilPart > src.parts {
			return &exitError{2, fmt.Errorf("--until-part %d: the source has %d parts", c.UntilPart, src.parts)}
		}
		until = c.UntilPart
	}
	if until == 0 {
		return fmt.Errorf("rerun %s: the source recorded no part", src.ref.ID)
	}
	newID := c.TrajectoryID
	if newID == "" {
		newID = fmt.Sprintf("%s-rerun-%s", src.ref.ID, time.Now().UTC().Format("20060102-150405"))
	}
	opts, err := src.options(c.Ref, c.Store, storeURL, c.Sandbox)
	if err != nil {
		return err
	}
	opts.MaxParts, opts.TrajectoryID, opts.WorkDir, opts.AgentBin, opts.Logger = until, newID, c.WorkDir, c.AgentBin, g.Logger
	if c.Timeout > 0 {
		opts.Timeout = c.Timeout
	}
	if c.TestsDir != "" {
		opts.TestsDir = c.TestsDir
	}
	opts.Rerun.Of.UntilPart = c.UntilPart
	opts.Rerun.AllowOtherVersion = c.AllowOtherVersion
	if c.Quiet {
		opts.Logger = slog.New(slog.NewTextHandler(g.Stderr, &slog.HandlerOptions{Level: max(g.LogLevel, slog.LevelWarn)}))
	} else {
		opts.Reporter = progress.Log{L: g.Logger}
	}
	fmt.Fprintf(g.Stdout, "rerun of %s (%s, %d parts) as %s: model calls answered from its %s\n",
		src.ref.ID, src.header.Agent, until, newID, store.ModelCallsName)
	res, err := orchestrator.Run(ctx, opts)
	if res == nil {
		return err
	}
	printSummary(g.Stdout, res)
	if err != nil {
		return err
	}
	rep, err := compareRerun(ctx, src, newID, storeURL, c.UntilPart)
	if err != nil {
		return err
	}
	b, _ := json.MarshalIndent(rep, "", "  ")
	b = append(b, '\n')
	if rt, err := ref.Resolve(ctx, newID, storeURL, ref.Options{}); err == nil {
		if err := rt.Store.Save(ctx, store.RerunKey(newID), store.Bytes(b)); err != nil {
			g.Logger.Warn("rerun comparison not saved in the store", "err", err)
		}
	}
	if c.Output != "" {
		if err := os.WriteFile(c.Output, b, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", c.Output, err)
		}
	}
	printRerun(g.Stdout, rep)
	if rep.Reproduced != rep.SourceParts {
		return &exitError{3, nil}
	}
	return nil
}

// options are a run as the source was recorded: its harness (name and
// version), task, model, budgets, sandbox and time limit (from its
// run.json when it has one), its model calls to play, and its lineage.
// r and storeFlag are how the user named it; sandboxFlag is --sandbox
// (see sandboxProvider).
func (src *rerunSource) options(r, storeFlag, storeURL, sandboxFlag string) (orchestrator.Options, error) {
	h, id, ok := harness.Recorded(src.header.Agent)
	if !ok {
		return orchestrator.Options{}, fmt.Errorf("%s: traj does not know its harness %q", src.ref.ID, src.header.Agent)
	}
	lineage := trace.Lineage{TrajectoryID: src.ref.ID, Agent: src.header.Agent}
	if storeFlag == "" && location.Scheme(r) == "s3" {
		lineage.Store = src.ref.Store.URI("")
	}
	opts := orchestrator.Options{Task: src.header.Task, Model: src.header.AgentModel, Store: storeURL, Agent: h.Name,
		Rerun: &orchestrator.Rerun{Of: lineage, Calls: src.calls, AgentVersion: id.Version, SourceModel: src.header.AgentModel}}
	if st := src.state; st != nil {
		opts.Task = strings.TrimPrefix(st.TaskSource, "builtin:")
		opts.Timeout = time.Duration(st.TimeoutSec) * time.Second
		opts.TestsDir = st.TestsDir
		opts.MaxTokens, opts.MaxCost, opts.Price = st.MaxTokens, st.MaxCost, st.Price
		if len(st.Sandbox) > 0 {
			if err := json.Unmarshal(st.Sandbox, &opts.Sandbox); err != nil {
				return opts, fmt.Errorf("%s: its run.json's sandbox: %w", src.ref.ID, err)
			}
		}
	}
	opts.Sandbox.Provider = sandboxProvider(sandboxFlag, opts.Sandbox.Provider)
	if opts.Sandbox.Disk == 0 {
		opts.Sandbox.Disk, opts.Sandbox.DiskOptional = orchestrator.DefaultDisk, true
	}
	if env := os.Getenv("TRAJ_TESTS_DIR"); env != "" {
		opts.TestsDir = env
	}
	return opts, nil
}

// sandboxProvider is the provider of a rerun or fork: --sandbox when
// given; else the source's recorded provider unless that is local, else
// "" (bwrap where it works, else container). A source's run.json is
// editable and a local source ran unisolated: neither may make traj run
// an agent without isolation unless the user names local.
func sandboxProvider(flag, recorded string) string {
	if flag != "" {
		return flag
	}
	if recorded == sandbox.ProviderLocal {
		return ""
	}
	return recorded
}

// maxParts is the source's part budget (its parts when run.json is
// missing).
func (src *rerunSource) maxParts() int {
	if src.state != nil && src.state.MaxParts > 0 {
		return src.state.MaxParts
	}
	return src.parts
}

// forkPoint is where a fork at part p of the source branches: p itself
// when a model call of the source started right after it, else the last
// part of the response that produced p (a response is not split). The
// source's calls name parts_before; past the last call, the last part.
func (src *rerunSource) forkPoint(p int) (int, error) {
	calls, err := playback.Load(src.calls)
	if err != nil {
		return 0, err
	}
	at := src.parts
	for _, c := range calls {
		if c.PartsBefore != nil && *c.PartsBefore >= p && *c.PartsBefore < at {
			at = *c.PartsBefore
		}
	}
	return at, nil
}

// openRerunSource finds the source's trace, model-call record and
// run.json (a store keeps it among the logs, a trajectory folder at its
// top; a trajectory without one reruns with the defaults).
func openRerunSource(ctx context.Context, r, storeURL string) (*rerunSource, error) {
	rt, err := ref.Resolve(ctx, r, storeURL, ref.Options{})
	if err != nil {
		return nil, &exitError{2, err}
	}
	src := &rerunSource{ref: rt}
	if src.trace, _, err = rt.TracePath(ctx); err != nil {
		return nil, fmt.Errorf("rerun %s: %w", rt.ID, err)
	}
	if src.calls, err = rt.Fetch(ctx, rt.Prefix+store.ModelCallsName); err != nil {
		return nil, fmt.Errorf("rerun %s: its model calls (%s) are what a rerun plays: %w", rt.ID, store.ModelCallsName, err)
	}
	for _, k := range []string{rt.Prefix + store.LogsDir + store.RunStateName, rt.Prefix + store.RunStateName} {
		p, err := rt.Fetch(ctx, k)
		if err != nil {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var st folder.RunState
		if err := json.Unmarshal(b, &st); err != nil {
			return nil, fmt.Errorf("rerun %s: %s: %w", rt.ID, store.RunStateName, err)
		}
		src.state = &st
		break
	}
	f, err := os.Open(src.trace)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	err = trace.Scan(f, trace.Visitor{
		OnHeader: func(h *trace.Header) error { src.header = *h; return nil },
		OnPart:   func(int, *trace.Part) error { src.parts++; return nil },
	})
	if err != nil {
		return nil, fmt.Errorf("rerun %s: read trace: %w", rt.ID, err)
	}
	return src, nil
}

// compareRerun compares the rerun newID with its source.
func compareRerun(ctx context.Context, src *rerunSource, newID, storeURL string, until int) (*rerun.Report, error) {
	rt, err := ref.Resolve(ctx, newID, storeURL, ref.Options{})
	if err != nil {
		return nil, err
	}
	side := func(t *ref.Trajectory, tracePath string) (rerun.Side, error) {
		s := rerun.Side{ID: t.ID, Trace: tracePath}
		var err error
		if s.Bundles, err = t.BundlePaths(ctx); err != nil {
			return s, err
		}
		s.Calls, _ = t.Fetch(ctx, t.Prefix+store.ModelCallsName)
		return s, nil
	}
	a, err := side(src.ref, src.trace)
	if err != nil {
		return nil, err
	}
	tp, _, err := rt.TracePath(ctx)
	if err != nil {
		return nil, err
	}
	b, err := side(rt, tp)
	if err != nil {
		return nil, err
	}
	a.Calls = src.calls
	return rerun.Compare(ctx, a, b, until, func(ctx context.Context, bundles []string) (rerun.Trees, func(), error) {
		h, err := githistory.Open(ctx, bundles...)
		if err != nil {
			return nil, nil, err
		}
		return h, func() { _ = h.Close() }, nil
	})
}

// printRerun is the comparison for a reader.
func printRerun(w io.Writer, r *rerun.Report) {
	fmt.Fprintf(w, "\n%s\n", r.Summary())
	fmt.Fprintf(w, "  parts:        source %d, rerun %d; trees compared at %d model-response ends\n", r.SourceParts, r.RerunParts, r.Boundaries)
	if d := r.FirstPart; d != nil {
		fmt.Fprintf(w, "  first part:   %d differs in %s\n    source: %s\n    rerun:  %s\n", d.Part, d.Field, d.Source, d.Rerun)
	} else {
		fmt.Fprintln(w, "  first part:   none differs")
	}
	if d := r.FirstTree; d != nil {
		fmt.Fprintf(w, "  first tree:   part %d (source %s, rerun %s)\n", d.Part, orNone(d.Source), orNone(d.Rerun))
	} else {
		fmt.Fprintln(w, "  first tree:   none differs")
	}
	if r.FirstReordered > 0 {
		fmt.Fprintf(w, "  reordered:    from part %d a model response's parts came in another order, the same parts (parallel tool calls)\n", r.FirstReordered)
	}
	if d := r.FirstCheckpoint; d != nil {
		fmt.Fprintf(w, "  first checkpoint: part %d (source tree %s, rerun tree %s)\n", d.Part, orNone(d.Source), orNone(d.Rerun))
	} else {
		fmt.Fprintln(w, "  first checkpoint: none differs")
	}
	if d := r.FirstRequest; d != nil {
		fmt.Fprintf(w, "  first request: %s call %d of model %q (source seq %d, rerun seq %d): %s\n", d.Path, d.Call, d.Model, d.SourceSeq, d.RerunSeq, d.Why)
	} else {
		fmt.Fprintln(w, "  first request: none differs")
	}
	fmt.Fprintf(w, "  ends:         source %s, rerun %s\n", orNone(r.SourceEnd), orNone(r.RerunEnd))
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
