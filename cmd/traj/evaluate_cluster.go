package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/trajlab/traj/orchestrator/evalarray"
	"github.com/trajlab/traj/orchestrator/scheduler"
	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/evaluate"
	"github.com/trajlab/traj/replay/source"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/atomicfile"
	"github.com/trajlab/traj/trace/store/location"
)

// clusterFlags spread an evaluate over a cluster (orchestrator/evalarray).
type clusterFlags struct {
	Executor   string        `help:"Where the trees are evaluated: local (here), slurm (an sbatch array against the store's evaluation cache, then the report here from the cache) or kube (write a Kubernetes Indexed Job manifest for the trees the cache lacks)." enum:"local,slurm,kube" default:"local"`
	Tasks      int           `help:"slurm, kube: array tasks (at most one per tree the cache lacks)." default:"8"`
	Partition  string        `help:"slurm: the partition."`
	SlurmOpt   []string      `name:"slurm-opt" help:"slurm: another sbatch option, e.g. --slurm-opt=--time=120 (repeatable)."`
	WorkDir    string        `name:"work-dir" type:"path" help:"slurm: folder of the arrays' trees files, scripts, task logs and reports, shared with the nodes (default: OUTPUT.tasks)."`
	Poll       time.Duration `help:"slurm: how often the queue and the cache are read while waiting." default:"5s"`
	Detach     bool          `help:"slurm: submit and return: a job that waits for the array (sbatch --dependency) writes the report, evaluating there any tree a failed task left."`
	Image      string        `help:"kube: the pods' image (traj, the sandbox and the test fixtures)."`
	StoreClaim string        `name:"store-claim" help:"kube: a ReadWriteMany PersistentVolumeClaim holding a folder store (else the store must be s3://)."`
	Namespace  string        `help:"kube: the objects' namespace."`
	Secret     string        `help:"kube: a Secret whose keys become the pods' environment (store credentials)."`
	Manifest   string        `type:"path" help:"kube: write the manifest here (default: stdout)."`
}

// request is req evaluated on the cluster f names: the cluster's part
// is this command's (runCluster), the report a local evaluate's.
func (f clusterFlags) request(g *Globals, req evaluate.Request) evaluate.Request {
	c := &ReplayEvaluateCmd{
		replaySource: replaySource{Ref: req.Source.Ref, Store: req.Source.StoreURL, Trace: req.Source.TracePath, Bundle: req.Source.BundlePath},
		Output:       req.Output, StoreOnly: req.StoreOnly, HTML: req.HTML,
		evalFlags:    evalFlags{Tests: req.Tests, Workers: req.Workers, TestsDir: req.TestsDir, Sandbox: req.Sandbox},
		clusterFlags: f,
	}
	req.Executor = f.Executor
	req.Cluster = func(ctx context.Context, t *source.Trajectory, e evaluate.Evaluation) error {
		return c.runCluster(ctx, g, t, e)
	}
	return req
}

// runCluster evaluates t's trees the cache lacks on a cluster, then (Slurm)
// writes the report from the cache as a local evaluate does.
func (c *ReplayEvaluateCmd) runCluster(ctx context.Context, g *Globals, t *source.Trajectory, e evaluate.Evaluation) error {
	ev, opts := e.Evaluator, e.Options
	parts, commits, err := replay.PartCommitsAt(t.TracePath)
	if err != nil {
		return fmt.Errorf("plan evaluation of %s: %w", t.ID, err)
	}
	share, err := replay.NewShare(ctx, t.ID, parts, commits, t.History, ev, opts)
	if err != nil {
		return err
	}
	total := len(share.Plan.Trees)
	if len(share.Plan.Unresolved) > 0 {
		g.Logger.Warn("commits whose tree cannot be read are left to the report", "commits", len(share.Plan.Unresolved))
	}
	if c.Executor == "kube" {
		return c.writeManifest(ctx, g, t, share, opts.TestPaths, ev.Provider)
	}
	work := c.WorkDir
	if work == "" {
		if c.Output == "" {
			return &exitError{2, errors.New("--store-only with --executor slurm needs --work-dir")}
		}
		work = c.Output + ".tasks"
	}
	if work, err = filepath.Abs(work); err != nil {
		return err
	}
	// An array of an earlier run still in the queue (that run was
	// interrupted): wait for it rather than submit its trees again.
	var sub *evalarray.Submission
	subs, err := evalarray.Submissions(work)
	if err != nil {
		return err
	}
	if len(subs) > 0 {
		last := subs[len(subs)-1]
		tasks, err := evalarray.State(ctx, last)
		if err != nil {
			return err
		}
		if tasks.InQueue() {
			sub = &last
			fmt.Fprintf(g.Stderr, "job array %s of an earlier run is still queued: waiting for it\n", last.JobID)
		}
	}
	if sub == nil {
		missing := share.Missing(ctx, nil)
		if len(missing) == 0 {
			fmt.Fprintf(g.Stderr, "%d trees, every one in the evaluation cache: nothing to submit\n", total)
			return c.reportFromCache(ctx, g)
		}
		args, err := c.taskArgs(opts.TestPaths, ev.Provider)
		if err != nil {
			return err
		}
		bin, err := os.Executable()
		if err != nil {
			return err
		}
		sbatch := append([]string{}, c.SlurmOpt...)
		if c.Partition != "" {
			sbatch = append(sbatch, "--partition="+c.Partition)
		}
		if sub, err = evalarray.Submit(ctx, evalarray.Slurm{Work: work, Name: t.ID, Trees: missing, Tasks: c.Tasks,
			TaskArgs: append([]string{bin}, args...), Sbatch: sbatch}); err != nil {
			return err
		}
		fmt.Fprintf(g.Stderr, "submitted Slurm job array %s with %d tasks: %d of %d trees missing from the evaluation cache (%s)\n",
			sub.JobID, sub.Tasks, len(missing), total, sub.Dir)
		if c.Detach {
			return c.submitReport(ctx, g, *sub, bin, args, sbatch)
		}
	} else if c.Detach {
		return &exitError{1, fmt.Errorf("job array %s of an earlier run is still queued: its report job writes the report", sub.JobID)}
	}
	tasks, err := c.wait(ctx, g, share, *sub)
	if err != nil {
		return err
	}
	if missing := share.Missing(ctx, nil); len(missing) > 0 {
		for _, i := range tasks.Failed() {
			why := "killed or crashed before its report"
			if r, ok := tasks.Done[i]; ok {
				why = trace.Printable(r.Error)
			}
			fmt.Fprintf(g.Stderr, "task %d did not evaluate all its trees: %s (log %s)\n", i, why, evalarray.LogPath(sub.Dir, i))
		}
		return &exitError{1, fmt.Errorf("%d of %d trees are not in the evaluation cache after job array %s: run the command again to evaluate only those", len(missing), total, sub.JobID)}
	}
	fmt.Fprintf(g.Stderr, "job array %s done: all %d trees in the evaluation cache\n", sub.JobID, total)
	return c.reportFromCache(ctx, g)
}

// submitReport submits the job that writes the report once sub's tasks
// left the queue, whatever their end (afterany): a local evaluate from
// the cache, which evaluates there a tree a killed task left.
func (c *ReplayEvaluateCmd) submitReport(ctx context.Context, g *Globals, sub evalarray.Submission, bin string, taskArgs, sbatch []string) error {
	args := append([]string{bin, "replay", "evaluate"}, taskArgs[2:]...)
	out := "the store"
	if c.Output != "" {
		abs, err := filepath.Abs(c.Output)
		if err != nil {
			return err
		}
		out = abs
		args = append(args, "--output", abs)
	}
	if c.StoreOnly {
		args = append(args, "--store-only")
	}
	script := "#!/bin/sh\n# traj replay evaluate " + sub.JobID + ": the report, from the evaluation cache\nexec " + scheduler.ShellJoin(args) + "\n"
	path := filepath.Join(sub.Dir, "report.sh")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		return fmt.Errorf("write sbatch script: %w", err)
	}
	sargs := append([]string{"--dependency=afterany:" + sub.JobID, "--job-name=traj-evaluate-report",
		"--output=" + filepath.Join(sub.Dir, "report.out"), "--chdir=" + sub.Dir}, sbatch...)
	job, err := scheduler.Sbatch(ctx, append(sargs, path)...)
	if err != nil {
		return err
	}
	fmt.Fprintf(g.Stderr, "submitted job %s: the report (%s) once job array %s is done\n", job, out, sub.JobID)
	return nil
}

// wait polls the queue and the cache until sub's tasks left the queue,
// printing a line whenever the counts change.
func (c *ReplayEvaluateCmd) wait(ctx context.Context, g *Globals, share *replay.Share, sub evalarray.Submission) (evalarray.Tasks, error) {
	total := len(share.Plan.Trees)
	last := ""
	poll := max(c.Poll, 100*time.Millisecond)
	for {
		tasks, err := evalarray.State(ctx, sub)
		if err != nil {
			return tasks, err
		}
		line := fmt.Sprintf("trees cached %d/%d · %s", total-len(share.Missing(ctx, nil)), total, tasks.Summary())
		if line != last {
			fmt.Fprintln(g.Stderr, line)
			last = line
		}
		if !tasks.InQueue() {
			return tasks, nil
		}
		select {
		case <-ctx.Done():
			return tasks, fmt.Errorf("wait for job array %s (it goes on; run the command again to wait for it): %w", sub.JobID, ctx.Err())
		case <-time.After(poll):
		}
	}
}

// reportFromCache runs the local evaluate: every tree is in the cache.
func (c *ReplayEvaluateCmd) reportFromCache(ctx context.Context, g *Globals) error {
	local := *c
	local.Executor = "local"
	return local.Run(ctx, g)
}

// taskArgs are the arguments after the traj binary of a task's
// `traj replay evaluate-task`: the same trajectory, store, test paths and
// sandbox provider as this evaluate, paths made absolute for the nodes.
func (c *ReplayEvaluateCmd) taskArgs(paths []string, provider string) ([]string, error) {
	abs := func(p string) (string, error) {
		if p == "" {
			return "", nil
		}
		return filepath.Abs(p)
	}
	args := []string{"replay", "evaluate-task"}
	r, err := refOrAlias(c.Ref, c.TrajectoryID)
	if err != nil {
		return nil, err
	}
	if r != "" {
		if _, err := os.Stat(r); err == nil {
			if r, err = filepath.Abs(r); err != nil {
				return nil, err
			}
		}
		args = append(args, r)
	}
	storeURL := location.Choose(c.Store, os.Getenv)
	if location.Scheme(storeURL) == "" {
		if storeURL, err = filepath.Abs(storeURL); err != nil {
			return nil, err
		}
	}
	args = append(args, "--store", storeURL, "--tests", strings.Join(paths, ","), "--sandbox", provider)
	for flag, p := range map[string]string{"--trace": c.Trace, "--bundle": c.Bundle, "--tests-dir": c.TestsDir} {
		if p, err = abs(p); err != nil {
			return nil, err
		}
		if p != "" {
			args = append(args, flag, p)
		}
	}
	if c.Workers > 0 {
		args = append(args, "--workers", strconv.Itoa(c.Workers))
	}
	return args, nil
}

// writeManifest writes (stdout, or --output) the Indexed Job of the trees
// the cache lacks. The pods read the trajectory by id from the store.
func (c *ReplayEvaluateCmd) writeManifest(ctx context.Context, g *Globals, t *source.Trajectory, share *replay.Share, paths []string, provider string) error {
	missing := share.Missing(ctx, nil)
	if len(missing) == 0 {
		fmt.Fprintf(g.Stderr, "%d trees, every one in the evaluation cache: nothing to run\n", len(share.Plan.Trees))
		return nil
	}
	storeURL := location.Choose(c.Store, os.Getenv)
	folder := location.Scheme(storeURL) == "" || location.Scheme(storeURL) == "file"
	if folder && c.StoreClaim == "" {
		return &exitError{2, fmt.Errorf("the store %q is a folder: pods need --store-claim (a ReadWriteMany PersistentVolumeClaim holding it) or an s3:// store", storeURL)}
	}
	if folder {
		storeURL = scheduler.StoreMountPath
	}
	args := []string{"replay", "evaluate-task", t.ID, "--store", storeURL, "--tests", strings.Join(paths, ","), "--sandbox", provider}
	if c.Workers > 0 {
		args = append(args, "--workers", strconv.Itoa(c.Workers))
	}
	y, err := evalarray.KubeManifest(evalarray.Kube{Name: t.ID, Namespace: c.Namespace, Image: c.Image, StoreClaim: c.StoreClaim,
		Secret: c.Secret, Trees: missing, Tasks: c.Tasks, TaskArgs: args})
	if err != nil {
		return &exitError{2, err}
	}
	if c.Manifest == "" {
		_, err = g.Stdout.Write(y)
		return err
	}
	if err := atomicfile.WriteBytes(c.Manifest, y); err != nil {
		return err
	}
	fmt.Fprintf(g.Stderr, "wrote %s: Indexed Job for %d of %d trees; kubectl apply -f %s, then evaluate with --executor local for the report (every tree from the cache)\n",
		c.Manifest, len(missing), len(share.Plan.Trees), trace.ShellWord(c.Manifest))
	return nil
}

// ReplayEvaluateTaskCmd is what one Slurm array task or Indexed Job pod of
// `traj replay evaluate --executor slurm|kube` runs: its share of the
// trees file, into the store's evaluation cache.
type ReplayEvaluateTaskCmd struct {
	replaySource
	evalFlags
	Trees     string `required:"" type:"existingfile" help:"The trees to evaluate, one a line, in plan order."`
	TaskCount int    `name:"tasks" required:"" help:"Tasks sharing the trees file."`
	Index     int    `help:"This task's index (default: SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX)." default:"-1"`
	ReportDir string `name:"report-dir" type:"path" help:"Write task-<index>.json (counts, error) here when done."`
	// FaultHalt is failure injection for the cluster tests: task T halts
	// after N trees and waits to be killed, so a test can cancel a task
	// part-way without racing its next tree.
	FaultHalt string `name:"fault-halt" hidden:"" env:"TRAJ_FAULT_TASK_HALT" help:"Failure injection: T:N makes task T stop after N trees and wait to be killed."`
}

func (c *ReplayEvaluateTaskCmd) Run(ctx context.Context, g *Globals) error {
	req, err := c.evalFlags.request(g, c.replaySource)
	if err != nil {
		return err
	}
	return usageExit(evalarray.RunTask(ctx, evalarray.Task{Evaluate: req, Trees: c.Trees, Tasks: c.TaskCount, Index: c.Index,
		ReportDir: c.ReportDir, FaultHalt: c.FaultHalt}))
}
