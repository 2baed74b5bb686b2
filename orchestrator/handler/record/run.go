package record

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/trajlab/traj/orchestrator"
	"github.com/trajlab/traj/orchestrator/folder"
	"github.com/trajlab/traj/orchestrator/recovery"
	"github.com/trajlab/traj/replay/report"
	"github.com/trajlab/traj/replay/rerun"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/location"
)

// BadRequest is a request that cannot be run as given (flags that do not
// go together, a source that cannot be found, a fork that would change the
// task): `traj run` exits 2 for it.
type BadRequest struct{ Err error }

func (e *BadRequest) Error() string { return e.Err.Error() }
func (e *BadRequest) Unwrap() error { return e.Err }

func bad(format string, args ...any) error { return &BadRequest{fmt.Errorf(format, args...)} }

// RunRequest is `traj run`: a new trajectory, the continuation of one
// (Resume) or a fork of one (Fork).
type RunRequest struct {
	// Options are the run options as given; Given names those given at
	// their zero (orchestrator.Given). A resume or a fork takes every
	// option not given from the recorded run (orchestrator.Inherit);
	// defaults apply after that.
	Options orchestrator.Options
	Given   orchestrator.Given
	// Resume continues trajectory REF (its id, or its folder here).
	Resume string
	// Fork branches trajectory REF (an id, folder, trace or s3:// URL) at
	// AtPart: its parts 1..AtPart rerun from its recorded model calls,
	// then the model the options name (default: the source's) goes on,
	// Prompt opening the next turn.
	Fork              string
	AtPart            int
	Prompt            string
	AllowOtherVersion bool
	// Notes receives what the run says beside its progress (a fork point
	// moved to the end of a model response); nil: nowhere.
	Notes io.Writer
}

// RunResult is what Run recorded.
type RunResult struct {
	*orchestrator.Result
	// WorkDir is the folder above the trajectory folder, as given or as a
	// resumed trajectory's REF named it.
	WorkDir string
	// Fork, for a fork that recorded without error, compares its
	// inherited parts with its source's.
	Fork *ForkCheck
}

// ForkCheck is a fork's comparison with its source: the inherited parts
// 1..At must be reproduced.
type ForkCheck struct {
	Source string
	At     int
	Report *rerun.Report
}

// Reproduced reports whether the fork reproduced every inherited part.
func (f *ForkCheck) Reproduced() bool { return f.Report.Reproduced == f.At }

func (r *RunRequest) check() error {
	o := r.Options
	switch {
	case r.Fork != "" && r.Resume != "":
		return bad("--fork and --resume do not go together")
	case (r.AtPart != 0 || r.Prompt != "" || r.AllowOtherVersion) && r.Fork == "":
		return bad("--at-part, --prompt and --allow-other-version go with --fork REF")
	case r.Fork != "" && r.AtPart <= 0:
		return bad("--fork needs --at-part P, the last part of the source to inherit (> 0)")
	case r.Resume == "" && r.Fork == "" && o.Model == "":
		return bad("--model is required (or --resume ID)")
	case r.Resume == "" && r.Fork == "" && o.MaxParts == 0:
		return bad("--max-parts is required: the part budget, a number > 0 (the run never records more parts)")
	case o.MaxParts < 0:
		return bad("--max-parts must be > 0")
	case o.Sandbox.Limits.CPUs < 0 || o.Sandbox.Limits.Processes < 0:
		return bad("--cpus and --pids must not be negative")
	}
	return nil
}

// Run records the trajectory r asks for, saves its summary.json in the
// store once it has an end, and for a fork compares the inherited parts
// with the source's. A result without error can still be an end the
// caller reports (interrupted, uploads pending, agent_error).
func Run(ctx context.Context, r RunRequest) (*RunResult, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	if r.Options.Logger == nil {
		r.Options.Logger = slog.New(slog.DiscardHandler)
	}
	opts := r.Options
	var res *orchestrator.Result
	var err error
	var src *Source
	switch {
	case r.Resume != "":
		var id string
		if id, opts.WorkDir, err = folder.SplitRef(r.Resume, opts.WorkDir); err != nil {
			return nil, &BadRequest{err}
		}
		res, err = recovery.Resume(ctx, id, opts, r.Given)
	case r.Fork != "":
		if src, opts, err = forkOptions(ctx, r); err != nil {
			return nil, err
		}
		res, err = orchestrator.Run(ctx, opts)
	default:
		opts.Defaults()
		res, err = orchestrator.Run(ctx, opts)
	}
	if res == nil {
		return nil, err
	}
	out := &RunResult{Result: res, WorkDir: opts.WorkDir}
	if res.End.Reason != "" {
		if l, lerr := folder.Locate(ctx, folder.LocateOptions{ID: res.TrajectoryID, Store: opts.Store, WorkDir: opts.WorkDir, Logger: opts.Logger}); lerr == nil {
			SaveSummary(ctx, opts.Logger, l.Store, res.TrajectoryID)
		}
	}
	if src == nil || err != nil {
		return out, err
	}
	at := opts.Rerun.ForkAt
	rep, err := Compare(ctx, src, res.TrajectoryID, location.Choose(opts.Store, os.Getenv), at)
	if err != nil {
		return out, err
	}
	out.Fork = &ForkCheck{Source: src.Ref.ID, At: at, Report: rep}
	return out, nil
}

// forkOptions opens r's fork source and makes the fork's run options.
func forkOptions(ctx context.Context, r RunRequest) (*Source, orchestrator.Options, error) {
	storeURL := location.Choose(r.Options.Store, os.Getenv)
	src, err := OpenSource(ctx, r.Fork, storeURL)
	if err != nil {
		return nil, r.Options, err
	}
	opts, err := src.forkOptions(r)
	if err != nil {
		return nil, opts, err
	}
	opts.Store = storeURL
	return src, opts, nil
}

// forkOptions are the run options of r's fork of src: what r gives, the
// rest the source's (orchestrator.Inherit; the task and the harness
// always are), then the defaults: a part budget of at least the inherited
// parts and one more, an id <source>-fork<P>-<time>. An inherited script
// goes on from where the source was at the fork point.
func (src *Source) forkOptions(r RunRequest) (orchestrator.Options, error) {
	opts := r.Options
	if r.AtPart > src.Parts {
		return opts, bad("--at-part %d: %s has %d parts", r.AtPart, src.Ref.ID, src.Parts)
	}
	rec, rr, err := src.Recorded(r.Fork, opts.Store)
	if err != nil {
		return opts, err
	}
	at, err := src.forkPoint(r.AtPart)
	if err != nil {
		return opts, err
	}
	if at != r.AtPart && r.Notes != nil {
		fmt.Fprintf(r.Notes, "fork: part %d is not where a model response of %s ended; the fork inherits parts 1..%d\n", r.AtPart, src.Ref.ID, at)
	}
	given := r.Given
	opts, err = orchestrator.Inherit(opts, given, rec, orchestrator.Inheritance{Untrusted: true})
	var conflict *orchestrator.Conflict
	if errors.As(err, &conflict) {
		if conflict.Flag == "task" {
			return opts, bad("--task %s: the fork reruns %s's task, %s (a fork cannot change the task)", conflict.Given, src.Ref.ID, conflict.Recorded)
		}
		return opts, bad("--%s %s: the fork reruns %s's harness, %s", conflict.Flag, conflict.Given, src.Ref.ID, conflict.Recorded)
	}
	if err != nil {
		return opts, err
	}
	if opts.Script != "" && !given.Has("script", r.Options.Script != "") {
		if _, err := os.Stat(opts.Script); err != nil {
			return opts, bad("%s was recorded with the script %s, which is not on this machine: give --script (%w)", src.Ref.ID, opts.Script, err)
		}
		rr.ContinueScript = true
	}
	if !given.Has("max-parts", r.Options.MaxParts != 0) {
		opts.MaxParts = max(at+1, opts.MaxParts)
	}
	opts.Defaults()
	if opts.TrajectoryID == "" {
		opts.TrajectoryID = fmt.Sprintf("%s-fork%d-%s", src.Ref.ID, at, time.Now().UTC().Format("20060102-150405"))
	}
	rr.ForkAt, rr.Prompt, rr.AllowOtherVersion = at, r.Prompt, r.AllowOtherVersion
	opts.Rerun = rr
	return opts, nil
}

// SaveSummary writes a finished trajectory's summary.json into its store,
// so reports over many trajectories need not read its trace. A failure is
// only logged: the report makes the summary itself when it is missing.
func SaveSummary(ctx context.Context, logger *slog.Logger, st store.Store, id string) {
	if _, err := report.WriteSummary(context.WithoutCancel(ctx), st, id); err != nil {
		logger.Warn("trajectory summary not saved (traj report will make it)", "trajectory", id, "err", err)
	}
}
