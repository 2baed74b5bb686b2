package main

import (
	"context"
	"errors"

	"github.com/trajlab/traj/orchestrator/handler/experiment"
)

// ExperimentCmd runs many trajectories from one spec.
type ExperimentCmd struct {
	Run      ExperimentRunCmd      `cmd:"" help:"Run every trajectory of an experiment spec that is not done: start, resume the dead, relaunch the failed."`
	Status   ExperimentStatusCmd   `cmd:"" help:"Show each trajectory of an experiment: attempts, state, end reason (and the scheduler's view for Slurm)."`
	Check    ExperimentCheckCmd    `cmd:"" help:"Check a spec and list the trajectory ids it expands to."`
	Manifest ExperimentManifestCmd `cmd:"" help:"Write the experiment as a Kubernetes Indexed Job manifest (kubectl apply -f)."`
	Task     ExperimentTaskCmd     `cmd:"" hidden:"" help:"Run one slot of an experiment (what a Slurm array task or a Kubernetes pod runs)."`
}

// specFlags are what every experiment command takes.
type specFlags struct {
	Spec  string `arg:"" help:"Experiment spec (YAML)." type:"existingfile"`
	Store string `help:"Store URL overriding the spec's (default: the spec's, else TRAJ_STORE, else ./runs)."`
}

func (f specFlags) request(g *Globals) experiment.Request {
	return experiment.Request{Spec: f.Spec, Store: f.Store, Stdout: g.Stdout, Stderr: g.Stderr, Logger: g.Logger,
		Terminal: isTerminal(g.Stderr), Environments: g.Environments}
}

// experimentExit maps the handler's outcomes to the exit statuses: 3 when
// a trajectory is not done, 130 when interrupted, 2 for a bad request.
func experimentExit(err error) error {
	switch {
	case errors.Is(err, experiment.ErrNotDone):
		return &exitError{3, nil}
	case errors.Is(err, experiment.ErrInterrupted):
		return &exitError{130, nil}
	}
	return usageExit(err)
}

// ExperimentRunCmd runs an experiment.
type ExperimentRunCmd struct {
	specFlags
	Executor string `help:"Where trajectories run: local (this machine) or slurm (one job array)." enum:"local,slurm" default:"local"`
	Parallel int    `help:"Local: trajectories at once (default: from cores and memory and the spec's limits)."`
	Quiet    bool   `help:"No live status line; only launches, ends and the summary."`
}

// Help explains re-running.
func (c *ExperimentRunCmd) Help() string {
	return `Running a spec again is safe: finished trajectories are skipped, trajectories whose
process died (even kill -9 of the whole experiment) are resumed with traj run --resume,
and trajectories that failed (relaunch.on) get a new attempt with id <id>-a<N> up to
relaunch.max_attempts; every attempt's record is kept. Exit status: 0 when every
trajectory is done, 3 when some failed or could not run, 130 when interrupted.`
}

func (c *ExperimentRunCmd) Run(ctx context.Context, g *Globals) error {
	return experimentExit(experiment.Run(ctx, experiment.RunRequest{Request: c.request(g),
		Executor: c.Executor, Parallel: c.Parallel, Live: !c.Quiet && isTerminal(g.Stderr)}))
}

// ExperimentStatusCmd shows an experiment's state.
type ExperimentStatusCmd struct{ specFlags }

func (c *ExperimentStatusCmd) Run(ctx context.Context, g *Globals) error {
	return usageExit(experiment.Status(ctx, c.request(g)))
}

// ExperimentCheckCmd checks a spec.
type ExperimentCheckCmd struct{ specFlags }

func (c *ExperimentCheckCmd) Run(ctx context.Context, g *Globals) error {
	return usageExit(experiment.Check(ctx, c.request(g)))
}

// ExperimentTaskCmd is what one Slurm array task or Kubernetes pod runs:
// the slot of one cell, advanced as the local executor would.
type ExperimentTaskCmd struct {
	specFlags
	Cells string `help:"File listing cell indices, one a line; the task index picks the line (Slurm)." type:"existingfile"`
	Index int    `help:"Task index (default: SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX)." default:"-1"`
}

func (c *ExperimentTaskCmd) Run(ctx context.Context, g *Globals) error {
	return experimentExit(experiment.Task(ctx, experiment.TaskRequest{Request: c.request(g), Cells: c.Cells, Index: c.Index}))
}

// ExperimentManifestCmd writes the experiment as a Kubernetes Indexed Job.
type ExperimentManifestCmd struct {
	specFlags
	Executor string `help:"Manifest kind: kubernetes (a ConfigMap with the spec and an Indexed Job, one index per trajectory slot)." enum:"kubernetes" default:"kubernetes"`
	Out      string `help:"Write the manifest here instead of stdout." type:"path"`
}

func (c *ExperimentManifestCmd) Run(ctx context.Context, g *Globals) error {
	return usageExit(experiment.Manifest(ctx, experiment.ManifestRequest{Request: c.request(g), Out: c.Out}))
}
