package main

import (
	"context"
	"errors"

	"github.com/trajlab/traj/orchestrator/handler/record"
)

// locateFlags name a trajectory recorded on this machine, as `traj run`
// was given them, or by its folder.
type locateFlags struct {
	ID      string `arg:"" name:"ref" help:"Trajectory recorded on this machine: its id (with --work-dir or --store as for traj run), its folder <work-dir>/trajectories/<id>, or its agent_trace.json."`
	Store   string `help:"Store URL (default: the store the run used, from run.json; else TRAJ_STORE, else ./runs)."`
	WorkDir string `name:"work-dir" help:"Folder holding trajectories/<id> (default: the store folder if local, else ./runs)." env:"TRAJ_WORK_DIR" type:"path"`
}

func (f locateFlags) request(g *Globals) record.Located {
	return record.Located{Ref: f.ID, Store: f.Store, WorkDir: f.WorkDir, Stdout: g.Stdout, Logger: g.Logger}
}

// badExit maps a record handler's BadRequest to exit status 2.
func badExit(err error) error {
	if bad := (*record.BadRequest)(nil); errors.As(err, &bad) {
		return &exitError{2, err}
	}
	return err
}

// SyncCmd uploads what a trajectory folder holds and its store lacks: for
// runs recorded while the store was unreachable. Exit status: 0 when
// everything is in the store, 1 when objects are still missing (listed;
// run it again later), 2 for an unknown trajectory.
type SyncCmd struct {
	locateFlags
}

func (c *SyncCmd) Run(ctx context.Context, g *Globals) error {
	return badExit(record.Sync(ctx, c.request(g)))
}
