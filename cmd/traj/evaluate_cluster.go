package main

import (
	"context"
	"io"
	"time"

	"github.com/trajlab/traj/orchestrator/batch"
	"github.com/trajlab/traj/orchestrator/evalarray"
	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/evaluate"
	"github.com/trajlab/traj/replay/source"
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

// runCluster evaluates t's trees the cache lacks on a cluster, then (Slurm)
// writes the report from the cache as a local evaluate does.
func (c *ReplayEvaluateCmd) runCluster(ctx context.Context, g *Globals, t *source.Trajectory, e evaluate.Evaluation) error {
	ev, opts := e.Evaluator, e.Options
	ref, _ := refOrAlias(c.Ref, c.TrajectoryID) // checked when t was opened
	report, err := evalarray.Run(ctx, t, ev, opts, evalarray.Request{
		Executor: map[string]batch.Executor{"slurm": batch.Slurm, "kube": batch.Kubernetes}[c.Executor], Tasks: c.Tasks,
		Source: evalarray.Source{ID: t.ID, Ref: ref, Store: c.Store, Trace: c.Trace, Bundle: c.Bundle, TestsDir: c.TestsDir, Task: e.Task,
			Tests: opts.TestPaths, Sandbox: ev.Provider, Workers: c.Workers},
		Work: c.WorkDir, Partition: c.Partition, Sbatch: c.SlurmOpt, Poll: c.Poll, Detach: c.Detach, Output: c.Output, StoreOnly: c.StoreOnly,
		Kube: batch.Kube{Namespace: c.Namespace, Image: c.Image, StoreClaim: c.StoreClaim, Secret: c.Secret}, Manifest: c.Manifest,
		Stdout: g.Stdout, Stderr: g.Stderr, Logger: g.Logger})
	if err != nil || !report {
		return usageExit(err)
	}
	return c.reportFromCache(ctx, g)
}

// reportFromCache runs the local evaluate: every tree is in the cache.
func (c *ReplayEvaluateCmd) reportFromCache(ctx context.Context, g *Globals) error {
	local := *c
	local.Executor = "local"
	return local.Run(ctx, g)
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
	FaultHalt string `name:"fault-halt" hidden:"" env:"TRAJ_FAULT_TASK_HALT" help:"Failure injection: T:N makes task T stop after N trees and wait to be killed."`
}

func (c *ReplayEvaluateTaskCmd) Run(ctx context.Context, g *Globals) error {
	task := evalarray.Task{Trees: c.Trees, Tasks: c.TaskCount, Index: c.Index, ReportDir: c.ReportDir, FaultHalt: c.FaultHalt, Stderr: g.Stderr}
	return usageExit(evalarray.RunTask(ctx, task, func(progress func(replay.Progress)) (*replay.Share, io.Closer, error) {
		t, err := c.openWith(ctx, g, source.Request{Read: source.TraceHeader, LazyHistory: true})
		if err != nil {
			return nil, nil, err
		}
		req, err := c.evalFlags.request(g, c.replaySource)
		if err != nil {
			return nil, t, err
		}
		e, err := evaluate.Shared(ctx, t, req)
		if err != nil {
			return nil, t, err
		}
		ev, opts := e.Evaluator, e.Options
		opts.Progress = progress
		share, err := evalarray.NewShare(ctx, t, ev, opts)
		return share, t, err
	}))
}
