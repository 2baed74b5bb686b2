package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/trajlab/traj/orchestrator/batch"
	"github.com/trajlab/traj/orchestrator/experiment"
	"github.com/trajlab/traj/replay/evaluate"
	"github.com/trajlab/traj/replay/source"
	"github.com/trajlab/traj/trace/store"
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

// load reads and checks the spec, including against the flags traj run
// accepts now, and opens its store.
func (f *specFlags) load(ctx context.Context) (*experiment.Spec, *experiment.Where, string, map[string]bool, error) {
	s, err := experiment.Load(f.Spec)
	if err != nil {
		return nil, nil, "", nil, &exitError{2, err}
	}
	bin, err := os.Executable()
	if err != nil {
		return nil, nil, "", nil, fmt.Errorf("find the traj executable: %w", err)
	}
	flags, err := experiment.RunFlags(ctx, bin)
	if err != nil {
		return nil, nil, "", nil, err
	}
	if err := s.CheckRunFlags(flags); err != nil {
		return nil, nil, "", nil, &exitError{2, err}
	}
	if f.Store != "" {
		s.Store = f.Store
	}
	w, err := experiment.Open(ctx, s, "")
	if err != nil {
		return nil, nil, "", nil, &exitError{2, err}
	}
	return s, w, bin, flags, nil
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
	s, w, bin, flags, err := c.load(ctx)
	if err != nil {
		return err
	}
	if c.Executor == "slurm" {
		return runSlurm(ctx, g, s, w, bin, flags, c.Store)
	}
	parallel := c.Parallel
	if parallel <= 0 {
		parallel = experiment.DefaultParallel(s)
	}
	cells := s.Cells()
	fmt.Fprintf(g.Stderr, "experiment %s: %d trajectories, %d at once, store %s\n", s.Name, len(cells), parallel, w.StoreURL)
	view := experiment.NewView(g.Stderr, len(cells), !c.Quiet && isTerminal(g.Stderr))
	r := &experiment.Runner{Spec: s, Where: w, TrajBin: bin, Flags: flags, Events: view.Report, Logger: g.Logger}
	out, err := experiment.RunLocal(ctx, r, parallel)
	view.Close()
	if out == nil {
		return err
	}
	if err := experiment.WriteSummary(g.Stdout, out.Slots); err != nil {
		return err
	}
	for _, e := range out.SortedErrs() {
		fmt.Fprintln(g.Stderr, "traj: "+e)
	}
	switch {
	case errors.Is(err, context.Canceled):
		return &exitError{130, nil}
	case err != nil:
		return err
	}
	counts := out.Counts()
	if counts[experiment.ActDone] != len(cells) {
		return &exitError{3, nil}
	}
	return nil
}

// ExperimentStatusCmd shows an experiment's state.
type ExperimentStatusCmd struct {
	specFlags
}

func (c *ExperimentStatusCmd) Run(ctx context.Context, g *Globals) error {
	s, w, _, _, err := c.load(ctx)
	if err != nil {
		return err
	}
	slots, err := experiment.Slots(ctx, w, s)
	if err != nil {
		return err
	}
	if err := experiment.WriteQueue(ctx, g.Stdout, g.Stderr, w, s, slots); err != nil {
		return err
	}
	return experiment.WriteSummary(g.Stdout, slots)
}

// ExperimentCheckCmd checks a spec.
type ExperimentCheckCmd struct {
	specFlags
}

func (c *ExperimentCheckCmd) Run(ctx context.Context, g *Globals) error {
	s, _, _, flags, err := c.load(ctx)
	if err != nil {
		return err
	}
	for _, cell := range s.Cells() {
		fmt.Fprintf(g.Stdout, "%s\t%s\ttraj %q\n", cell.ID, cell.Group(), s.RunArgs(cell, cell.ID, flags))
	}
	return nil
}

// ExperimentTaskCmd is what one Slurm array task or Kubernetes pod runs:
// the slot of one cell, advanced as the local executor would.
type ExperimentTaskCmd struct {
	specFlags
	Cells string `help:"File listing cell indices, one a line; the task index picks the line (Slurm)." type:"existingfile"`
	Index int    `help:"Task index (default: SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX)." default:"-1"`
}

func (c *ExperimentTaskCmd) Run(ctx context.Context, g *Globals) error {
	s, w, bin, flags, err := c.load(ctx)
	if err != nil {
		return err
	}
	cell, err := experiment.TaskCell(s, c.Cells, c.Index, os.Getenv)
	if err != nil {
		return &exitError{2, err}
	}
	r := &experiment.Runner{Spec: s, Where: w, TrajBin: bin, Flags: flags, Logger: g.Logger,
		Events: func(ev experiment.Event) {
			switch ev.Kind {
			case "launch":
				g.Logger.Info("launch", "trajectory", ev.ID, "action", ev.Action, "attempt", ev.Attempt)
			case "exit":
				g.Logger.Info("exit", "trajectory", ev.ID, "code", ev.ExitCode, "next", ev.Slot.Next)
			}
		}}
	slot, err := r.Advance(ctx, cell)
	if slot != nil {
		if werr := experiment.WriteSummary(g.Stdout, []*experiment.Slot{slot}); werr != nil {
			return werr
		}
	}
	if err != nil {
		return err
	}
	if slot.Next != experiment.ActDone {
		return &exitError{3, nil}
	}
	if s.Evaluate != nil && slot.Latest() != nil {
		if os.Getenv("SLURM_ARRAY_TASK_ID") == "" {
			g.Logger.Warn("evaluate: only Slurm tasks evaluate the trajectory they finish; run traj replay evaluate for it", "trajectory", slot.Latest().ID)
			return nil
		}
		return evaluateFinished(ctx, g, s, w, slot.Latest().ID)
	}
	return nil
}

// evaluateFinished is the spec's evaluate for a trajectory a Slurm task
// finished: its trees the cache lacks go to an array of their own and a
// job waiting for it writes the report beside the trajectory in the store
// (the experiment's folder may be inside the store, where no output may
// go); this task does not wait.
func evaluateFinished(ctx context.Context, g *Globals, s *experiment.Spec, w *experiment.Where, id string) error {
	req := evaluate.Request{Source: source.Request{Ref: id, StoreURL: w.StoreURL}, StoreOnly: true,
		Tests: s.Evaluate.Tests, TestsDir: os.Getenv("TRAJ_TESTS_DIR"), Environments: g.Environments,
		Logger: g.Logger, Stderr: g.Stderr}
	cluster := clusterFlags{Executor: "slurm", Detach: true, WorkDir: filepath.Join(w.LocalDir(s.Name), "evaluations", id), Tasks: max(s.Evaluate.Tasks, 1), SlurmOpt: experiment.SbatchResources(s), Poll: 5 * time.Second}
	if err := usageExit(evaluate.Run(ctx, cluster.request(g, req))); err != nil {
		return fmt.Errorf("evaluate %s: %w", id, err)
	}
	return nil
}

// runSlurm submits the slots that need work as one job array.
func runSlurm(ctx context.Context, g *Globals, s *experiment.Spec, w *experiment.Where, bin string, flags map[string]bool, storeOverride string) error {
	if err := experiment.SaveRecord(ctx, w, s); err != nil {
		return err
	}
	slots, err := experiment.Slots(ctx, w, s)
	if err != nil {
		return err
	}
	if s.Evaluate != nil {
		evaluateUnevaluated(ctx, g, s, w, slots)
	}
	r := &experiment.Runner{Spec: s, Where: w, TrajBin: bin, Flags: flags, Logger: g.Logger}
	sub, err := experiment.SubmitSlurm(ctx, r, slots, storeOverride)
	if err != nil {
		return err
	}
	if sub == nil {
		fmt.Fprintf(g.Stdout, "experiment %s: nothing to submit (every trajectory is done, failed or queued)\n", s.Name)
		return experiment.WriteSummary(g.Stdout, slots)
	}
	fmt.Fprintf(g.Stdout, "experiment %s: submitted job array %s with %d tasks; follow with: traj experiment status %s\n",
		s.Name, sub.JobID, len(sub.Cells), s.Path)
	return nil
}

// evaluateUnevaluated submits the evaluation of every done trajectory
// whose evaluation.json the store lacks (its task's evaluation failed, or
// its report job has not run yet: a duplicate then costs cache reads). A
// failure is a warning: the trajectories stay as they are.
func evaluateUnevaluated(ctx context.Context, g *Globals, s *experiment.Spec, w *experiment.Where, slots []*experiment.Slot) {
	for _, slot := range slots {
		if slot.Next != experiment.ActDone || slot.Latest() == nil {
			continue
		}
		id := slot.Latest().ID
		_, err := w.Store.Stat(ctx, store.EvaluationKey(id))
		if !errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err := evaluateFinished(ctx, g, s, w, id); err != nil {
			g.Logger.Warn("evaluate a finished trajectory", "trajectory", id, "err", err)
		}
	}
}

// ExperimentManifestCmd writes the experiment as a Kubernetes Indexed Job.
type ExperimentManifestCmd struct {
	specFlags
	Executor string `help:"Manifest kind: kubernetes (a ConfigMap with the spec and an Indexed Job, one index per trajectory slot)." enum:"kubernetes" default:"kubernetes"`
	Out      string `help:"Write the manifest here instead of stdout." type:"path"`
}

func (c *ExperimentManifestCmd) Run(ctx context.Context, g *Globals) error {
	s, err := experiment.Load(c.Spec)
	if err != nil {
		return &exitError{2, err}
	}
	if c.Store != "" {
		s.Store = c.Store
	}
	text, err := os.ReadFile(c.Spec)
	if err != nil {
		return err
	}
	a, err := experiment.KubeArray(s, text)
	if err != nil {
		return &exitError{2, err}
	}
	if c.Out == "" {
		_, err = batch.Submit(ctx, a, g.Stdout)
		return err
	}
	var y bytes.Buffer
	sub, err := batch.Submit(ctx, a, &y)
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.Out, y.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	fmt.Fprintf(g.Stdout, "wrote %s: Indexed Job %s with %d completions; kubectl apply -f %s, then %s\n", c.Out, sub.JobID, sub.Tasks, c.Out, sub.Poll)
	return nil
}
