package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/trajlab/traj/orchestrator/folder"
	"github.com/trajlab/traj/orchestrator/recovery"
	"github.com/trajlab/traj/trace"
)

// locateFlags name a trajectory recorded on this machine, as `traj run`
// was given them, or by its folder.
type locateFlags struct {
	ID      string `arg:"" name:"ref" help:"Trajectory recorded on this machine: its id (with --work-dir or --store as for traj run), its folder <work-dir>/trajectories/<id>, or its agent_trace.json."`
	Store   string `help:"Store URL (default: the store the run used, from run.json; else TRAJ_STORE, else ./runs)."`
	WorkDir string `name:"work-dir" help:"Folder holding trajectories/<id> (default: the store folder if local, else ./runs)." env:"TRAJ_WORK_DIR" type:"path"`
}

func (f locateFlags) locate(ctx context.Context, g *Globals) (*folder.Located, error) {
	id, work, err := folder.SplitRef(f.ID, f.WorkDir)
	if err != nil {
		return nil, &exitError{2, err}
	}
	l, err := folder.Locate(ctx, folder.LocateOptions{ID: id, Store: f.Store, WorkDir: work, Logger: g.Logger})
	if err != nil {
		return nil, &exitError{2, err}
	}
	return l, nil
}

// SyncCmd uploads what a trajectory folder holds and its store lacks: for
// runs recorded while the store was unreachable. Exit status: 0 when
// everything is in the store, 1 when objects are still missing (listed;
// run it again later), 2 for an unknown trajectory.
type SyncCmd struct {
	locateFlags
}

func (c *SyncCmd) Run(ctx context.Context, g *Globals) error {
	l, err := c.locate(ctx, g)
	if err != nil {
		return err
	}
	rep, err := recovery.Sync(ctx, l, g.Logger)
	if errors.Is(err, folder.ErrStillRunning) {
		return &exitError{1, err}
	}
	if err != nil {
		return err
	}
	printSync(g.Stdout, l, rep)
	if rep.Err() != nil {
		return &exitError{1, rep.Err()}
	}
	return nil
}

func printSync(w io.Writer, l *folder.Located, rep recovery.SyncReport) {
	if rep.InPlace {
		fmt.Fprintf(w, "trajectory %s: the store is the trajectory folder (%s); nothing to upload\n", l.ID, l.Dir)
		return
	}
	if len(rep.Uploaded) == 0 && len(rep.Failed) == 0 {
		fmt.Fprintf(w, "trajectory %s → %s: nothing to do, the store holds all %d objects\n", l.ID, l.Store.URI(""), len(rep.Unchanged))
	} else {
		fmt.Fprintf(w, "trajectory %s → %s: %d objects uploaded (%d bytes), %d already there, %d not uploaded\n",
			l.ID, l.Store.URI(""), len(rep.Uploaded), rep.Bytes, len(rep.Unchanged), len(rep.Failed))
	}
	if rep.Unfinished {
		fmt.Fprintf(w, "  the trace has no session_end: continue it with `traj run --resume %s` or close it with `traj trace finalize %s`\n", trace.ShellWord(l.ID), trace.ShellWord(l.ID))
	}
	if len(rep.Failed) > 0 {
		var keys []string
		for _, f := range rep.Failed {
			keys = append(keys, f.Key)
		}
		fmt.Fprintf(w, "  not uploaded: %s\n", strings.Join(keys, ", "))
	}
}
