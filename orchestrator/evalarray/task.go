package evalarray

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/trajlab/traj/orchestrator/scheduler"
	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/evaluate"
	"github.com/trajlab/traj/replay/source"
)

// Task is what one Slurm array task or Indexed Job pod of an evaluate
// runs (`traj replay evaluate-task`): its share of the trees file,
// evaluated into the store's evaluation cache by the evaluator the
// submitter's evaluate built (evaluate.Shared), each tree by the one
// per-tree protocol (replay.Share, environment/evaluation's Tree).
type Task struct {
	// Evaluate names the trajectory, the test paths and the sandboxes, as
	// the submitter's evaluate did; its Stderr gets the task's lines.
	Evaluate evaluate.Request
	// Trees is the trees file; Tasks how many tasks share it.
	Trees string
	Tasks int
	// Index is this task's (< 0: SLURM_ARRAY_TASK_ID or
	// JOB_COMPLETION_INDEX, scheduler.TaskIndex).
	Index int
	// ReportDir, when set, receives task-<index>.json once done.
	ReportDir string
	// FaultHalt is failure injection for the cluster tests ("T:N": task
	// T halts after N trees and waits to be killed, so a test can cancel
	// a task part-way without racing its next tree).
	FaultHalt string
}

// RunTask runs task k. Bad input (no index, a bad trees file or share)
// is an error matching replay.ErrUsage; trees that could not be
// evaluated, replay.ErrIncomplete's.
func RunTask(ctx context.Context, k Task) error {
	stderr := k.Evaluate.Stderr
	if stderr == nil {
		stderr = io.Discard
	}
	idx := k.Index
	if idx < 0 {
		i, ok, err := scheduler.TaskIndex(os.Getenv)
		if err != nil {
			return replay.UsageError("%v", err)
		}
		if !ok {
			return replay.UsageError("no task index: give --index, or run as a Slurm array task or an Indexed Job pod")
		}
		idx = i
	}
	trees, err := ReadTrees(k.Trees)
	if err != nil {
		return replay.UsageError("%v", err)
	}
	mine, err := Mine(trees, k.Tasks, idx)
	if err != nil {
		return replay.UsageError("%v", err)
	}
	halt, err := faultHalt(k.FaultHalt, idx)
	if err != nil {
		return replay.UsageError("%v", err)
	}
	t, err := evaluate.Open(ctx, k.Evaluate, source.TraceHeader, true)
	if err != nil {
		return err
	}
	defer t.Close()
	e, err := evaluate.Shared(ctx, t, k.Evaluate)
	if err != nil {
		return err
	}
	opts := e.Options
	opts.Progress = func(p replay.Progress) {
		if p.Commit != "" {
			fmt.Fprintf(stderr, "task %d: %d/%d trees done (commit %s)\n", idx, p.Done, p.Total, p.Commit)
		}
		if halt > 0 && p.Done >= halt {
			// The worker calls Progress before it takes its next tree.
			fmt.Fprintf(stderr, "task %d: halted after %d trees (--fault-halt): waiting to be killed\n", idx, p.Done)
			<-ctx.Done()
		}
	}
	parts, commits, err := replay.PartCommitsAt(t.TracePath)
	if err != nil {
		return fmt.Errorf("plan evaluation of %s: %w", t.ID, err)
	}
	share, err := replay.NewShare(ctx, t.ID, parts, commits, t.History, e.Evaluator, opts)
	if err != nil {
		return err
	}
	stats, evalErr := share.Evaluate(ctx, mine)
	fmt.Fprintf(stderr, "task %d of %d: %d trees, %d already in the cache, %d evaluated, %d failed\n",
		idx, k.Tasks, stats.Given, stats.Cached, stats.Evaluated, stats.Failed)
	if k.ReportDir != "" && ctx.Err() == nil {
		r := TaskReport{Task: idx, ShareStats: stats}
		if evalErr != nil {
			r.Error = evalErr.Error()
		}
		if err := WriteReport(k.ReportDir, r); err != nil {
			return err
		}
	}
	return evalErr
}

// faultHalt parses --fault-halt: how many trees task idx evaluates before
// it halts, 0 when it does not.
func faultHalt(spec string, idx int) (int, error) {
	if spec == "" {
		return 0, nil
	}
	task, trees, ok := strings.Cut(spec, ":")
	t, terr := strconv.Atoi(task)
	n, nerr := strconv.Atoi(trees)
	if !ok || terr != nil || nerr != nil || t < 0 || n < 1 {
		return 0, fmt.Errorf("--fault-halt %q: want TASK:TREES, e.g. 1:1", spec)
	}
	if t != idx {
		return 0, nil
	}
	return n, nil
}
