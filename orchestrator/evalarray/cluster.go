package evalarray

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/trajlab/traj/orchestrator/batch"
	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/source"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/atomicfile"
	"github.com/trajlab/traj/trace/store/location"
)

// Request is an evaluation spread over a cluster: what `traj replay
// evaluate --executor slurm|kube` was given.
type Request struct {
	Executor batch.Executor
	// Source is what every task reads; its ID names the jobs.
	Source Source
	// Tasks is the array's size at most (never more than the trees
	// missing from the cache).
	Tasks int
	// Bin is the traj binary the Slurm tasks run (default: this
	// process's executable).
	Bin string
	// Work holds the Slurm arrays' folders ("" with Output: Output.tasks).
	Work string
	// Partition and Sbatch are sbatch options (time, resources…).
	Partition string
	Sbatch    []string
	// Poll is how often the queue and the cache are read while waiting.
	Poll time.Duration
	// Detach submits and returns: a job that waits for the array writes
	// the report to Output (StoreOnly: only beside the trajectory).
	Detach    bool
	Output    string
	StoreOnly bool
	// Kube holds the pods' image, namespace, store claim and secret.
	Kube batch.Kube
	// Manifest is where the Kubernetes manifest goes ("" : Stdout).
	Manifest string
	// Stdout receives a manifest; Stderr the progress lines.
	Stdout, Stderr io.Writer
	Logger         *slog.Logger
}

// NewShare plans t's evaluation by ev with opts: the share of trees the
// submitter lists and its tasks evaluate.
func NewShare(ctx context.Context, t *source.Trajectory, ev replay.Evaluator, opts replay.EvaluateOptions) (*replay.Share, error) {
	parts, commits, err := replay.PartCommitsAt(t.TracePath)
	if err != nil {
		return nil, fmt.Errorf("plan evaluation of %s: %w", t.ID, err)
	}
	return replay.NewShare(ctx, t.ID, parts, commits, t.History, ev, opts)
}

// Source is how a task opens the trajectory and evaluates it: the same
// trajectory, store, test paths and sandbox provider as the submitter,
// paths absolute for the nodes.
type Source struct {
	// ID is the trajectory's id; Ref what the submitter was given (an
	// id, an alias or a path), "" when it read Trace or Bundle.
	ID, Ref string
	Store   string
	// Trace, Bundle, TestsDir and Task (the task's folder, a Harbor
	// task's environment) are paths, "" when not given.
	Trace, Bundle, TestsDir, Task string
	Tests                         []string
	Sandbox                       string
	Workers                       int
}

// args are the arguments of `traj replay evaluate-task` for s, after the
// traj binary; on Kubernetes the pods read the trajectory by id from
// store, as mounted there.
func (s Source) args(kube bool, store string) ([]string, error) {
	args := []string{"replay", "evaluate-task"}
	if kube {
		args = append(args, s.ID)
	} else if s.Ref != "" {
		r := s.Ref
		if _, err := os.Stat(r); err == nil {
			if r, err = filepath.Abs(r); err != nil {
				return nil, err
			}
		}
		args = append(args, r)
	}
	args = append(args, "--store", store, "--tests", strings.Join(s.Tests, ","), "--sandbox", s.Sandbox)
	if !kube {
		for _, f := range []struct{ flag, path string }{{"--trace", s.Trace}, {"--bundle", s.Bundle}, {"--tests-dir", s.TestsDir}, {"--task", s.Task}} {
			if f.path == "" {
				continue
			}
			p, err := filepath.Abs(f.path)
			if err != nil {
				return nil, err
			}
			args = append(args, f.flag, p)
		}
	}
	if s.Workers > 0 {
		args = append(args, "--workers", strconv.Itoa(s.Workers))
	}
	return args, nil
}

// Run evaluates on a cluster the trees of t the cache lacks, as ev and
// opts evaluate them (against the store's evaluation cache). Slurm:
// it submits an array for them (or waits for an earlier run's array still
// queued) and waits for it; report is true when every tree is then in the
// cache and the caller writes the report from it. Detach submits a job
// that writes the report instead. Kubernetes: it writes the manifest.
// Errors of the request match replay.ErrUsage.
func Run(ctx context.Context, t *source.Trajectory, ev replay.Evaluator, opts replay.EvaluateOptions, r Request) (report bool, err error) {
	share, err := NewShare(ctx, t, ev, opts)
	if err != nil {
		return false, err
	}
	if n := len(share.Plan.Unresolved); n > 0 && r.Logger != nil {
		r.Logger.Warn("commits whose tree cannot be read are left to the report", "commits", n)
	}
	total := len(share.Plan.Trees)
	storeURL := location.Choose(r.Source.Store, os.Getenv)
	if r.Executor == batch.Kubernetes {
		return false, r.writeManifest(ctx, share, storeURL)
	}
	if location.Scheme(storeURL) == "" {
		if storeURL, err = filepath.Abs(storeURL); err != nil {
			return false, err
		}
	}
	work := r.Work
	if work == "" {
		if r.Output == "" {
			return false, replay.UsageError("--store-only with --executor slurm needs --work-dir")
		}
		work = r.Output + ".tasks"
	}
	if work, err = filepath.Abs(work); err != nil {
		return false, err
	}
	// An array of an earlier run still in the queue (that run was
	// interrupted): wait for it rather than submit its trees again.
	var sub *Submission
	subs, err := Submissions(work)
	if err != nil {
		return false, err
	}
	if len(subs) > 0 {
		last := subs[len(subs)-1]
		tasks, err := State(ctx, last)
		if err != nil {
			return false, err
		}
		if tasks.InQueue() {
			sub = &last
			fmt.Fprintf(r.Stderr, "job array %s of an earlier run is still queued: waiting for it\n", last.JobID)
		}
	}
	if sub == nil {
		missing := share.Missing(ctx, nil)
		if len(missing) == 0 {
			fmt.Fprintf(r.Stderr, "%d trees, every one in the evaluation cache: nothing to submit\n", total)
			return true, nil
		}
		args, err := r.Source.args(false, storeURL)
		if err != nil {
			return false, err
		}
		if r.Bin == "" {
			if r.Bin, err = os.Executable(); err != nil {
				return false, fmt.Errorf("find the traj executable: %w", err)
			}
		}
		if r.Partition != "" {
			r.Sbatch = append(append([]string{}, r.Sbatch...), "--partition="+r.Partition)
		}
		if sub, err = Submit(ctx, Slurm{Work: work, Name: r.Source.ID, Trees: missing, Tasks: r.Tasks,
			TaskArgs: append([]string{r.Bin}, args...), Sbatch: r.Sbatch}); err != nil {
			return false, err
		}
		fmt.Fprintf(r.Stderr, "submitted Slurm job array %s with %d tasks: %d of %d trees missing from the evaluation cache (%s)\n",
			sub.JobID, sub.Tasks, len(missing), total, sub.Dir)
		if r.Detach {
			return false, r.submitReport(ctx, *sub, args)
		}
	} else if r.Detach {
		return false, fmt.Errorf("job array %s of an earlier run is still queued: its report job writes the report", sub.JobID)
	}
	tasks, err := r.wait(ctx, share, *sub)
	if err != nil {
		return false, err
	}
	if missing := share.Missing(ctx, nil); len(missing) > 0 {
		for _, i := range tasks.Failed() {
			why := "killed or crashed before its report"
			if t, ok := tasks.Done[i]; ok {
				why = trace.Printable(t.Error)
			}
			fmt.Fprintf(r.Stderr, "task %d did not evaluate all its trees: %s (log %s)\n", i, why, LogPath(sub.Dir, i))
		}
		return false, fmt.Errorf("%d of %d trees are not in the evaluation cache after job array %s: run the command again to evaluate only those", len(missing), total, sub.JobID)
	}
	fmt.Fprintf(r.Stderr, "job array %s done: all %d trees in the evaluation cache\n", sub.JobID, total)
	return true, nil
}

// submitReport submits the job that writes the report once sub's tasks
// left the queue, whatever their end (afterany): a local evaluate from
// the cache, which evaluates there a tree a killed task left. taskArgs
// are the tasks' arguments after the binary.
func (r Request) submitReport(ctx context.Context, sub Submission, taskArgs []string) error {
	args := append([]string{r.Bin, "replay", "evaluate"}, taskArgs[2:]...)
	out := "the store"
	if r.Output != "" {
		abs, err := filepath.Abs(r.Output)
		if err != nil {
			return err
		}
		out = abs
		args = append(args, "--output", abs)
	}
	if r.StoreOnly {
		args = append(args, "--store-only")
	}
	job, err := batch.Submit(ctx, batch.Array{Executor: batch.Slurm, Name: "traj-evaluate-report", Command: args,
		About: "traj replay evaluate " + sub.JobID + ": the report, from the evaluation cache",
		Slurm: batch.SlurmOptions{Dir: sub.Dir, Script: "report.sh", Log: filepath.Join(sub.Dir, "report.out"), Chdir: sub.Dir,
			After: sub.JobID, Options: r.Sbatch}}, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(r.Stderr, "submitted job %s: the report (%s) once job array %s is done\n", job.JobID, out, sub.JobID)
	return nil
}

// wait polls the queue and the cache until sub's tasks left the queue,
// printing a line whenever the counts change.
func (r Request) wait(ctx context.Context, share *replay.Share, sub Submission) (Tasks, error) {
	total := len(share.Plan.Trees)
	last := ""
	poll := max(r.Poll, 100*time.Millisecond)
	stopped := func() error {
		return fmt.Errorf("wait for job array %s (it goes on; run the command again to wait for it): %w", sub.JobID, ctx.Err())
	}
	for {
		tasks, err := State(ctx, sub)
		if err != nil {
			if ctx.Err() != nil {
				// Stopped while squeue ran: the array goes on all the same.
				return tasks, stopped()
			}
			return tasks, err
		}
		line := fmt.Sprintf("trees cached %d/%d · %s", total-len(share.Missing(ctx, nil)), total, tasks.Summary())
		if line != last {
			fmt.Fprintln(r.Stderr, line)
			last = line
		}
		if !tasks.InQueue() {
			return tasks, nil
		}
		select {
		case <-ctx.Done():
			return tasks, stopped()
		case <-time.After(poll):
		}
	}
}

// writeManifest writes (Stdout, or Manifest) the Indexed Job of the trees
// the cache lacks. The pods read the trajectory by id from the store.
func (r Request) writeManifest(ctx context.Context, share *replay.Share, storeURL string) error {
	missing := share.Missing(ctx, nil)
	if len(missing) == 0 {
		fmt.Fprintf(r.Stderr, "%d trees, every one in the evaluation cache: nothing to run\n", len(share.Plan.Trees))
		return nil
	}
	podStore, claim, err := batch.PodStore(storeURL, r.Kube.StoreClaim)
	if err != nil {
		return replay.UsageError("the store %q is a folder: pods need --store-claim (a ReadWriteMany PersistentVolumeClaim holding it) or an s3:// store", storeURL)
	}
	args, err := r.Source.args(true, podStore)
	if err != nil {
		return err
	}
	k := Kube{Name: r.Source.ID, Namespace: r.Kube.Namespace, Image: r.Kube.Image, StoreClaim: claim,
		Secret: r.Kube.Secret, Trees: missing, Tasks: r.Tasks, TaskArgs: args}
	a, err := k.Array()
	if err != nil {
		return replay.UsageError("%v", err)
	}
	if r.Manifest == "" {
		_, err = batch.Submit(ctx, a, r.Stdout)
		return err
	}
	var y strings.Builder
	if _, err := batch.Submit(ctx, a, &y); err != nil {
		return err
	}
	if err := atomicfile.WriteBytes(r.Manifest, []byte(y.String())); err != nil {
		return err
	}
	fmt.Fprintf(r.Stderr, "wrote %s: Indexed Job for %d of %d trees; kubectl apply -f %s, then evaluate with --executor local for the report (every tree from the cache)\n",
		r.Manifest, len(missing), len(share.Plan.Trees), trace.ShellWord(r.Manifest))
	return nil
}

// Task is one array task: its share of the trees file, into the store's
// evaluation cache.
type Task struct {
	// Trees is the trees file; Tasks how many tasks share it.
	Trees string
	Tasks int
	// Index is this task's (< 0: SLURM_ARRAY_TASK_ID or
	// JOB_COMPLETION_INDEX).
	Index int
	// ReportDir receives task-<index>.json when done ("" : none).
	ReportDir string
	// FaultHalt is failure injection for the cluster tests: "T:N" makes
	// task T halt after N trees and wait to be killed, so a test can
	// cancel a task part-way without racing its next tree.
	FaultHalt string
	Stderr    io.Writer
}

// RunTask evaluates t's share of the trees. share opens the trajectory
// (once the task's own input is known good) and builds its share with
// progress as its options' Progress; RunTask closes what it returns to
// close (the trajectory) when done. Errors of the request match
// replay.ErrUsage.
func RunTask(ctx context.Context, t Task, share func(progress func(replay.Progress)) (*replay.Share, io.Closer, error)) error {
	idx := t.Index
	if idx < 0 {
		i, ok, err := batch.TaskIndex(os.Getenv)
		if err != nil {
			return replay.UsageError("%v", err)
		}
		if !ok {
			return replay.UsageError("no task index: give --index, or run as a Slurm array task or an Indexed Job pod")
		}
		idx = i
	}
	trees, err := ReadTrees(t.Trees)
	if err != nil {
		return replay.UsageError("%v", err)
	}
	mine, err := Mine(trees, t.Tasks, idx)
	if err != nil {
		return replay.UsageError("%v", err)
	}
	halt, err := faultHalt(t.FaultHalt, idx)
	if err != nil {
		return replay.UsageError("%v", err)
	}
	s, closer, err := share(func(p replay.Progress) {
		if p.Commit != "" {
			fmt.Fprintf(t.Stderr, "task %d: %d/%d trees done (commit %s)\n", idx, p.Done, p.Total, p.Commit)
		}
		if halt > 0 && p.Done >= halt {
			// The worker calls Progress before it takes its next tree.
			fmt.Fprintf(t.Stderr, "task %d: halted after %d trees (--fault-halt): waiting to be killed\n", idx, p.Done)
			<-ctx.Done()
		}
	})
	if closer != nil {
		defer closer.Close()
	}
	if err != nil {
		return err
	}
	stats, evalErr := s.Evaluate(ctx, mine)
	fmt.Fprintf(t.Stderr, "task %d of %d: %d trees, %d already in the cache, %d evaluated, %d failed\n",
		idx, t.Tasks, stats.Given, stats.Cached, stats.Evaluated, stats.Failed)
	if t.ReportDir != "" && ctx.Err() == nil {
		r := TaskReport{Task: idx, ShareStats: stats}
		if evalErr != nil {
			r.Error = evalErr.Error()
		}
		if err := WriteReport(t.ReportDir, r); err != nil {
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
