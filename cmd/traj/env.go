package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/trajlab/traj/environment"
	"github.com/trajlab/traj/environment/evaluation/registry"
	"github.com/trajlab/traj/environment/mcp"
)

// EnvCmd groups the test-environment commands.
type EnvCmd struct {
	Test         EnvTestCmd         `cmd:"" help:"Build a workspace and run a test path against it (e.g. basics/smoke)."`
	Check        EnvCheckCmd        `cmd:"" help:"Check a Harbor task folder: its image builds, its oracle scores 1 and a no-op agent 0."`
	OracleScript EnvOracleScriptCmd `cmd:"" name:"oracle-script" help:"Print a Harbor task's oracle (solution/solve.sh) as a scripted model's script."`
}

// envFlags are shared by `env test` and `mcp`.
type envFlags struct {
	Environment    string        `help:"The test environment (default: the first registered)."`
	Workspace      string        `required:"" type:"existingdir" help:"The agent's workspace (has build.sh producing ./cc)."`
	TestsDir       string        `name:"tests-dir" env:"TRAJ_TESTS_DIR" type:"path" help:"Fixtures root holding c-testsuite/, wacct/ and torture/."`
	Workers        int           `help:"Cases run at once (0 = number of CPUs)." default:"0"`
	BuildTimeout   time.Duration `help:"Timeout for build.sh." default:"300s"`
	CompileTimeout time.Duration `help:"Timeout for one ./cc invocation." default:"10s"`
	RunTimeout     time.Duration `help:"Timeout for one compiled program." default:"5s"`
}

// env opens the environment --environment names in envs (its default
// when none).
func (f envFlags) env(ctx context.Context, envs registry.Environments) (environment.Environment, error) {
	e, err := envs.Open(ctx, f.Environment, registry.Config{TestsDir: f.TestsDir})
	if err != nil {
		return nil, &exitError{2, err}
	}
	return e, nil
}

func (f envFlags) runOptions() environment.RunOptions {
	return environment.RunOptions{
		Workers:        f.Workers,
		BuildTimeout:   f.BuildTimeout,
		CompileTimeout: f.CompileTimeout,
		RunTimeout:     f.RunTimeout,
	}
}

// EnvTestCmd runs one test path. Exit status: 0 when the path ran (whatever
// passed or failed, including a failed build: read the results), 2 for
// usage errors (unknown path, suite not installed, bad flags), 1 otherwise.
type EnvTestCmd struct {
	Path string `arg:"" help:"Test path: all, basics, basics/<category>, wacct, wacct/chapter_<n>, c_testsuite[/part_<n>], torture[/part_<n>]."`
	envFlags
	JSON     bool   `help:"Print the result as JSON on stdout."`
	Feedback string `help:"What is printed of the result: counts, failures or full (a task's level prints what its agent is told; the agent's rooms never show traj)." enum:"counts,failures,full" default:"full"`
}

func (c *EnvTestCmd) Run(ctx context.Context, g *Globals) error {
	env, err := c.env(ctx, g.Environments)
	if err != nil {
		return err
	}
	opts := c.runOptions()
	opts.Progress = progressPrinter(g.Stderr)
	// Never build while a run_tests server builds the same workspace.
	unlock, err := environment.LockWorkspace(ctx, c.Workspace)
	if err != nil {
		return err
	}
	defer unlock()
	res, err := env.Run(ctx, c.Workspace, c.Path, opts)
	if err != nil {
		if environment.IsUsageError(err) {
			return &exitError{2, fmt.Errorf("%w\nvalid paths: %v", err, env.TestPaths())}
		}
		return err
	}
	res = *mcp.Response{Result: &res}.For(mcp.Feedback(c.Feedback)).Result
	if c.JSON {
		enc := json.NewEncoder(g.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	return environment.WriteSummary(g.Stdout, res, 30)
}

// progressPrinter shows cases done/total: one updating line on a terminal,
// otherwise a plain line at every tenth of the run.
func progressPrinter(w io.Writer) func(done, total int) {
	if isTerminal(w) {
		return func(done, total int) {
			fmt.Fprintf(w, "\r\x1b[Kcases %d/%d", done, total)
			if done == total {
				fmt.Fprint(w, "\r\x1b[K")
			}
		}
	}
	last := -1
	return func(done, total int) {
		if tenth := done * 10 / total; tenth != last {
			last = tenth
			fmt.Fprintf(w, "cases %d/%d\n", done, total)
		}
	}
}
