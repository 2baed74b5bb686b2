package record

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/trajlab/traj/orchestrator"
	"github.com/trajlab/traj/orchestrator/engine"
	"github.com/trajlab/traj/orchestrator/launch"
	"github.com/trajlab/traj/replay/rerun"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/location"
	"github.com/trajlab/traj/trace/store/ref"
)

// RerunRequest is `traj replay rerun`: a new trajectory with the source's
// harness (name and version), task, environment and sandbox, its model
// calls answered from the source's record, never by a provider.
type RerunRequest struct {
	// Ref names the source: an id in the store, a trajectory folder, an
	// agent_trace.json path or an s3://…/trajectories/<id> URL.
	Ref string
	// UntilPart reruns the source's parts 1..UntilPart only (0: all).
	UntilPart int
	// Store is the source's (for a bare id) and the rerun's store, WorkDir
	// the rerun's local folder, as for traj run.
	Store, WorkDir string
	// TrajectoryID is the rerun's id (default <source>-rerun-<time>).
	TrajectoryID      string
	AllowOtherVersion bool
	// AgentBin, TestsDir, Timeout and Sandbox (a provider) are given
	// over the source's (orchestrator.Inherit).
	AgentBin, TestsDir string
	Timeout            time.Duration
	Sandbox            string
	// Output, when set, also receives the comparison (rerun.json).
	Output   string
	Logger   *slog.Logger
	Reporter engine.Reporter
	// Notes receives what the rerun says before it starts; nil: nowhere.
	Notes io.Writer
}

// RerunResult is the rerun and its comparison with the source.
type RerunResult struct {
	*orchestrator.Result
	// Report is the comparison (nil when the rerun failed); it is saved as
	// the rerun's rerun.json in the store.
	Report *rerun.Report
}

// rerunOptions are the run options of r's rerun of src's parts 1..until:
// the source's (orchestrator.Inherit, its model calls played), but for
// the few r gives.
func (src *Source) rerunOptions(r RerunRequest, until int) (orchestrator.Options, error) {
	rec, rr, err := src.Recorded(r.Ref, r.Store)
	if err != nil {
		return rec, err
	}
	given := orchestrator.Options{MaxParts: until, AgentBin: r.AgentBin, Timeout: r.Timeout, TestsDir: r.TestsDir,
		Sandbox: launch.SandboxOptions{Provider: r.Sandbox}}
	opts, err := orchestrator.Inherit(given, nil, rec, orchestrator.Inheritance{Untrusted: true, Playback: true})
	if err != nil {
		return opts, err
	}
	opts.Defaults()
	opts.WorkDir, opts.Logger, opts.Reporter = r.WorkDir, r.Logger, r.Reporter
	opts.TrajectoryID = r.TrajectoryID
	if opts.TrajectoryID == "" {
		opts.TrajectoryID = fmt.Sprintf("%s-rerun-%s", src.Ref.ID, time.Now().UTC().Format("20060102-150405"))
	}
	rr.Of.UntilPart, rr.AllowOtherVersion = r.UntilPart, r.AllowOtherVersion
	opts.Rerun = rr
	return opts, nil
}

// Rerun re-executes r's source and compares the rerun with it.
func Rerun(ctx context.Context, r RerunRequest) (*RerunResult, error) {
	if r.UntilPart < 0 {
		return nil, bad("--until-part must be > 0")
	}
	if r.Logger == nil {
		r.Logger = slog.New(slog.DiscardHandler)
	}
	storeURL := location.Choose(r.Store, os.Getenv)
	src, err := OpenSource(ctx, r.Ref, storeURL)
	if err != nil {
		return nil, err
	}
	until := src.Parts
	if r.UntilPart > 0 {
		if r.UntilPart > src.Parts {
			return nil, bad("--until-part %d: the source has %d parts", r.UntilPart, src.Parts)
		}
		until = r.UntilPart
	}
	if until == 0 {
		return nil, fmt.Errorf("rerun %s: the source recorded no part", src.Ref.ID)
	}
	opts, err := src.rerunOptions(r, until)
	if err != nil {
		return nil, err
	}
	opts.Store = storeURL
	if r.Notes != nil {
		fmt.Fprintf(r.Notes, "rerun of %s (%s, %d parts) as %s: model calls answered from its %s\n",
			src.Ref.ID, src.Header.Agent, until, opts.TrajectoryID, store.ModelCallsName)
	}
	res, err := orchestrator.Run(ctx, opts)
	if res == nil {
		return nil, err
	}
	out := &RerunResult{Result: res}
	if err != nil {
		return out, err
	}
	if out.Report, err = Compare(ctx, src, res.TrajectoryID, storeURL, r.UntilPart); err != nil {
		return out, err
	}
	b, _ := json.MarshalIndent(out.Report, "", "  ")
	b = append(b, '\n')
	if rt, err := ref.Resolve(ctx, res.TrajectoryID, storeURL, ref.Options{}); err == nil {
		if err := rt.Store.Save(ctx, store.RerunKey(res.TrajectoryID), store.Bytes(b)); err != nil {
			r.Logger.Warn("rerun comparison not saved in the store", "err", err)
		}
	}
	if r.Output != "" {
		if err := os.WriteFile(r.Output, b, 0o644); err != nil {
			return out, fmt.Errorf("write %s: %w", r.Output, err)
		}
	}
	return out, nil
}
