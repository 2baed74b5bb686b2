package main

import (
	"context"
	"fmt"
	"time"

	"github.com/trajlab/traj/orchestrator/synth"
)

// TraceSynthCmd writes a synthetic trajectory, for benchmarks, tests and
// trying traj at sizes no demo run reaches.
type TraceSynthCmd struct {
	Parts int    `required:"" help:"Number of parts."`
	Out   string `default:"runs" help:"Store folder to write into (trajectories/<id>/ beneath it)."`
	ID    string `help:"Trajectory id (default synth-<parts>-<seed>)."`
	Seed  uint64 `default:"1" help:"Seed: the same seed and parts give the same files."`
}

func (c *TraceSynthCmd) Run(ctx context.Context, g *Globals) error {
	last := time.Now()
	res, err := synth.Write(ctx, c.Out, synth.Options{ID: c.ID, Parts: c.Parts, Seed: c.Seed, Progress: func(done, total int) {
		if time.Since(last) >= 2*time.Second || done == total {
			last = time.Now()
			fmt.Fprintf(g.Stderr, "synth: %d of %d parts\n", done, total)
		}
	}})
	if err != nil {
		return err
	}
	fmt.Fprintf(g.Stdout, "%s: %d parts in %d turns, %d checkpoints, %d model calls, final commit %s\n%s\n",
		res.ID, res.Parts, res.Turns, res.Commits, res.Calls, res.FinalCommit, res.Dir)
	return nil
}
