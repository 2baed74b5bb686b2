package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/alecthomas/kong"

	"github.com/trajlab/traj/orchestrator"
	"github.com/trajlab/traj/orchestrator/handler/record"
	"github.com/trajlab/traj/orchestrator/launch"
	"github.com/trajlab/traj/orchestrator/progress"
	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/trace"
)

// RunCmd records one trajectory: the agent works on a task until the part
// budget, the timeout, a solution or an error, and every part lands in the
// trace. Exit status: 0 when the trajectory was recorded (any end reason
// but the ones below), 3 for agent_error or envoi_error, 4 when it was
// recorded but objects could not be uploaded to the store (`traj sync`
// uploads them later), 130 when interrupted, 1 when it could not be set up
// or recorded, 2 for bad flags.
type RunCmd struct {
	// Task has no kong default: "" is "not given", so --resume and --fork
	// keep the recorded task (a new run gets orchestrator.DefaultTask).
	Task     string `help:"Built-in task name or a task folder (task.json + prompt.md). Default c-compiler; with --resume or --fork: the recorded one (a fork refuses another)."`
	Model    string `help:"Model as PROVIDER/MODEL (e.g. scripted/demo, anthropic/claude-sonnet-4-5). Required unless --resume."`
	MaxParts int    `name:"max-parts" help:"Part budget: the run never records more parts. Required unless --resume (then: a larger budget)."`
	Resume   string `help:"Continue trajectory REF (its id, or its folder on this machine) whose run died or ended early: same id and trace, parts continue, a continuation prompt; task, model and budget as recorded unless given." placeholder:"REF"`
	// Timeout has no kong default: zero lets --resume keep the recorded
	// timeout; a new run gets 4 h (orchestrator.Options).
	Timeout           time.Duration `help:"Time the agent may work (default 4h; with --resume: the recorded one)."`
	StallTimeout      time.Duration `name:"stall-timeout" help:"Stall watchdog: a turn with no new part for this long is aborted and sent again once; a second stall ends the run agent_error (default 30m)."`
	TrajectoryID      string        `name:"trajectory-id" help:"Trajectory id (default: <task>-<time>-<random>)."`
	Store             string        `help:"Artifact store: a folder, file:///abs/path or s3://bucket/prefix (default ./runs)." env:"TRAJ_STORE"`
	WorkDir           string        `name:"work-dir" help:"Local folder for trajectory folders and sandboxes (default: the store folder if local, else ./runs)." env:"TRAJ_WORK_DIR" type:"path"`
	Agent             string        `help:"Harness: ${harnesses} (default ${default_harness}; with --resume: the recorded one)."`
	AgentBin          string        `name:"agent-bin" help:"The harness's executable (default: $TRAJ_OPENCODE_BIN, $TRAJ_CLAUDE_BIN or $TRAJ_CODEX_BIN for that harness, else as make setup installs it)."`
	Script            string        `help:"Serve this scripted model (JSON Lines) in-process; use with --model scripted/<name>." type:"existingfile"`
	BaseURL           string        `name:"base-url" help:"The provider's API base URL, e.g. http://127.0.0.1:8000/v1 (default: the public API of anthropic/… and openai/… models). The harness reaches it through traj's model gateway."`
	APIKeyEnv         []string      `name:"api-key-env" help:"Environment variable holding the provider's API key. Only traj's model gateway reads it; the harness gets a per-trajectory token."`
	MaxTokens         int64         `name:"max-tokens" help:"Token budget over all model calls (input, output, reasoning, cache); the run ends with token_limit."`
	MaxCost           float64       `name:"max-cost" help:"Cost budget in dollars over all model calls (needs --price); the run ends with cost_limit."`
	Price             string        `help:"Prices in dollars per million tokens: INPUT,OUTPUT[,CACHE_READ[,CACHE_WRITE]] (cost in the trace and for --max-cost)." placeholder:"IN,OUT"`
	TestsDir          string        `name:"tests-dir" help:"Fixtures root holding c-testsuite/, wacct/ and torture/." env:"TRAJ_TESTS_DIR" type:"path"`
	Sandbox           string        `help:"Where the agent runs: bwrap, container (podman or docker, image from make image) or local (NO isolation). Default: bwrap where it works, else container; with --resume: the recorded one; with --fork: the source's unless it was local (local only when named)." enum:"bwrap,container,local," default:""`
	CPUs              float64       `name:"cpus" help:"CPU time the sandbox may use, in CPUs (default: no limit)."`
	Memory            string        `help:"Memory limit for the whole sandbox, e.g. 4g or 512m; 'none' for no limit (default 4g)."`
	Pids              int           `help:"Most processes and threads at once in the sandbox (default 4096)."`
	Disk              string        `help:"Disk cap of what the agent's sandbox writes (workspace, harness state), e.g. 4g or 512m: a filesystem image holding them (needs root), so the agent's writes beyond it fail with ENOSPC and never fill the disk of the store; 'off' for none (default 4g where traj runs as root and the sandbox is not local, else none; with --resume: the recorded one)."`
	Network           string        `help:"Network policy: none, gateways (only what traj serves: the model endpoint) or full (the host's). Default: gateways when the model endpoint is on this machine, else full." enum:"none,gateways,full," default:""`
	PassEnv           []string      `name:"pass-env" help:"Pass this variable from your environment into the sandbox (repeatable). The agent gets only LANG, LC_*, TERM, TZ, the --api-key-env variables and these." placeholder:"NAME"`
	Fork              string        `help:"Branch trajectory REF at --at-part: a new trajectory reruns its parts 1..P from its recorded model calls (same harness and version, task, sandbox), then continues live with --model/--script (default: the source's model), --prompt opening the next turn. Budget: --max-parts counts every part, inherited ones too (default: the source's)." placeholder:"REF"`
	AtPart            int           `name:"at-part" help:"The fork point: the last part of the source the fork inherits (rounded up to the end of the model response that produced it)." placeholder:"P"`
	Prompt            string        `help:"With --fork: a message that opens the first turn after the fork point (a hint)."`
	AllowOtherVersion bool          `name:"allow-other-version" help:"With --fork: run the installed harness even when its version is not the one the source recorded."`
	JSON              bool          `help:"Print progress as JSON lines on stdout (see orchestrator/progress)."`
	Quiet             bool          `help:"No progress output; only warnings, errors and the final summary."`
}

// Run maps the flags to a record.RunRequest, shows its progress and says
// how it ended.
func (c *RunCmd) Run(ctx context.Context, g *Globals, kctx *kong.Context) error {
	req, err := c.request(g, kctx)
	if err != nil {
		return &exitError{2, err}
	}
	var closeView func()
	req.Options.Reporter, req.Options.Logger, closeView = progress.View{JSON: c.JSON, Quiet: c.Quiet, Terminal: isTerminal(g.Stderr),
		Stdout: g.Stdout, Stderr: g.Stderr, Level: g.LogLevel, Logger: g.Logger}.Open()
	res, err := record.Run(ctx, req)
	closeView()
	if res == nil {
		if bad := (*record.BadRequest)(nil); errors.As(err, &bad) {
			return &exitError{2, err}
		}
		return err
	}
	c.WorkDir = res.WorkDir
	if !c.JSON {
		record.PrintSummary(g.Stdout, res.Result)
		record.PrintNext(g.Stdout, res.Result, c.locateArgs(res.TrajectoryID))
	}
	if f := res.Fork; f != nil {
		// The inherited parts must be the source's: say so, or not.
		fmt.Fprintf(g.Stdout, "  forked from:   %s at part %d; inherited parts %s\n", f.Source, f.At, f.Report.Summary())
		if !f.Reproduced() {
			f.Report.Print(g.Stdout)
			return &exitError{3, fmt.Errorf("the fork did not reproduce its inherited parts 1..%d of %s", f.At, f.Source)}
		}
	}
	if err != nil {
		return err
	}
	return runExit(res.Result, c.locateArgs(res.TrajectoryID))
}

// request is the record.RunRequest of the flags: the options they set,
// Given the flags on the command line (a flag given at its zero value
// overrides a resumed or forked run's option like any other).
func (c *RunCmd) request(g *Globals, kctx *kong.Context) (record.RunRequest, error) {
	mem, err := orchestrator.ParseSize(c.Memory)
	if err != nil {
		return record.RunRequest{}, fmt.Errorf("--memory: %w", err)
	}
	diskCap, err := orchestrator.ParseSize(c.Disk)
	if err != nil {
		return record.RunRequest{}, fmt.Errorf("--disk: %w", err)
	}
	price, err := orchestrator.ParsePrice(c.Price)
	if err != nil {
		return record.RunRequest{}, err
	}
	req := record.RunRequest{Given: orchestrator.Given{}, Resume: c.Resume, Fork: c.Fork, AtPart: c.AtPart, Prompt: c.Prompt,
		AllowOtherVersion: c.AllowOtherVersion, Notes: g.Stdout, Options: orchestrator.Options{
			Task: c.Task, Model: c.Model, MaxParts: c.MaxParts, Timeout: c.Timeout, StallTimeout: c.StallTimeout,
			TrajectoryID: c.TrajectoryID, Store: c.Store, WorkDir: c.WorkDir, Script: c.Script,
			BaseURL: c.BaseURL, APIKeyEnvs: c.APIKeyEnv, TestsDir: c.TestsDir,
			Sandbox: launch.SandboxOptions{Provider: c.Sandbox, Network: sandbox.Network(c.Network), Env: c.PassEnv,
				Limits: sandbox.Limits{CPUs: c.CPUs, Memory: mem, Processes: c.Pids}, Disk: diskCap},
			Agent: c.Agent, AgentBin: c.AgentBin, MaxTokens: c.MaxTokens, MaxCost: c.MaxCost, Price: price, Logger: g.Logger}}
	for _, p := range kctx.Path {
		if p.Flag != nil {
			req.Given[p.Flag.Name] = true
		}
	}
	return req, nil
}

// runExit is a recorded run's exit status (see RunCmd): interrupted
// first, then uploads left pending, then an agent or environment error.
func runExit(res *orchestrator.Result, ref string) error {
	switch {
	case res.End.Reason == trace.EndInterrupted:
		return &exitError{130, nil}
	case len(res.NotUploaded) > 0:
		return &exitError{4, fmt.Errorf("%d objects are only in the trajectory folder: upload them with `traj sync %s`",
			len(res.NotUploaded), ref)}
	case res.End.Reason == trace.EndAgentError || res.End.Reason == trace.EndEnvoiError:
		return &exitError{3, nil}
	}
	return nil
}

// locateArgs names trajectory id for a later command as this run was
// given it: the id, plus --store and --work-dir when they were flags.
func (c *RunCmd) locateArgs(id string) string {
	args := trace.ShellWord(id)
	if c.Store != "" && c.Store != os.Getenv("TRAJ_STORE") {
		args += " --store " + trace.ShellWord(c.Store)
	}
	if c.WorkDir != "" && c.WorkDir != os.Getenv("TRAJ_WORK_DIR") {
		args += " --work-dir " + trace.ShellWord(c.WorkDir)
	}
	return args
}
