package experiment

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/trajlab/traj/orchestrator"
	"github.com/trajlab/traj/orchestrator/batch"
	"github.com/trajlab/traj/orchestrator/evalarray"
	xp "github.com/trajlab/traj/orchestrator/experiment"
	"github.com/trajlab/traj/replay/evaluate"
	"github.com/trajlab/traj/replay/source"
	"github.com/trajlab/traj/trace/store"
)

// evaluateFinished is the spec's evaluate for a trajectory a Slurm task
// finished: its trees the cache lacks go to an array of their own and a
// job waiting for it writes the report beside the trajectory in the store
// (the experiment's folder may be inside the store, where no output may
// go); this task does not wait. It is the evaluate handler's request, as
// `traj replay evaluate --executor slurm --detach --store-only` maps it.
func (l *loaded) evaluateFinished(ctx context.Context, id string) error {
	s := l.spec
	req := evaluate.Request{Source: source.Request{Ref: id, StoreURL: l.where.StoreURL}, StoreOnly: true,
		Tests: s.Evaluate.Tests, TestsDir: l.Getenv("TRAJ_TESTS_DIR"), Environments: l.Environments,
		Task:   orchestrator.RecordedTask(l.where.TrajectoryDir(id)),
		Logger: l.Logger, Stderr: l.Stderr, Executor: "slurm"}
	local := req
	local.Executor, local.Terminal = "", l.Terminal
	req.Cluster = func(ctx context.Context, t *source.Trajectory, e evaluate.Evaluation) error {
		ev, opts := e.Evaluator, e.Options
		report, err := evalarray.Run(ctx, t, ev, opts, evalarray.Request{Executor: batch.Slurm, Tasks: max(s.Evaluate.Tasks, 1),
			Source: evalarray.Source{ID: t.ID, Ref: id, Store: l.where.StoreURL, TestsDir: req.TestsDir, Task: e.Task, Tests: opts.TestPaths, Sandbox: ev.Provider},
			Work:   filepath.Join(l.where.LocalDir(s.Name), "evaluations", id), Sbatch: xp.SbatchResources(s), Poll: 5 * time.Second,
			Detach: true, StoreOnly: true, Stdout: l.Stdout, Stderr: l.Stderr, Logger: l.Logger})
		if err != nil || !report {
			return err
		}
		// Every tree is in the cache: the report is a local evaluate's.
		return evaluate.Run(ctx, local)
	}
	if err := evaluate.Run(ctx, req); err != nil {
		return fmt.Errorf("evaluate %s: %w", id, err)
	}
	return nil
}

// evaluateUnevaluated submits the evaluation of every done trajectory
// whose evaluation.json the store lacks (its task's evaluation failed, or
// its report job has not run yet: a duplicate then costs cache reads). A
// failure is a warning: the trajectories stay as they are.
func (l *loaded) evaluateUnevaluated(ctx context.Context, slots []*xp.Slot) {
	for _, slot := range slots {
		if slot.Next != xp.ActDone || slot.Latest() == nil {
			continue
		}
		id := slot.Latest().ID
		_, err := l.where.Store.Stat(ctx, store.EvaluationKey(id))
		if !errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err := l.evaluateFinished(ctx, id); err != nil {
			l.Logger.Warn("evaluate a finished trajectory", "trajectory", id, "err", err)
		}
	}
}
