package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/trajlab/traj/orchestrator/handler/record"
	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/evaluate"
	"github.com/trajlab/traj/replay/inspect"
	"github.com/trajlab/traj/replay/source"
	"github.com/trajlab/traj/trace/store/location"
)

// ReplayCmd groups the offline replay commands.
type ReplayCmd struct {
	CheckoutPart ReplayCheckoutPartCmd `cmd:"" name:"checkout-part" help:"Write the repository as it was after one part."`
	Evaluate     ReplayEvaluateCmd     `cmd:"" help:"Evaluate every distinct repository state of a trajectory against the test suites."`
	EvaluateTask ReplayEvaluateTaskCmd `cmd:"" name:"evaluate-task" hidden:"" help:"Evaluate one task's share of a trees file into the evaluation cache (what a Slurm array task or Kubernetes pod of evaluate --executor runs)."`
	Verify       ReplayVerifyCmd       `cmd:"" help:"Check a trajectory's integrity: parts, commits, checkpoints, bundle."`
	Rerun        ReplayRerunCmd        `cmd:"" help:"Re-execute a trajectory from its recorded model calls (same harness, task, sandbox; no provider called) and compare it with the source."`
}

// replaySource names the trajectory to replay: REF, as for every command
// that takes a trajectory, or loose --trace and --bundle files.
type replaySource struct {
	Ref          string `arg:"" name:"ref" optional:"" help:"Trajectory: an id in the store, a trajectory folder, an agent_trace.json path or an s3://…/trajectories/<id> URL."`
	TrajectoryID string `name:"trajectory-id" short:"t" placeholder:"REF" help:"Same as REF (kept for scripts)."`
	Store        string `help:"Store: a folder, file:///path or s3://bucket/prefix (default ./runs or TRAJ_STORE)."`
	Trace        string `type:"path" help:"A loose agent_trace.json (with --bundle) instead of REF."`
	Bundle       string `type:"path" help:"A loose repo.bundle (with --trace)."`
}

// open opens the trajectory, reading as much of its trace as read says
// (commands that read no part's contents read less).
func (s replaySource) open(ctx context.Context, g *Globals, read source.TraceRead) (*source.Trajectory, error) {
	return s.openWith(ctx, g, source.Request{Read: read})
}

// openWith is open with req's reading options (Read, LazyHistory).
func (s replaySource) openWith(ctx context.Context, g *Globals, req source.Request) (*source.Trajectory, error) {
	r, err := s.request()
	if err != nil {
		return nil, err
	}
	req.Ref, req.StoreURL, req.TracePath, req.BundlePath = r.Ref, r.StoreURL, r.TracePath, r.BundlePath
	t, err := source.Open(ctx, req)
	if err != nil {
		return nil, usageExit(err)
	}
	for _, w := range t.Warnings {
		g.Logger.Warn(w)
	}
	return t, nil
}

// request is the source request REF or the loose files name.
func (s replaySource) request() (source.Request, error) {
	r, err := refOrAlias(s.Ref, s.TrajectoryID)
	if err != nil {
		return source.Request{}, err
	}
	if r != "" && (s.Trace != "" || s.Bundle != "") {
		return source.Request{}, &exitError{2, fmt.Errorf("give REF or --trace and --bundle, not both")}
	}
	return source.Request{Ref: r, StoreURL: location.Choose(s.Store, os.Getenv), TracePath: s.Trace, BundlePath: s.Bundle}, nil
}

// usageExit maps replay usage errors to exit code 2.
func usageExit(err error) error {
	if err != nil && errors.Is(err, replay.ErrUsage) {
		return &exitError{2, err}
	}
	return err
}

// ReplayCheckoutPartCmd writes the repository at one part. Exit status: 2
// for a bad part or destination, 1 for unreadable inputs.
type ReplayCheckoutPartCmd struct {
	replaySource
	Part         int    `required:"" help:"Part index (1-based)."`
	CheckoutDest string `name:"checkout-dest" required:"" type:"path" help:"Folder to write the repository into (must be empty or absent)."`
	Output       string `type:"path" help:"Also write the JSON summary to this file."`
	Force        bool   `help:"Replace the contents of a non-empty destination."`
}

func (c *ReplayCheckoutPartCmd) Run(ctx context.Context, g *Globals) error {
	t, err := c.open(ctx, g, source.TraceHeader)
	if err != nil {
		return err
	}
	defer t.Close()
	return usageExit(inspect.CheckoutPart(ctx, t, inspect.Checkout{Part: c.Part, Dest: c.CheckoutDest, Output: c.Output, Force: c.Force}, g.Stdout))
}

// ReplayEvaluateCmd evaluates a trajectory. Exit status: 0 when every
// distinct tree was evaluated (whatever the tests said), 1 when some could
// not be (the output still holds the others), 2 for usage errors.
type ReplayEvaluateCmd struct {
	replaySource
	Output string `type:"path" help:"Write the evaluation JSON here (required but with --executor kube or --store-only)."`
	// StoreOnly is what an experiment's attached evaluation writes: its
	// work folder may be the store, where --output is refused.
	StoreOnly bool `name:"store-only" hidden:"" help:"Keep the report only beside the trajectory (evaluation.json), no --output file."`
	evalFlags
	HTML    string `type:"path" help:"Also write an HTML report (charts and regressions) here."`
	NoCache bool   `name:"no-cache" help:"Neither read nor write the evaluation cache."`
	clusterFlags
	labelFlags
}

// evalFlags decide an evaluate's cache keys and sandboxes: the local
// evaluate and a cluster's tasks take the same ones.
type evalFlags struct {
	Tests    []string `help:"Test paths, comma-separated (default: the trace's recorded test paths, else every suite but torture)." sep:","`
	Workers  int      `help:"Distinct trees evaluated at once (0 = number of CPUs)." default:"0"`
	TestsDir string   `name:"tests-dir" env:"TRAJ_TESTS_DIR" type:"path" help:"Fixtures root holding c-testsuite/, wacct/ and torture/."`
	Sandbox  string   `help:"Sandbox provider each tree is built and tested in: bwrap, container, or local (no isolation: only for trees you trust). Default: the best available; none available is an error." enum:",bwrap,container,local" default:""`
	Task     string   `type:"existingdir" help:"The folder of the task the trajectory ran (a Harbor task's trees are scored in its verifier's room; default: the folder its run.json names, when here)."`
}

// request maps the flags to the evaluate handler's request.
func (c *ReplayEvaluateCmd) request(g *Globals) (evaluate.Request, error) {
	req, err := c.evalFlags.request(g, c.replaySource)
	if err != nil {
		return req, err
	}
	labelOpts, err := c.labelFlags.options()
	if err != nil {
		return req, err
	}
	req.Output, req.StoreOnly, req.HTML, req.NoCache, req.Labels = c.Output, c.StoreOnly, c.HTML, c.NoCache, labelOpts
	req.Executor = c.Executor
	req.Cluster = func(ctx context.Context, t *source.Trajectory, e evaluate.Evaluation) error {
		return c.runCluster(ctx, g, t, e)
	}
	return req, nil
}

// request is the part of an evaluate's request the local evaluate and a
// cluster's tasks share: the trajectory, the test paths, the sandboxes.
func (f evalFlags) request(g *Globals, s replaySource) (evaluate.Request, error) {
	src, err := s.request()
	if err != nil {
		return evaluate.Request{}, err
	}
	return evaluate.Request{
		Source: src,
		Tests:  f.Tests, Workers: f.Workers, TestsDir: f.TestsDir, Sandbox: f.Sandbox,
		Environments: g.Environments, Task: f.Task, TaskOf: record.RecordedTask,
		Logger: g.Logger, Stderr: g.Stderr, Terminal: isTerminal(g.Stderr),
	}, nil
}

func (c *ReplayEvaluateCmd) Run(ctx context.Context, g *Globals) error {
	req, err := c.request(g)
	if err != nil {
		return err
	}
	return usageExit(evaluate.Run(ctx, req))
}

// ReplayVerifyCmd checks a trajectory's integrity. Exit status: 0 when it
// is intact, 1 listing every problem otherwise, 2 for usage errors.
type ReplayVerifyCmd struct {
	replaySource
	JSON bool `help:"Print the problems as JSON."`
}

func (c *ReplayVerifyCmd) Run(ctx context.Context, g *Globals) error {
	t, err := c.open(ctx, g, source.TraceHeader)
	if err != nil {
		return err
	}
	defer t.Close()
	n, err := inspect.Verify(ctx, t, c.JSON, g.Stdout)
	if err != nil {
		return err
	}
	if n > 0 {
		return &exitError{1, nil}
	}
	return nil
}
