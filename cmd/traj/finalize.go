package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/trajlab/traj/orchestrator/folder"
	"github.com/trajlab/traj/orchestrator/handler/record"
	"github.com/trajlab/traj/orchestrator/recovery"
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
	l, err := c.locate(ctx, g)
	if err != nil {
		return err
	}
	res, err := recovery.Finalize(ctx, l, recovery.FinalizeOptions{Logger: g.Logger})
	if errors.Is(err, folder.ErrStillRunning) {
		return &exitError{1, err}
	}
	if res == nil {
		return err
	}
	record.SaveSummary(ctx, g.Logger, l.Store, l.ID)
	if res.AlreadyFinished {
		fmt.Fprintf(g.Stdout, "trajectory %s was already finished\n", l.ID)
	} else {
		record.PrintSummary(g.Stdout, &res.Result)
	}
	printSync(g.Stdout, l, res.Sync)
	if err != nil {
		return err
	}
	if e := res.Sync.Err(); e != nil {
		return &exitError{1, e}
	}
	return nil
}
