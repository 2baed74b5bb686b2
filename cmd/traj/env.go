package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/trajlab/traj/environment"
	"github.com/trajlab/traj/environment/ccompiler"
	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/evalbox"
	"github.com/trajlab/traj/trace/atomicfile"
)

// EnvCmd groups the test-environment commands.
type EnvCmd struct {
	Test     EnvTestCmd     `cmd:"" help:"Build a workspace and run a test path against it (e.g. basics/smoke)."`
	Evaluate EnvEvaluateCmd `cmd:"" hidden:"" help:"Inside an evaluation sandbox: build once, run test paths, write the signed result (replay/evalbox)."`
}

// EnvEvaluateCmd is what an evaluation sandbox runs (replay/evalbox): it
// reads and deletes the key before the tree's build runs, then writes
// the result signed with it.
type EnvEvaluateCmd struct {
	Paths     []string `arg:"" help:"Test paths."`
	Workspace string   `required:"" type:"existingdir" help:"The tree to build and test."`
	TestsDir  string   `name:"tests-dir" type:"path" help:"Fixtures root."`
	Out       string   `required:"" type:"existingdir" help:"Folder holding the key; the signed result is written here."`
	Workers   int      `help:"Cases run at once (0 = number of CPUs)." default:"0"`
	Detail    bool     `help:"Also report each path's full environment result (every case's expected and actual output)."`
	Nice      int      `help:"Lower this process's CPU priority by N (0-19) before the build; the tree's processes inherit it." default:"0"`
}

func (c *EnvEvaluateCmd) Run(ctx context.Context, g *Globals) error {
	if c.Nice > 0 {
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, 0, min(c.Nice, 19)); err != nil {
			return fmt.Errorf("set evaluation priority: %w", err)
		}
	}
	keyPath := filepath.Join(c.Out, evalbox.KeyFile)
	key, err := os.ReadFile(keyPath)
	if err != nil {
		return fmt.Errorf("read evaluation key: %w", err)
	}
	if err := os.Remove(keyPath); err != nil {
		return fmt.Errorf("remove evaluation key: %w", err)
	}
	env, err := ccompiler.New(ccompiler.Config{TestsDir: c.TestsDir})
	if err != nil {
		return &exitError{2, err}
	}
	ev := &replay.EnvironmentEvaluator{Env: env, CaseWorkers: c.Workers}
	res, runs, err := ev.EvaluateDetailed(ctx, c.Workspace, c.Paths)
	if err != nil {
		return err
	}
	p := evalbox.Payload{Result: res}
	if c.Detail {
		p.Runs = runs
	}
	mac, err := evalbox.Sign(key, p)
	if err != nil {
		return err
	}
	data, err := json.Marshal(evalbox.Signed{Payload: p, MAC: mac})
	if err != nil {
		return fmt.Errorf("encode evaluation result: %w", err)
	}
	return atomicfile.WriteBytes(filepath.Join(c.Out, evalbox.ResultFile), data)
}

// envFlags are shared by `env test` and `mcp`.
type envFlags struct {
	Workspace      string        `required:"" type:"existingdir" help:"The agent's workspace (has build.sh producing ./cc)."`
	TestsDir       string        `name:"tests-dir" env:"TRAJ_TESTS_DIR" type:"path" help:"Fixtures root holding c-testsuite/, wacct/ and torture/."`
	Workers        int           `help:"Cases run at once (0 = number of CPUs)." default:"0"`
	BuildTimeout   time.Duration `help:"Timeout for build.sh." default:"300s"`
	CompileTimeout time.Duration `help:"Timeout for one ./cc invocation." default:"10s"`
	RunTimeout     time.Duration `help:"Timeout for one compiled program." default:"5s"`
}

func (f envFlags) env() (*ccompiler.Env, error) {
	e, err := ccompiler.New(ccompiler.Config{TestsDir: f.TestsDir})
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
	JSON bool `help:"Print the full result as JSON on stdout."`
}

func (c *EnvTestCmd) Run(ctx context.Context, g *Globals) error {
	env, err := c.env()
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
