package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/trajlab/traj/environment"
	"github.com/trajlab/traj/environment/harbor"
	"github.com/trajlab/traj/replay/source"
	"github.com/trajlab/traj/trace/store"
)

// EnvCheckCmd checks a Harbor task folder before agents run on it: the
// image builds offline, the oracle (solution/solve.sh in the agent's
// room) scores 1 and a no-op agent (the workspace as the image seeds it)
// scores 0, each in a fresh verifier room. Exit status 0 when both hold,
// 1 when not, 2 for a bad folder.
type EnvCheckCmd struct {
	Path   string `arg:"" type:"existingdir" help:"Harbor task folder (task.toml, instruction.md, environment/, tests/, solution/)."`
	Engine string `help:"Container engine binary (default: podman, else docker)."`
}

func (c *EnvCheckCmd) Run(ctx context.Context, g *Globals) error {
	t, err := harbor.Load(c.Path)
	if err != nil {
		return &exitError{2, err}
	}
	env, err := harbor.Open(ctx, t, harbor.Options{Engine: c.Engine, Log: g.Stderr})
	if err != nil {
		return err
	}
	fmt.Fprintf(g.Stdout, "task %s: image %s (workdir %s)\n", t.Name, env.Image.Name, env.Workdir)
	tmp, err := os.MkdirTemp("", "traj-env-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	score := func(agent string, act func(ws string) error) (environment.Result, error) {
		ws := filepath.Join(tmp, agent)
		if err := env.Seed(ctx, ws); err != nil {
			return environment.Result{}, err
		}
		if err := act(ws); err != nil {
			return environment.Result{}, err
		}
		return env.Run(ctx, ws, t.Name, environment.RunOptions{TempDir: tmp})
	}
	noop, err := score("no-op", func(string) error { return nil })
	if err != nil {
		return err
	}
	oracle, err := score("oracle", func(ws string) error { return env.Oracle(ctx, ws) })
	if err != nil {
		return err
	}
	ok := true
	for _, r := range []struct {
		agent string
		res   environment.Result
		want  bool
	}{{"oracle", oracle, true}, {"no-op", noop, false}} {
		rc := rewardOf(r.res)
		verdict := "ok"
		if rc.Passed != r.want {
			verdict, ok = "WRONG (want reward "+map[bool]string{true: "1", false: "0"}[r.want]+")", false
		}
		fmt.Fprintf(g.Stdout, "%-7s reward %s, %d/%d cases passed: %s\n", r.agent, strconv.Quote(rc.ActualStdout), r.res.Passed, r.res.Total, verdict)
		if rc.Error != "" && r.want {
			fmt.Fprintf(g.Stdout, "        %s\n", rc.Error)
		}
	}
	if !ok {
		return &exitError{1, fmt.Errorf("task %s: the oracle must score 1 and a no-op agent 0", t.Name)}
	}
	return nil
}

func rewardOf(r environment.Result) environment.CaseResult {
	for _, c := range r.Cases {
		if c.Name == r.Path+"/"+harbor.RewardCase {
			return c
		}
	}
	return environment.CaseResult{}
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

// evalEnvironment is the environment a trajectory's trees are evaluated
// with: a Harbor task's (its folder given by taskDir, else the one its
// run.json names when that folder is here) when the trace names
// environment harbor, else nil (the C compiler's).
func evalEnvironment(ctx context.Context, t *source.Trajectory, taskDir string) (environment.Environment, error) {
	if e := t.Trace.Environment; e == nil || e.Name != "harbor" {
		if taskDir != "" {
			return nil, &exitError{2, fmt.Errorf("--task: trajectory %s is not of a Harbor task", t.ID)}
		}
		return nil, nil
	}
	if taskDir == "" {
		taskDir = recordedTask(t)
	}
	if taskDir == "" {
		return nil, &exitError{2, fmt.Errorf("trajectory %s is of Harbor task %s: give its folder with --task", t.ID, t.Trace.Task)}
	}
	ht, err := harbor.Load(taskDir)
	if err != nil {
		return nil, &exitError{2, err}
	}
	if ht.Name != t.Trace.Task {
		return nil, &exitError{2, fmt.Errorf("--task %s is task %s; trajectory %s is of %s", taskDir, ht.Name, t.ID, t.Trace.Task)}
	}
	return harbor.Open(ctx, ht, harbor.Options{})
}

// environmentName is the environment a trajectory's trace names
// (c-compiler for traces that name none).
func environmentName(t *source.Trajectory) string {
	if e := t.Trace.Environment; e != nil && e.Name != "" {
		return e.Name
	}
	return "c-compiler"
}

// recordedTask is the Harbor task folder a local trajectory's run.json
// names, when it is still a Harbor task folder here ("" otherwise).
func recordedTask(t *source.Trajectory) string {
	if t.TracePath == "" {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(t.TracePath), store.RunStateName))
	if err != nil {
		return ""
	}
	var st struct {
		TaskSource string `json:"task_source"`
	}
	if json.Unmarshal(b, &st) != nil || !filepath.IsAbs(st.TaskSource) || !harbor.IsTaskFolder(st.TaskSource) {
		return ""
	}
	return st.TaskSource
}
