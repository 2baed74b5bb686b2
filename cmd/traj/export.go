package main

import (
	"context"
	"fmt"
	"os"

	"github.com/trajlab/traj/orchestrator/handler/experiment"
	"github.com/trajlab/traj/replay/export"
	"github.com/trajlab/traj/trace/store/location"
)

// ExportCmd writes trajectories out for analysis tools: Parquet tables
// (DuckDB, pandas, polars) or ATIF documents (Harbor). Exit status: 2 for
// bad arguments or references, 1 when a trajectory could not be exported.
type ExportCmd struct {
	Refs       []string `arg:"" optional:"" name:"REF" help:"Trajectories to export: ids in the store, trajectory folders, agent_trace.json paths, s3://…/trajectories/<id> URLs, stores (a folder with trajectories/, file:// or s3:// URL) or folders of trajectory folders."`
	Experiment string   `help:"Also export an experiment's trajectories (every attempt of every slot that ran): its spec file or its name (from the store's record)." placeholder:"SPEC|NAME"`
	Format     string   `required:"" enum:"parquet,atif" help:"parquet: tables trajectories, parts, evaluations, tests, model_calls (one file per trajectory under DIR/<table>/); atif: DIR/<id>/trajectory.json (ATIF v1.7, Harbor)."`
	Out        string   `required:"" type:"path" help:"Output folder; exporting into it again rewrites only trajectories that changed."`
	Store      string   `help:"Store for bare ids: a folder, file:///path or s3://bucket/prefix (default ./runs or TRAJ_STORE)."`
	ValueCap   int      `name:"value-cap" default:"65536" help:"Parquet: cap each text value (tool input and output, text) at this many bytes; the full length is kept beside it. -1: no cap."`
	Full       bool     `help:"Rewrite every trajectory, changed or not."`
	Prune      bool     `help:"Remove exported trajectories the references no longer name."`
	Workers    int      `default:"2" help:"Trajectories exported at once (downloads from a remote store overlap; each holds about one row group in memory)."`
}

func (c *ExportCmd) Run(ctx context.Context, g *Globals) error {
	opts := export.Options{
		Format: c.Format, Out: c.Out, StoreURL: location.Choose(c.Store, os.Getenv),
		ValueCap: c.ValueCap, Full: c.Full, Prune: c.Prune, Workers: c.Workers, Version: versionString(), Logger: g.Logger,
	}
	if c.Experiment != "" {
		x, err := experiment.Find(ctx, c.Experiment, c.Store, g.Logger)
		if err != nil {
			return usageExit(err)
		}
		opts.StoreURL, opts.StoreIDs = x.StoreURL, x.IDs()
	} else if len(c.Refs) == 0 {
		return &exitError{2, fmt.Errorf("name what to export: REF… or --experiment (REF: %s)", export.Forms)}
	}
	sum, err := export.Run(ctx, c.Refs, opts)
	if sum != nil {
		sum.WriteText(g.Stdout)
	}
	return usageExit(err)
}
