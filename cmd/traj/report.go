package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/report"
	"github.com/trajlab/traj/trace/atomicfile"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/location"
	"github.com/trajlab/traj/trace/store/ref"
)

// ReportCmd summarises every trajectory in a store (or a folder of
// trajectory folders): a table on stdout, and HTML, JSON or CSV files.
type ReportCmd struct {
	Store string `help:"Store URL, or a folder of trajectory folders (default ./runs or TRAJ_STORE)."`
	HTML  string `type:"path" help:"Write a self-contained HTML report (inline SVG charts) here."`
	JSON  string `type:"path" help:"Write the report as JSON here."`
	CSV   string `type:"path" help:"Write one CSV row per trajectory here."`
	Title string `help:"Report title." default:"traj report"`
	// Experiment groups the report by harness × model × task.
	Experiment string `help:"Report one experiment, grouped by harness × model × task: its spec file or its name (from the store's record)." placeholder:"SPEC|NAME"`
	WithReruns bool   `name:"with-reruns" help:"Count reruns and forks in the group statistics (by harness; an experiment's groups and harness comparisons). By default they are left out: a rerun repeats its source, a fork inherits its parts."`
	// labelFlags: given, every trajectory's labels are computed again
	// from its trace with these thresholds (else the evaluation's, or
	// the defaults').
	labelFlags
}

func (c *ReportCmd) Run(ctx context.Context, g *Globals) error {
	if c.Experiment != "" {
		return c.runExperiment(ctx, g)
	}
	raw := location.Choose(c.Store, os.Getenv)
	var protected []string
	switch location.Scheme(raw) {
	case "":
		protected = append(protected, raw)
	case "file":
		if p, err := location.FilePath(raw); err == nil {
			protected = append(protected, p)
		}
	}
	for _, out := range []string{c.HTML, c.JSON, c.CSV} {
		if out == "" {
			continue
		}
		if err := replay.CheckOutput(out, protected); err != nil {
			return usageExit(err)
		}
	}
	labelOpts, err := c.labelFlags.options()
	if err != nil {
		return err
	}
	var (
		trajs []report.Trajectory
		st    store.Store
	)
	if isTrajectoryFolderTree(raw) {
		trajs, err = report.CollectFolders(ctx, raw, g.Logger)
	} else {
		// A report never creates a store: a mistyped folder is an error, not an empty report.
		st, err = location.Open(ctx, raw, location.Options{Logger: g.Logger, MustExist: true})
		if err != nil {
			return &exitError{2, err}
		}
		trajs, err = report.Collect(ctx, st, g.Logger)
	}
	if err != nil {
		return err
	}
	if len(c.Labels) > 0 {
		var from report.Store
		if st != nil {
			from = st
		}
		if err := report.Relabel(ctx, from, trajs, labelOpts, g.Logger); err != nil {
			return err
		}
	}
	r := report.Report{Title: c.Title, Source: raw, Trajectories: trajs, WithDerived: c.WithReruns}
	if st != nil {
		if r.Sweeps, err = report.CollectSweeps(ctx, st, nil, g.Logger); err != nil {
			return err
		}
	}
	for _, out := range []struct {
		path  string
		write func(io.Writer, report.Report) error
	}{{c.HTML, report.WriteHTML}, {c.JSON, report.WriteJSON}, {c.CSV, report.WriteCSV}} {
		if out.path == "" {
			continue
		}
		if err := writeReportFile(out.path, r, out.write); err != nil {
			return err
		}
	}
	return report.WriteText(g.Stdout, r)
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

// writeReportFile renders r with write and writes it atomically to path.
func writeReportFile(path string, r report.Report, write func(io.Writer, report.Report) error) error {
	var b bytes.Buffer
	if err := write(&b, r); err != nil {
		return err
	}
	return atomicfile.WriteBytes(path, b.Bytes())
}

// runExperiment reports one experiment from its summaries.
func (c *ReportCmd) runExperiment(ctx context.Context, g *Globals) error {
	x, err := openExperiment(ctx, g, c.Experiment, c.Store)
	if err != nil {
		return err
	}
	name, st, raw := x.name, x.store, x.storeURL
	slots := make([]report.ExperimentSlot, len(x.cells))
	for i, cell := range x.cells {
		slots[i] = report.ExperimentSlot{Harness: cell.Harness, Model: cell.Model, Task: cell.Task, Variant: cell.Variant(), Repeat: cell.Repeat}
		slots[i].Attempts = x.attemptIDs(cell)
	}
	e, err := report.CollectExperiment(ctx, st, name, slots, report.ExperimentOptions{WithDerived: c.WithReruns}, g.Logger)
	if err != nil {
		return err
	}
	e.Source = raw
	for _, out := range []struct {
		path  string
		write func(io.Writer, *report.Experiment) error
	}{{c.HTML, report.WriteExperimentHTML}, {c.JSON, report.WriteExperimentJSON}} {
		if out.path == "" {
			continue
		}
		var b bytes.Buffer
		if err := out.write(&b, e); err != nil {
			return err
		}
		if err := atomicfile.WriteBytes(out.path, b.Bytes()); err != nil {
			return err
		}
	}
	if c.CSV != "" {
		return &exitError{2, errors.New("--csv is per trajectory: use it without --experiment")}
	}
	return report.WriteExperimentText(g.Stdout, e)
}
