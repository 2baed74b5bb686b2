package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/trajlab/traj/orchestrator/experiment"
	"github.com/trajlab/traj/orchestrator/sweep"
)

// SweepCmd runs a fork sweep (orchestrator/sweep). Exit status: 0 when
// every fork ended with its prefix reproduced, 3 when some fork did not
// end or did not reproduce its prefix, 2 for bad flags, 130 when
// interrupted.
type SweepCmd struct {
	Ref      string        `arg:"" name:"ref" help:"The trajectory to fork: an id in the store, a trajectory folder, an agent_trace.json path or an s3://…/trajectories/<id> URL."`
	At       string        `help:"Parts to fork at: P1,P2,… or every:N." required:"" placeholder:"PARTS"`
	Repeats  int           `help:"Forks at each part." default:"1"`
	MaxParts int           `name:"max-parts" help:"Each fork's part budget (inherited parts count)." required:""`
	Model    string        `help:"The forks' model after the fork point, PROVIDER/MODEL (default: the source's)."`
	Script   string        `help:"Serve this scripted model to the forks after the fork point (JSON Lines)." type:"existingfile"`
	Prompt   string        `help:"A message that opens the first turn after the fork point."`
	Name     string        `help:"The sweep's name: its experiment and its result beside the source (default: <source>-sweep)."`
	Store    string        `help:"Store of the source (for a bare id), the forks and the result (default ./runs)." env:"TRAJ_STORE"`
	WorkDir  string        `name:"work-dir" help:"Local folder for the forks' trajectory folders and sandboxes." env:"TRAJ_WORK_DIR" type:"path"`
	Sandbox  string        `help:"Where the forks' agents run (default: the source's unless local)." enum:"bwrap,container,local," default:""`
	Timeout  time.Duration `help:"Time each fork may work (default: the source's)."`
	TestsDir string        `name:"tests-dir" help:"Fixtures root for the forks' ground truth." env:"TRAJ_TESTS_DIR" type:"path"`
	Executor string        `help:"Where the forks run: local (this machine) or slurm (one job array, waited for)." enum:"local,slurm" default:"local"`
	Parallel int           `help:"Local: forks at once (default: from cores and memory)."`
	SlurmOpt []string      `name:"slurm-opt" help:"slurm: another sbatch option, e.g. --slurm-opt=--partition=gpu (repeatable)."`
	Quiet    bool          `help:"No live status line."`
}

func (c *SweepCmd) Run(ctx context.Context, g *Globals) error {
	at, every, err := sweep.ParseAt(c.At)
	if err != nil {
		return &exitError{2, err}
	}
	bin, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the traj executable: %w", err)
	}
	req := sweep.Request{Source: c.Ref, Store: c.Store, WorkDir: c.WorkDir, Name: c.Name, At: at, Every: every,
		Model: c.Model, Script: c.Script, Prompt: c.Prompt, Repeats: c.Repeats, MaxParts: c.MaxParts,
		Sandbox: c.Sandbox, Executor: c.Executor, Parallel: c.Parallel, Slurm: experiment.Slurm{Args: c.SlurmOpt}, TrajBin: bin, Logger: g.Logger}
	if c.Timeout > 0 {
		req.Timeout = c.Timeout.String()
	}
	if c.TestsDir != "" {
		req.Run = map[string]string{"tests-dir": c.TestsDir}
	}
	var view *experiment.View
	if c.Executor == sweep.ExecLocal {
		view = experiment.NewView(g.Stderr, len(at)*c.Repeats, !c.Quiet && isTerminal(g.Stderr))
		req.Events = view.Report
	}
	out, err := sweep.Run(ctx, req)
	if view != nil {
		view.Close()
	}
	switch {
	case errors.Is(err, context.Canceled):
		return &exitError{130, nil}
	case errors.Is(err, sweep.ErrRequest):
		return &exitError{2, err}
	case err != nil:
		return err
	}
	complete, err := out.Print(g.Stdout, g.Stderr)
	if err != nil || complete {
		return err
	}
	return &exitError{3, nil}
}
