package main

import (
	"context"

	"github.com/trajlab/traj/orchestrator/handler/experiment"
)

// GCCmd removes sandbox folders of finalized trajectories.
type GCCmd struct {
	Store   string `help:"Store URL the trajectories were recorded into (default ./runs or TRAJ_STORE)."`
	WorkDir string `name:"work-dir" help:"Local folder holding trajectories/ and sandboxes/ (default: the store folder if local, else ./runs)." env:"TRAJ_WORK_DIR" type:"path"`
	DryRun  bool   `name:"dry-run" help:"Only list what would be removed and why the rest is kept."`
}

// Help says what is safe.
func (c *GCCmd) Help() string {
	return `A sandbox (workspace copy, harness state) is removed only when its trajectory is
finalized: run.json says finished, the store's trace has its session_end and the store
holds repo.bundle (every checkpoint). Sandboxes of runs that died unfinalized are kept
and listed: resume them (traj run --resume ID) or finalize them (traj trace finalize ID).`
}

func (c *GCCmd) Run(ctx context.Context, g *Globals) error {
	return usageExit(experiment.GC(ctx, experiment.GCRequest{Store: c.Store, WorkDir: c.WorkDir, DryRun: c.DryRun, Stdout: g.Stdout}))
}
