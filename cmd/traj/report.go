package main

import (
	"context"
	"os"

	"github.com/trajlab/traj/orchestrator/handler/experiment"
	"github.com/trajlab/traj/replay/report"
	"github.com/trajlab/traj/trace/store/location"
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
	req := report.Request{Store: location.Choose(c.Store, os.Getenv), HTML: c.HTML, JSON: c.JSON, CSV: c.CSV, Title: c.Title,
		WithDerived: c.WithReruns, Labels: c.Labels, Stdout: g.Stdout, Logger: g.Logger}
	if c.Experiment != "" {
		x, err := experiment.Find(ctx, c.Experiment, c.Store, g.Logger)
		if err != nil {
			return usageExit(err)
		}
		req.Experiment = x.Report()
	}
	return usageExit(report.Run(ctx, req))
}
