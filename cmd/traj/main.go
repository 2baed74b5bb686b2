package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/alecthomas/kong"

	"github.com/trajlab/traj/environment/evaluation/registry"
	"github.com/trajlab/traj/sandbox/harness"
	"github.com/trajlab/traj/sandbox/relay"
	"github.com/trajlab/traj/sandbox/xec"
)

// version is set at link time (-ldflags "-X main.version=…"); otherwise the
// module version from the build info is used.
var version = ""

// Globals are the flags and handles every command may use.
type Globals struct {
	LogLevel slog.Level `help:"Log level: debug, info, warn, error." default:"info" env:"TRAJ_LOG_LEVEL"`

	Stdout io.Writer    `kong:"-"`
	Stderr io.Writer    `kong:"-"`
	Logger *slog.Logger `kong:"-"`
	// Environments is the registry every command picks environments from.
	Environments registry.Environments `kong:"-"`
}

// CLI is the command tree. Each command lives in its own file.
type CLI struct {
	Globals

	Version kong.VersionFlag `help:"Print the version and exit."`

	// Commands: one field per command, each defined in its own file.
	Env        EnvCmd        `cmd:"" help:"Test environments: build a workspace and run test suites."`
	Experiment ExperimentCmd `cmd:"" help:"Many trajectories from one spec: run them here or on Slurm, show status."`
	Export     ExportCmd     `cmd:"" help:"Export trajectories for analysis: Parquet tables (DuckDB, pandas) or ATIF (Harbor)."`
	GC         GCCmd         `cmd:"" name:"gc" help:"Remove sandbox folders of finalized trajectories (workspace copies, harness state)."`
	MCP        MCPCmd        `cmd:"" name:"mcp" help:"Serve the run_tests MCP tool over stdio for a workspace."`
	Model      ModelCmd      `cmd:"" help:"Scripted model server for offline runs."`
	Replay     ReplayCmd     `cmd:"" help:"Replay a trajectory offline: checkout-part, evaluate, verify."`
	Report     ReportCmd     `cmd:"" help:"Summarise every trajectory in a store: table, HTML charts, JSON, CSV."`
	Run        RunCmd        `cmd:"" help:"Record a trajectory: run the agent on a task within a part budget."`
	Sandbox    SandboxCmd    `cmd:"" help:"Sandbox providers: check which work here, build the container image."`
	Sweep      SweepCmd      `cmd:"" help:"Fork a trajectory K times at each of its parts and score the forks: where did the run lose its chance?"`
	Sync       SyncCmd       `cmd:"" help:"Upload a trajectory recorded while its store was unreachable."`
	ToolStub   ToolStubCmd   `cmd:"" name:"tool-stub" hidden:"" help:"Serve the tool gateway's tools over stdio inside a sandbox (what a harness loads)."`
	Trace      TraceCmd      `cmd:"" help:"Inspect a trace (show a summary, validate it) or finalize a trajectory whose run died."`
	View       ViewCmd       `cmd:"" help:"Browse a store in a local web viewer: trajectories, part timeline, diffs, code, tests, comparisons."`
}

func main() {
	// Inside a sandbox, traj runs as the relay in front of each service
	// (never typed by a person, so not a kong command).
	if len(os.Args) > 1 && os.Args[1] == relay.Command {
		os.Exit(relay.Main(os.Args[2:]))
	}
	// Outside a sandbox, traj runs as the guard of each bwrap it starts.
	if len(os.Args) > 1 && os.Args[1] == xec.GuardCommand {
		os.Exit(xec.GuardMain(os.Args[2:]))
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// exitError carries a specific exit code through kong's Run.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// kongExit is how kong's Exit (after --help or --version) unwinds run
// instead of ending the process, so run stays testable.
type kongExit struct{ code int }

func run(args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(kongExit)
			if !ok {
				panic(r)
			}
			code = e.code
		}
	}()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var cli CLI
	cli.Stdout, cli.Stderr = stdout, stderr
	cli.Environments = registry.Builtin()
	parser, err := newParser(ctx, &cli, stdout, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "traj:", err)
		return 2
	}
	kctx, err := parser.Parse(args)
	if err != nil {
		fmt.Fprintln(stderr, "traj:", err)
		return 2
	}
	cli.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cli.LogLevel}))
	if err := kctx.Run(); err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			if ee.err != nil {
				fmt.Fprintln(stderr, "traj:", ee.err)
			}
			return ee.code
		}
		fmt.Fprintln(stderr, "traj:", err)
		return 1
	}
	return 0
}

// newParser is traj's command line over cli.
func newParser(ctx context.Context, cli *CLI, stdout, stderr io.Writer) (*kong.Kong, error) {
	return kong.New(cli,
		kong.Name("traj"),
		kong.Description("Run, record and replay long-horizon coding-agent trajectories."),
		kong.UsageOnError(),
		kong.Vars{"version": versionString(), "harnesses": strings.Join(harness.Names(), ", "), "default_harness": harness.Default},
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { panic(kongExit{code}) }),
		kong.BindTo(ctx, (*context.Context)(nil)),
		kong.Bind(&cli.Globals),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
	)
}

func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
