package experiment

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/trajlab/traj/environment/evaluation/registry"
	"github.com/trajlab/traj/orchestrator/batch"
	xp "github.com/trajlab/traj/orchestrator/experiment"
	"github.com/trajlab/traj/replay"
)

// ErrNotDone is Run's and Task's error when some trajectory is not done
// (failed, or could not run): `traj experiment run` exits 3 for it.
var ErrNotDone = errors.New("not every trajectory is done")

// ErrInterrupted is Run's error when ctx ended while trajectories ran
// (the summary is written): `traj experiment run` exits 130 for it.
var ErrInterrupted = errors.New("experiment interrupted")

// Request names an experiment: its spec and where its handler writes.
// Errors a request causes (a bad spec, store or flag) match
// replay.ErrUsage.
type Request struct {
	// Spec is the spec file (YAML); Store, when set, overrides its store.
	Spec  string
	Store string
	// TrajBin is the traj executable each trajectory runs ("": this
	// process's).
	TrajBin string
	// Stdout gets the summaries and listings, Stderr the progress, Logger
	// the rest.
	Stdout, Stderr io.Writer
	Logger         *slog.Logger
	// Terminal: Stderr is a terminal (an evaluation's progress is
	// redrawn in place).
	Terminal bool
	// Environments is the registry a finished trajectory's evaluation
	// picks its environment from.
	Environments registry.Environments
	// Getenv reads SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX and
	// TRAJ_TESTS_DIR (nil: os.Getenv).
	Getenv func(string) string
}

func (r *Request) defaults() {
	if r.Stdout == nil {
		r.Stdout = io.Discard
	}
	if r.Stderr == nil {
		r.Stderr = io.Discard
	}
	if r.Logger == nil {
		r.Logger = slog.New(slog.DiscardHandler)
	}
	if r.Getenv == nil {
		r.Getenv = os.Getenv
	}
}

// loaded is an experiment ready to run: its checked spec, its store and
// folder, the traj executable and the flags its `traj run` accepts.
type loaded struct {
	Request
	spec  *xp.Spec
	where *xp.Where
	flags map[string]bool
}

// load reads and checks the spec, including against the flags traj run
// accepts now, and opens its store.
func load(ctx context.Context, r Request) (*loaded, error) {
	r.defaults()
	s, err := xp.Load(r.Spec)
	if err != nil {
		return nil, replay.Usage(err)
	}
	if r.TrajBin == "" {
		if r.TrajBin, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("find the traj executable: %w", err)
		}
	}
	flags, err := xp.RunFlags(ctx, r.TrajBin)
	if err != nil {
		return nil, err
	}
	if err := s.CheckRunFlags(flags); err != nil {
		return nil, replay.Usage(err)
	}
	if r.Store != "" {
		s.Store = r.Store
	}
	w, err := xp.Open(ctx, s, "")
	if err != nil {
		return nil, replay.Usage(err)
	}
	return &loaded{Request: r, spec: s, where: w, flags: flags}, nil
}

func (l *loaded) runner(events func(xp.Event)) *xp.Runner {
	return &xp.Runner{Spec: l.spec, Where: l.where, TrajBin: l.TrajBin, Flags: l.flags, Events: events, Logger: l.Logger}
}

// RunRequest is `traj experiment run`.
type RunRequest struct {
	Request
	// Executor is where trajectories run: "local" (this machine, the
	// default) or "slurm" (one job array).
	Executor string
	// Parallel is how many trajectories run at once here (0: from cores,
	// memory and the spec's limits).
	Parallel int
	// Live redraws a status line on Stderr (a terminal).
	Live bool
}

// Run runs every trajectory of the experiment that is not done: here, or
// submitted as one Slurm job array. Here, it writes the summary, then
// returns ErrInterrupted or ErrNotDone when the run did not finish them.
func Run(ctx context.Context, r RunRequest) error {
	l, err := load(ctx, r.Request)
	if err != nil {
		return err
	}
	if r.Executor == "slurm" {
		return l.runSlurm(ctx)
	}
	parallel := r.Parallel
	if parallel <= 0 {
		parallel = xp.DefaultParallel(l.spec)
	}
	cells := l.spec.Cells()
	fmt.Fprintf(l.Stderr, "experiment %s: %d trajectories, %d at once, store %s\n", l.spec.Name, len(cells), parallel, l.where.StoreURL)
	view := xp.NewView(l.Stderr, len(cells), r.Live)
	out, err := xp.RunLocal(ctx, l.runner(view.Report), parallel)
	view.Close()
	if out == nil {
		return err
	}
	if err := xp.WriteSummary(l.Stdout, out.Slots); err != nil {
		return err
	}
	for _, e := range out.SortedErrs() {
		fmt.Fprintln(l.Stderr, "traj: "+e)
	}
	switch {
	case errors.Is(err, context.Canceled):
		return ErrInterrupted
	case err != nil:
		return err
	}
	if out.Counts()[xp.ActDone] != len(cells) {
		return ErrNotDone
	}
	return nil
}

// runSlurm submits the slots that need work as one job array.
func (l *loaded) runSlurm(ctx context.Context) error {
	s, w := l.spec, l.where
	if err := xp.SaveRecord(ctx, w, s); err != nil {
		return err
	}
	slots, err := xp.Slots(ctx, w, s)
	if err != nil {
		return err
	}
	if s.Evaluate != nil {
		l.evaluateUnevaluated(ctx, slots)
	}
	sub, err := xp.SubmitSlurm(ctx, l.runner(nil), slots, l.Store)
	if err != nil {
		return err
	}
	if sub == nil {
		fmt.Fprintf(l.Stdout, "experiment %s: nothing to submit (every trajectory is done, failed or queued)\n", s.Name)
		return xp.WriteSummary(l.Stdout, slots)
	}
	fmt.Fprintf(l.Stdout, "experiment %s: submitted job array %s with %d tasks; follow with: traj experiment status %s\n",
		s.Name, sub.JobID, len(sub.Cells), s.Path)
	return nil
}

// Status writes each trajectory slot's state (and the scheduler's view
// of a Slurm experiment), then the summary.
func Status(ctx context.Context, r Request) error {
	l, err := load(ctx, r)
	if err != nil {
		return err
	}
	slots, err := xp.Slots(ctx, l.where, l.spec)
	if err != nil {
		return err
	}
	if err := xp.WriteQueue(ctx, l.Stdout, l.Stderr, l.where, l.spec, slots); err != nil {
		return err
	}
	return xp.WriteSummary(l.Stdout, slots)
}

// Check checks the spec and lists its trajectory ids, groups and
// `traj run` arguments.
func Check(ctx context.Context, r Request) error {
	l, err := load(ctx, r)
	if err != nil {
		return err
	}
	for _, cell := range l.spec.Cells() {
		fmt.Fprintf(l.Stdout, "%s\t%s\ttraj %q\n", cell.ID, cell.Group(), l.spec.RunArgs(cell, cell.ID, l.flags))
	}
	return nil
}

// TaskRequest is what one Slurm array task or Kubernetes pod runs.
type TaskRequest struct {
	Request
	// Cells is the file listing cell indices, one a line; Index picks the
	// line (-1: SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX).
	Cells string
	Index int
}

// Task advances the slot of one cell as the local executor would, writes
// its summary, and (a Slurm task with the spec's evaluate) submits the
// evaluation of the trajectory it finished. ErrNotDone: the slot is not
// done.
func Task(ctx context.Context, r TaskRequest) error {
	l, err := load(ctx, r.Request)
	if err != nil {
		return err
	}
	cell, err := xp.TaskCell(l.spec, r.Cells, r.Index, l.Getenv)
	if err != nil {
		return replay.Usage(err)
	}
	slot, err := l.runner(func(ev xp.Event) {
		switch ev.Kind {
		case "launch":
			l.Logger.Info("launch", "trajectory", ev.ID, "action", ev.Action, "attempt", ev.Attempt)
		case "exit":
			l.Logger.Info("exit", "trajectory", ev.ID, "code", ev.ExitCode, "next", ev.Slot.Next)
		}
	}).Advance(ctx, cell)
	if slot != nil {
		if werr := xp.WriteSummary(l.Stdout, []*xp.Slot{slot}); werr != nil {
			return werr
		}
	}
	if err != nil {
		return err
	}
	if slot.Next != xp.ActDone {
		return ErrNotDone
	}
	if l.spec.Evaluate != nil && slot.Latest() != nil {
		if l.Getenv("SLURM_ARRAY_TASK_ID") == "" {
			l.Logger.Warn("evaluate: only Slurm tasks evaluate the trajectory they finish; run traj replay evaluate for it", "trajectory", slot.Latest().ID)
			return nil
		}
		return l.evaluateFinished(ctx, slot.Latest().ID)
	}
	return nil
}

// ManifestRequest is `traj experiment manifest`.
type ManifestRequest struct {
	Request
	// Out is the manifest's file ("": Stdout).
	Out string
}

// Manifest writes the experiment as a Kubernetes Indexed Job manifest (a
// ConfigMap holding the spec and the Job) and, into a file, says how to
// apply and follow it.
func Manifest(ctx context.Context, r ManifestRequest) error {
	r.defaults()
	s, err := xp.Load(r.Spec)
	if err != nil {
		return replay.Usage(err)
	}
	if r.Store != "" {
		s.Store = r.Store
	}
	text, err := os.ReadFile(r.Spec)
	if err != nil {
		return err
	}
	a, err := xp.KubeArray(s, text)
	if err != nil {
		return replay.Usage(err)
	}
	if r.Out == "" {
		_, err = batch.Submit(ctx, a, r.Stdout)
		return err
	}
	var y bytes.Buffer
	sub, err := batch.Submit(ctx, a, &y)
	if err != nil {
		return err
	}
	if err := os.WriteFile(r.Out, y.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	fmt.Fprintf(r.Stdout, "wrote %s: Indexed Job %s with %d completions; kubectl apply -f %s, then %s\n", r.Out, sub.JobID, sub.Tasks, r.Out, sub.Poll)
	return nil
}
