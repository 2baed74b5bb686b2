package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/trajlab/traj/environment"
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
	t := ch.Env.Task
	fmt.Fprintf(g.Stdout, "task %s: image %s (workdir %s)\n", t.Name, ch.Env.Image.Name, ch.Env.Workdir)
	for _, r := range []struct {
		agent    string
		res      environment.Result
		ok, want bool
	}{{"oracle", ch.Oracle, ch.OracleOK, true}, {"no-op", ch.NoOp, ch.NoOK, false}} {
		rc := harbor.RewardOf(r.res)
		verdict := "ok"
		if !r.ok {
			verdict = "WRONG (want reward " + map[bool]string{true: "1", false: "0"}[r.want] + ")"
		}
		fmt.Fprintf(g.Stdout, "%-7s reward %s, %d/%d cases passed: %s\n", r.agent, strconv.Quote(rc.ActualStdout), r.res.Passed, r.res.Total, verdict)
		if rc.Error != "" && r.want {
			fmt.Fprintf(g.Stdout, "        %s\n", rc.Error)
		}
	}
	if !ch.OK() {
		return &exitError{1, errors.New("task " + t.Name + ": the oracle must score 1 and a no-op agent 0")}
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
