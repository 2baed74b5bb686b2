package harbor

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/trajlab/traj/environment"
)

// Checked is what Check found: the task, its environment, and the
// results of the oracle's tree and of a no-op agent's (the workspace as
// the image seeds it), each scored in a fresh verifier room.
type Checked struct {
	Env            *Env
	Oracle, NoOp   environment.Result
	OracleOK, NoOK bool
}

// OK: the oracle scores 1 and the no-op agent 0, what a task must show
// before agents run on it.
func (c Checked) OK() bool { return c.OracleOK && c.NoOK }

// Print writes what c found, one line for the task and one for each
// agent's reward, as `traj env check` shows it.
func (c Checked) Print(w io.Writer) {
	t := c.Env.Task
	fmt.Fprintf(w, "task %s: image %s (workdir %s)\n", t.Name, c.Env.Image.Name, c.Env.Workdir)
	for _, r := range []struct {
		agent    string
		res      environment.Result
		ok, want bool
	}{{"oracle", c.Oracle, c.OracleOK, true}, {"no-op", c.NoOp, c.NoOK, false}} {
		rc := RewardOf(r.res)
		verdict := "ok"
		if !r.ok {
			verdict = "WRONG (want reward " + map[bool]string{true: "1", false: "0"}[r.want] + ")"
		}
		fmt.Fprintf(w, "%-7s reward %s, %d/%d cases passed: %s\n", r.agent, strconv.Quote(rc.ActualStdout), r.res.Passed, r.res.Total, verdict)
		if rc.Error != "" && r.want {
			fmt.Fprintf(w, "        %s\n", rc.Error)
		}
	}
}

// Check builds the task folder dir's image, runs the oracle
// (solution/solve.sh in the agent's room) and a no-op agent, and scores
// both (`traj env check`). A folder that does not load is Load's error.
func Check(ctx context.Context, dir string, o Options) (Checked, error) {
	t, err := Load(dir)
	if err != nil {
		return Checked{}, err
	}
	env, err := Open(ctx, t, o)
	if err != nil {
		return Checked{}, err
	}
	c := Checked{Env: env}
	tmp, err := os.MkdirTemp("", "traj-env-check-")
	if err != nil {
		return c, fmt.Errorf("check task %s: %w", t.Name, err)
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
	if c.NoOp, err = score("no-op", func(string) error { return nil }); err != nil {
		return c, err
	}
	if c.Oracle, err = score("oracle", func(ws string) error { return env.Oracle(ctx, ws) }); err != nil {
		return c, err
	}
	c.OracleOK, c.NoOK = RewardOf(c.Oracle).Passed, !RewardOf(c.NoOp).Passed
	return c, nil
}

// RewardOf is r's reward case (RewardCase), zero when r has none.
func RewardOf(r environment.Result) environment.CaseResult {
	for _, c := range r.Cases {
		if c.Name == r.Path+"/"+RewardCase {
			return c
		}
	}
	return environment.CaseResult{}
}
