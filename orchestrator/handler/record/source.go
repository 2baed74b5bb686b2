package record

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/trajlab/traj/orchestrator"
	"github.com/trajlab/traj/orchestrator/folder"
	"github.com/trajlab/traj/replay/githistory"
	"github.com/trajlab/traj/replay/rerun"
	"github.com/trajlab/traj/replay/source"
	"github.com/trajlab/traj/sandbox/gateway/model/calls"
	"github.com/trajlab/traj/sandbox/harness"
	"github.com/trajlab/traj/sandbox/playback"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/location"
	"github.com/trajlab/traj/trace/store/ref"
)

// Source is the recorded trajectory a rerun or a fork replays, as files
// on this machine.
type Source struct {
	Ref *ref.Trajectory
	// Trace and Calls are its agent_trace.json and model_calls.jsonl.
	Trace, Calls string
	// State is its run.json, nil when it has none (it then replays with
	// what its trace says and the defaults).
	State  *folder.RunState
	Header trace.Header
	Parts  int
}

// OpenSource finds trajectory r's trace, model-call record and run.json
// (a store keeps it among the logs, a trajectory folder at its top),
// read by folder.ReadRunState: a run.json that does not decode is an
// error, none is no State.
func OpenSource(ctx context.Context, r, storeURL string) (*Source, error) {
	rt, err := ref.Resolve(ctx, r, storeURL, ref.Options{})
	if err != nil {
		return nil, &BadRequest{err}
	}
	src := &Source{Ref: rt}
	if src.Trace, _, err = rt.TracePath(ctx); err != nil {
		return nil, fmt.Errorf("rerun %s: %w", rt.ID, err)
	}
	if src.Calls, err = rt.Fetch(ctx, rt.Prefix+store.ModelCallsName); err != nil {
		return nil, fmt.Errorf("rerun %s: its model calls (%s) are what a rerun plays: %w", rt.ID, store.ModelCallsName, err)
	}
	for _, k := range []string{rt.Prefix + store.LogsDir + store.RunStateName, rt.Prefix + store.RunStateName} {
		p, err := rt.Fetch(ctx, k)
		if err != nil {
			continue
		}
		st, err := folder.ReadRunState(p)
		if err != nil {
			return nil, fmt.Errorf("rerun %s: %w", rt.ID, err)
		}
		src.State = &st
		break
	}
	f, err := os.Open(src.Trace)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	err = trace.Scan(f, trace.Visitor{
		OnHeader: func(h *trace.Header) error { src.Header = *h; return nil },
		OnPart:   func(int, *trace.Part) error { src.Parts++; return nil },
	})
	if err != nil {
		return nil, fmt.Errorf("rerun %s: read trace: %w", rt.ID, err)
	}
	return src, nil
}

// Recorded is the source's run options as recorded (orchestrator.OptionsOf
// its run.json), with what its trace says over them: the harness (its
// binary only when run.json names the same harness), the model, the task
// when run.json has none; and the Rerun that plays its model calls, with
// its lineage. r and storeFlag are how the user named the source.
func (src *Source) Recorded(r, storeFlag string) (orchestrator.Options, *orchestrator.Rerun, error) {
	h, id, ok := harness.Recorded(src.Header.Agent)
	if !ok {
		return orchestrator.Options{}, nil, fmt.Errorf("%s: traj does not know its harness %q", src.Ref.ID, src.Header.Agent)
	}
	var rec orchestrator.Options
	if src.State != nil {
		var err error
		if rec, err = orchestrator.OptionsOf(*src.State); err != nil {
			return rec, nil, fmt.Errorf("%s: %w", src.Ref.ID, err)
		}
		if rec.Agent == "" {
			rec.Agent = harness.Default
		}
	}
	if rec.Agent != h.Name {
		rec.AgentBin = ""
	}
	if rec.Task == "" {
		rec.Task = src.Header.Task
	}
	rec.Agent, rec.Model, rec.Rerun = h.Name, src.Header.AgentModel, nil
	if rec.MaxParts <= 0 {
		rec.MaxParts = src.Parts
	}
	lineage := trace.Lineage{TrajectoryID: src.Ref.ID, Agent: src.Header.Agent}
	if storeFlag == "" && location.Scheme(r) == "s3" {
		lineage.Store = src.Ref.Store.URI("")
	}
	return rec, &orchestrator.Rerun{Of: lineage, Calls: src.Calls, Trace: src.Trace, AgentVersion: id.Version, SourceModel: src.Header.AgentModel}, nil
}

// forkPoint is where a fork at part p of the source branches: p itself
// when a model call of the source started right after it, else the last
// part of the response that produced p (a response is not split); past
// the last call, the last part. Where the calls sit among the parts is
// the source trace's attribution (calls.Placement).
func (src *Source) forkPoint(p int) (int, error) {
	recorded, err := playback.Load(src.Calls)
	if err != nil {
		return 0, err
	}
	pl, err := calls.Place(src.Trace)
	if err != nil {
		return 0, err
	}
	return pl.ForkPoint(recorded, p, src.Parts), nil
}

// Compare compares trajectory newID, a rerun or fork of src, with src up
// to part until (0: all).
func Compare(ctx context.Context, src *Source, newID, storeURL string, until int) (*rerun.Report, error) {
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
	a, err := side(src.Ref, src.Trace)
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
	a.Calls = src.Calls
	return rerun.Compare(ctx, a, b, until, func(ctx context.Context, bundles []string) (rerun.Trees, func(), error) {
		h, err := githistory.Open(ctx, bundles...)
		if err != nil {
			return nil, nil, err
		}
		return h, func() { _ = h.Close() }, nil
	})
}

// RecordedTask is the task folder a local trajectory's run recorded
// (orchestrator.RecordedTask of the folder its trace is in), "" when
// there is none here. `traj replay evaluate` takes it when --task is not
// given (evaluate.Request.TaskOf).
func RecordedTask(t *source.Trajectory) string {
	if t.TracePath == "" {
		return ""
	}
	return orchestrator.RecordedTask(filepath.Dir(t.TracePath))
}
