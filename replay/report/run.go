package report

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/labels"
	"github.com/trajlab/traj/trace/atomicfile"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/location"
	"github.com/trajlab/traj/trace/store/ref"
)

// Request is `traj report`: what to summarise and where the report goes.
// Errors the request causes (an output inside the store, bad label
// thresholds, an unknown store) match replay.ErrUsage.
type Request struct {
	// Store is a store URL or a folder of trajectory folders (as chosen:
	// location.Choose).
	Store string
	// HTML, JSON and CSV, when set, are files the report is also written
	// to (atomically); the text table goes to Stdout.
	HTML, JSON, CSV string
	Title           string
	// WithDerived counts reruns and forks in the group statistics.
	WithDerived bool
	// Labels, when given, are failure-label thresholds (NAME=VALUE,
	// labels.ParseSettings): every trajectory's labels are computed again
	// from its trace with them.
	Labels map[string]string
	// Experiment, when set, reports one experiment (grouped by harness ×
	// model × task) instead of the store; Store, CSV and Labels are then
	// not read.
	Experiment *ExperimentRequest
	Stdout     io.Writer
	Logger     *slog.Logger
}

// ExperimentRequest is an experiment to report: its name, store and
// trajectory slots (the orchestrator's experiment handler finds them).
type ExperimentRequest struct {
	Name     string
	Store    store.Store
	StoreURL string
	Slots    []ExperimentSlot
}

// Run collects the trajectories the request names and writes the report.
func Run(ctx context.Context, r Request) error {
	if r.Stdout == nil {
		r.Stdout = io.Discard
	}
	if r.Experiment != nil {
		return r.runExperiment(ctx)
	}
	var protected []string
	switch location.Scheme(r.Store) {
	case "":
		protected = append(protected, r.Store)
	case "file":
		if p, err := location.FilePath(r.Store); err == nil {
			protected = append(protected, p)
		}
	}
	for _, out := range []string{r.HTML, r.JSON, r.CSV} {
		if out == "" {
			continue
		}
		if err := replay.CheckOutput(out, protected); err != nil {
			return err
		}
	}
	labelOpts, err := labels.ParseSettings(r.Labels)
	if err != nil {
		return replay.UsageError("--labels: %v", err)
	}
	var (
		trajs []Trajectory
		st    store.Store
	)
	if isTrajectoryFolderTree(r.Store) {
		trajs, err = CollectFolders(ctx, r.Store, r.Logger)
	} else {
		// A report never creates a store: a mistyped folder is an error, not an empty report.
		st, err = location.Open(ctx, r.Store, location.Options{Logger: r.Logger, MustExist: true})
		if err != nil {
			return replay.Usage(err)
		}
		trajs, err = Collect(ctx, st, r.Logger)
	}
	if err != nil {
		return err
	}
	if len(r.Labels) > 0 {
		var from Store
		if st != nil {
			from = st
		}
		if err := Relabel(ctx, from, trajs, labelOpts, r.Logger); err != nil {
			return err
		}
	}
	rep := Report{Title: r.Title, Source: r.Store, Trajectories: trajs, WithDerived: r.WithDerived}
	if st != nil {
		if rep.Sweeps, err = CollectSweeps(ctx, st, nil, r.Logger); err != nil {
			return err
		}
	}
	for _, out := range []struct {
		path  string
		write func(io.Writer, Report) error
	}{{r.HTML, WriteHTML}, {r.JSON, WriteJSON}, {r.CSV, WriteCSV}} {
		if err := writeFile(out.path, rep, out.write); err != nil {
			return err
		}
	}
	return WriteText(r.Stdout, rep)
}

// isTrajectoryFolderTree reports whether raw is a local folder that is not
// a store (no trajectories/ inside) but holds trajectory folders.
func isTrajectoryFolderTree(raw string) bool {
	if location.Scheme(raw) != "" {
		return false
	}
	if fi, err := os.Stat(raw); err != nil || !fi.IsDir() {
		return false
	}
	return !ref.IsStoreFolder(raw)
}

// writeFile renders v with write and writes it atomically to path ("":
// nothing).
func writeFile[T any](path string, v T, write func(io.Writer, T) error) error {
	if path == "" {
		return nil
	}
	var b bytes.Buffer
	if err := write(&b, v); err != nil {
		return err
	}
	return atomicfile.WriteBytes(path, b.Bytes())
}

// runExperiment reports one experiment from its summaries.
func (r Request) runExperiment(ctx context.Context) error {
	x := r.Experiment
	e, err := CollectExperiment(ctx, x.Store, x.Name, x.Slots, ExperimentOptions{WithDerived: r.WithDerived}, r.Logger)
	if err != nil {
		return err
	}
	e.Source = x.StoreURL
	for _, out := range []struct {
		path  string
		write func(io.Writer, *Experiment) error
	}{{r.HTML, WriteExperimentHTML}, {r.JSON, WriteExperimentJSON}} {
		if err := writeFile(out.path, e, out.write); err != nil {
			return err
		}
	}
	if r.CSV != "" {
		return replay.Usage(fmt.Errorf("--csv is per trajectory: use it without --experiment"))
	}
	return WriteExperimentText(r.Stdout, e)
}
