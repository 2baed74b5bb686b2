package main

import (
	"context"

	"github.com/trajlab/traj/orchestrator/handler/record"
)

// TraceFinalizeCmd closes a trajectory that will not continue (its `traj
// run` died): final checkpoint, repo.bundle, session_end interrupted,
// uploads. Exit status: 0 when finalized and uploaded, 1 when it could not
// be (or objects are still not uploaded: `traj sync` retries them), 2 for
// an unknown trajectory.
type TraceFinalizeCmd struct {
	locateFlags
}

func (c *TraceFinalizeCmd) Run(ctx context.Context, g *Globals) error {
	return badExit(record.Finalize(ctx, c.request(g)))
}
