package recovery

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"

	"github.com/trajlab/traj/orchestrator"
	"github.com/trajlab/traj/orchestrator/folder"
	"github.com/trajlab/traj/orchestrator/task"
	"github.com/trajlab/traj/trace"
)

// Resume continues trajectory id, whose `traj run` died or ended early
// (interrupted, timeout, part_limit with a larger budget now): same id and
// trace, part numbering continuing where it stopped, a new harness session
// prompted with the continuation prompt, the workspace as the last part
// left it (restored from the history bundles, local or in the store, when
// the workspace folder is gone). opts.Store and opts.WorkDir locate the
// trajectory as for `traj run`; every run option not given (see
// orchestrator.Given: model, budget, timeout, script, endpoint, API-key
// variables, harness binary, tests folder, sandbox) is the one run.json
// recorded (orchestrator.Inherit); Task, the harness, TrajectoryID and
// the store are the trajectory's (a task or harness given that is not its
// own is refused). A solved trajectory, one recorded by a live
// process, or one whose budget is spent is refused before anything
// changes.
func Resume(ctx context.Context, id string, opts orchestrator.Options, given orchestrator.Given) (*orchestrator.Result, error) {
	l, err := folder.Locate(ctx, folder.LocateOptions{ID: id, Store: opts.Store, StoreImpl: opts.StoreImpl, WorkDir: opts.WorkDir, Logger: opts.Logger})
	if err != nil {
		return nil, err
	}
	st := l.State
	if st.Playback != "" {
		return nil, fmt.Errorf("resume %s: it is a rerun (traj replay rerun), answered from its source's recorded model calls; rerun the source again instead", id)
	}
	opts, err = remembered(opts, given, st)
	var conflict *orchestrator.Conflict
	if errors.As(err, &conflict) {
		return nil, fmt.Errorf("resume %s: --%s %s: the trajectory's %s is %s, and a resume cannot change it", id, conflict.Flag, conflict.Given, conflict.Flag, conflict.Recorded)
	}
	if err != nil {
		return nil, err
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if err := l.CheckNotRunning(); err != nil {
		return nil, err
	}
	tk, err := task.Load(strings.TrimPrefix(st.TaskSource, "builtin:"))
	if err != nil {
		return nil, fmt.Errorf("resume %s: %w", id, err)
	}
	if err := recoverTrace(l, opts.Logger); err != nil {
		return nil, fmt.Errorf("resume %s: %w", id, err)
	}
	sum, err := scanTrace(l.TracePath())
	fresh := errors.Is(err, fs.ErrNotExist)
	if fresh {
		// Killed before the trace was created: start it now.
		sum, err = &traceSummary{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("resume %s: read trace: %w", id, err)
	}
	if sum.finished && sum.reason == trace.EndSolved {
		return nil, fmt.Errorf("resume %s: the trajectory is solved; nothing to continue", id)
	}
	if sum.parts >= opts.MaxParts && !sum.finished {
		// It died finishing: the budget was spent, so finish it.
		fr, err := Finalize(ctx, l, FinalizeOptions{Reason: trace.EndPartLimit, Now: opts.Now, Logger: opts.Logger,
			Detail: "the recording process stopped at the part budget; finished by traj run --resume"})
		if fr == nil {
			return nil, err
		}
		return &fr.Result, err
	}
	if sum.parts >= opts.MaxParts {
		return nil, fmt.Errorf("resume %s: %d parts recorded, the budget is %d: give a larger --max-parts", id, sum.parts, opts.MaxParts)
	}
	if err := orchestrator.Preflight(ctx, opts, tk); err != nil {
		return nil, fmt.Errorf("resume %s: %w", id, err)
	}
	if st.Workspace == "" || st.SandboxDir == "" {
		return nil, fmt.Errorf("resume %s: run state has no workspace or sandbox folder", id)
	}
	paths := folder.Paths{ID: id, Dir: l.Dir, Sandbox: st.SandboxDir, Workspace: st.Workspace}
	unmount, err := orchestrator.MountWorkspace(ctx, paths, opts.Sandbox, opts.Harness(), opts.Logger)
	if err != nil {
		return nil, fmt.Errorf("resume %s: %w", id, err)
	}
	defer unmount()
	rec := orchestrator.Recorded{Trace: !fresh, Parts: sum.parts, Turns: sum.turns, Calls: sum.calls, GroundTruth: sum.groundTruth,
		Claims: sum.usage.Claims()}
	if t := sum.usage.Tokens(); t != nil {
		rec.Tokens = *t
	}
	if c := sum.usage.Cost(); c != nil {
		rec.Cost = *c
	}
	// Tokens and Cost go on as the harness's own counts when the trace
	// keeps them beside the gateway's.
	if t := sum.usage.HarnessTokens(); t != nil {
		rec.Tokens = *t
	}
	if c := sum.usage.HarnessCost(); c != nil {
		rec.Cost = *c
	}
	if !fresh {
		if rec.LastBundled, err = restoreWorkspace(ctx, l, sum.lastCommit, tk.Capture, opts.Logger); err != nil {
			return nil, fmt.Errorf("resume %s: %w", id, err)
		}
	}
	opts.Logger.Info("resuming trajectory", "trajectory_id", id, "parts", sum.parts, "turns", sum.turns,
		"last_commit", sum.lastCommit, "workspace", st.Workspace)
	return orchestrator.Record(ctx, opts, orchestrator.Start{Task: tk, Paths: paths, Store: l.Store, StoreURL: l.StoreURL,
		InPlace: l.InPlace, StartedAt: st.StartedAt, Recorded: rec})
}

// remembered is opts with the run options not given taken from those the
// trajectory's run.json recorded (orchestrator.OptionsOf, Inherit).
func remembered(opts orchestrator.Options, given orchestrator.Given, st folder.RunState) (orchestrator.Options, error) {
	rec, err := orchestrator.OptionsOf(st)
	if err != nil {
		return opts, err
	}
	return orchestrator.Inherit(opts, given, rec, orchestrator.Inheritance{})
}

// restoreWorkspace makes the checkpoint history and the workspace hold the
// trajectory's state after its last recorded part: HEAD at lastCommit
// (work the agent did after it stays in the files, to be checkpointed with
// the next part); a deleted history is rebuilt from the history bundles
// and a deleted workspace checked out from the history. It returns the
// newest commit already in a history bundle.
func restoreWorkspace(ctx context.Context, l *folder.Located, lastCommit string, rules trace.CaptureRules, log *slog.Logger) (string, error) {
	tmp, err := os.MkdirTemp("", "traj-resume-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	var used []string
	bundles := func() ([]string, error) {
		var err error
		used, err = folder.HistoryBundles(ctx, l, tmp)
		return used, err
	}
	if _, err := folder.RestoreCheckpoints(ctx, l.State.CheckpointsDir(), l.State.Workspace, lastCommit, rules, bundles, log); err != nil {
		return "", err
	}
	if used != nil {
		return folder.NewestBundled(used), nil
	}
	return folder.NewestBundled(folder.LocalHistoryBundles(l.Dir)), nil
}
