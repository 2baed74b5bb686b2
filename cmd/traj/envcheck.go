package main

import (
	"context"
	"errors"

	"github.com/trajlab/traj/environment/harbor"
)

// EnvCheckCmd checks a Harbor task folder before agents run on it
// (harbor.Check). Exit status 0 when the oracle scores 1 and a no-op
// agent 0, 1 when not, 2 for a bad folder.
type EnvCheckCmd struct {
	Path   string `arg:"" type:"existingdir" help:"Harbor task folder (task.toml, instruction.md, environment/, tests/, solution/)."`
	Engine string `help:"Container engine binary (default: podman, else docker)."`
}

func (c *EnvCheckCmd) Run(ctx context.Context, g *Globals) error {
	if _, err := harbor.Load(c.Path); err != nil {
		return &exitError{2, err}
	}
	ch, err := harbor.Check(ctx, c.Path, harbor.Options{Engine: c.Engine, Log: g.Stderr})
	if err != nil {
		return err
	}
	ch.Print(g.Stdout)
	if !ch.OK() {
		return &exitError{1, errors.New("task " + ch.Env.Task.Name + ": the oracle must score 1 and a no-op agent 0")}
	}
	return nil
}

// EnvOracleScriptCmd prints a Harbor task's oracle as a scripted model's
// script (solution/solve.sh as one bash call), for `traj run --task PATH
// --model scripted/oracle --script FILE`: the oracle's trajectory.
type EnvOracleScriptCmd struct {
	Path    string `arg:"" type:"existingdir" help:"Harbor task folder."`
	Workdir string `help:"The workdir the agent's room shows the workspace at (default: task.toml's, else /app)."`
}

func (c *EnvOracleScriptCmd) Run(ctx context.Context, g *Globals) error {
	t, err := harbor.Load(c.Path)
	if err != nil {
		return &exitError{2, err}
	}
	wd := c.Workdir
	if wd == "" {
		if wd = t.Environment.Workdir; wd == "" {
			wd = harbor.DefaultWorkdir
		}
	}
	b, err := t.OracleScript(wd)
	if err != nil {
		return &exitError{2, err}
	}
	_, err = g.Stdout.Write(b)
	return err
}
