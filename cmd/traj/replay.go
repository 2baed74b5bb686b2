package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/trajlab/traj/environment"
	"github.com/trajlab/traj/environment/ccompiler"
	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/evalbox"
	"github.com/trajlab/traj/replay/report"
	"github.com/trajlab/traj/replay/source"
	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/atomicfile"
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
	r, err := refOrAlias(s.Ref, s.TrajectoryID)
	if err != nil {
		return nil, err
	}
	if r != "" && (s.Trace != "" || s.Bundle != "") {
		return nil, &exitError{2, fmt.Errorf("give REF or --trace and --bundle, not both")}
	}
	req.Ref, req.StoreURL = r, location.Choose(s.Store, os.Getenv)
	req.TracePath, req.BundlePath = s.Trace, s.Bundle
	t, err := source.Open(ctx, req)
	if err != nil {
		return nil, usageExit(err)
	}
	for _, w := range t.Warnings {
		g.Logger.Warn(w)
	}
	return t, nil
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
	// The part's commit comes from the trace's part index: one part is
	// read, not the trace.
	t, err := c.open(ctx, g, source.TraceHeader)
	if err != nil {
		return err
	}
	defer t.Close()
	if c.Output != "" {
		if err := replay.CheckOutput(c.Output, t.Protected); err != nil {
			return usageExit(err)
		}
	}
	commit, err := replay.CommitForPartAt(t.TracePath, t.ID, c.Part)
	if err != nil {
		return usageExit(err)
	}
	sum, err := replay.CheckoutCommit(ctx, t.ID, commit, t.History, replay.CheckoutRequest{
		Part: c.Part, Dest: c.CheckoutDest, Force: c.Force, Protected: t.Protected,
	})
	if err != nil {
		return usageExit(err)
	}
	data, err := replay.MarshalIndent(sum)
	if err != nil {
		return err
	}
	if c.Output != "" {
		if err := atomicfile.WriteBytes(c.Output, data); err != nil {
			return err
		}
	}
	_, err = g.Stdout.Write(data)
	return err
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
	Task     string   `type:"existingdir" help:"The Harbor task folder a Harbor trajectory ran (its trees are scored in its verifier's room; default: the folder its run.json names, when here)."`
}

// evaluator builds the evaluator of t's trees and the options of its
// evaluate, as the flags say: the test paths, the environment's version
// (with what the run marked on it), the sandboxes each tree runs in, and
// cache (nil: none).
func (f evalFlags) evaluator(ctx context.Context, g *Globals, t *source.Trajectory, bar *replay.ProgressBar, cache replay.Cache) (*evalbox.Evaluator, replay.EvaluateOptions, error) {
	var opts replay.EvaluateOptions
	var env environment.Environment
	env, err := evalEnvironment(ctx, t, f.Task)
	if err != nil {
		return nil, opts, err
	}
	if env == nil {
		if env, err = ccompiler.New(ccompiler.Config{TestsDir: f.TestsDir}); err != nil {
			return nil, opts, &exitError{2, err}
		}
	}
	var recorded []string
	if e := t.Trace.Environment; e != nil {
		recorded = e.TestPaths
	}
	paths := f.Tests
	if len(paths) == 0 {
		paths = replay.DefaultTestPaths(recorded, env.TestPaths())
	}
	for _, p := range paths {
		if !slices.Contains(env.TestPaths(), p) {
			return nil, opts, &exitError{2, fmt.Errorf("test path %q is not available (public suites need --tests-dir or TRAJ_TESTS_DIR); available: %s", p, strings.Join(env.TestPaths(), ", "))}
		}
	}
	opts = replay.EvaluateOptions{
		TestPaths: paths, Workers: f.Workers, EnvironmentName: environmentName(t), Logger: g.Logger, Progress: bar.Tree, Cache: cache,
	}
	// What the run marked on its environment version (the task hid the C
	// compiler, its compiles saw only the build's artifacts), replay does
	// too.
	var artifacts []string
	var deny bool
	if e := t.Trace.Environment; e != nil {
		artifacts, deny = evalbox.ParseVersion(e.Version)
	}
	version := evalbox.Version(env.Version(), artifacts, deny)
	provider := f.Sandbox
	if provider == "" {
		if provider, err = sandbox.Default(ctx); err != nil {
			return nil, opts, fmt.Errorf("evaluate in a sandbox: %w (or --sandbox local for trees you trust)", err)
		}
	}
	if err := evalbox.CheckProvider(provider, deny); err != nil {
		return nil, opts, usageExit(fmt.Errorf("this trajectory's task hid the C compiler from its evaluations: %w", err))
	}
	cpus := allottedCPUs(os.Getenv)
	workers := f.Workers
	if workers <= 0 {
		workers = cpus
		opts.Workers = cpus
	}
	// The trees are untrusted: their build, compiles and programs each run
	// in a sandbox of their own (local: on the host, for trusted trees);
	// the evaluator is this process. Their context (priority, limits,
	// scratch space, paths, environment) is evalbox.StandardRoom, the
	// one ground truth and run_tests use.
	// The store's secret, as ground truth had it (--no-cache too).
	st, err := t.SecretStore(ctx)
	if err != nil {
		return nil, opts, err
	}
	secret, err := source.EvalSecret(ctx, st)
	if err != nil {
		return nil, opts, err
	}
	ev := &evalbox.Evaluator{Provider: provider, Env: env, EnvVersion: version, DenyCCompiler: deny,
		Artifacts: artifacts, Cache: cache, Secret: secret,
		CaseWorkers: max(1, cpus/workers), OnCase: bar.Case}
	g.Logger.Info("evaluating", "sandbox", provider)
	return ev, opts, nil
}

func (c *ReplayEvaluateCmd) Run(ctx context.Context, g *Globals) error {
	if c.Output == "" && c.Executor != "kube" && !c.StoreOnly {
		return &exitError{2, errors.New("missing flags: --output=FILE")}
	}
	labelOpts, err := c.labelFlags.options()
	if err != nil {
		return err
	}
	// Parts and commits come from the trace's part index; only the HTML
	// report reads the parts themselves.
	read := source.TraceHeader
	if c.HTML != "" {
		read = source.WholeTrace
	}
	// The history is read only if a tree is not in the cache, or a commit
	// is not among the bundles' leading commits.
	t, err := c.openWith(ctx, g, source.Request{Read: read, LazyHistory: true})
	if err != nil {
		return err
	}
	defer t.Close()
	// A report this evaluate would write again (the cache serves every
	// tree, same inputs) is left as it is: at 50,000 parts it is 24 MB.
	var previousDigest string
	if c.Output != "" {
		if previousDigest, err = replay.CheckReportOutput(c.Output, t.Protected); err != nil {
			return usageExit(err)
		}
	}
	if c.HTML != "" {
		if err := replay.CheckOutput(c.HTML, t.Protected); err != nil {
			return usageExit(err)
		}
	}
	if c.StoreOnly && !t.KeepsEvaluation() {
		return &exitError{2, errors.New("--store-only: this trajectory has no store to keep its evaluation in")}
	}
	dest := c.Output
	if dest == "" {
		dest = "the store"
	}
	if c.Executor != "local" {
		if c.NoCache {
			return &exitError{2, fmt.Errorf("--executor %s evaluates into the cache: --no-cache does not apply", c.Executor)}
		}
		return c.runCluster(ctx, g, t)
	}
	var cache replay.Cache
	if !c.NoCache {
		st, err := t.CacheStore(ctx)
		if err != nil {
			return err
		}
		cache = source.Cache(st)
	}
	bar := replay.NewProgressBar(g.Stderr, isTerminal(g.Stderr))
	ev, opts, err := c.evaluator(ctx, g, t, bar, cache)
	if err != nil {
		return err
	}
	// The parts' digest is taken before the parts are read: a trace that
	// grows in between gets a report that says it is older than it is,
	// never one that says it is newer.
	var nparts int
	opts.PartsDigest, nparts, _ = trace.PartIndexDigest(t.TracePath)
	if c.HTML == "" {
		opts.Previous = previousDigest
	}
	var out *replay.Output
	var evalErr error
	if replay.Unchanged(ctx, t.ID, ev, opts) {
		evalErr = replay.ErrUnchanged
	} else {
		parts, commits, err := replay.PartCommitsAt(t.TracePath)
		if err != nil {
			return fmt.Errorf("plan evaluation of %s: %w", t.ID, err)
		}
		nparts = len(parts)
		out, evalErr = replay.EvaluateParts(ctx, t.ID, parts, commits, t.History, ev, opts)
	}
	relabelled := false
	if errors.Is(evalErr, replay.ErrUnchanged) {
		// The trees' results are the same; the labels are recomputed from
		// the trace and the report (thresholds may have changed), and the
		// report is written again only if they differ.
		if data, err := os.ReadFile(c.Output); err == nil && replay.ReportDigest(data) == previousDigest {
			prev := &replay.Output{}
			if err := json.Unmarshal(data, prev); err != nil {
				return fmt.Errorf("read %q: %w", c.Output, err)
			}
			changed, err := relabel(t.TracePath, prev, labelOpts)
			if err != nil {
				return err
			}
			if changed {
				out, evalErr, relabelled = prev, nil, true
			}
		}
	}
	if errors.Is(evalErr, replay.ErrUnchanged) {
		if t.KeepsEvaluation() {
			// The copy beside the trajectory is compared with the report
			// only here: a loose trace has none, and the report is not read.
			if data, err := os.ReadFile(c.Output); err == nil && replay.ReportDigest(data) == previousDigest {
				if err := t.SaveEvaluationUnlessSame(ctx, data); err != nil {
					g.Logger.Warn("keep evaluation beside the trajectory", "err", err)
				}
			}
		}
		fmt.Fprintf(g.Stderr, "evaluated %d parts: every tree from the cache, %s unchanged\n", nparts, dest)
		return nil
	}
	if out == nil {
		return evalErr
	}
	if !relabelled {
		if _, err := relabel(t.TracePath, out, labelOpts); err != nil {
			return err
		}
	}
	data, err := replay.MarshalIndent(out)
	if err != nil {
		return err
	}
	if c.Output != "" {
		if err := atomicfile.WriteBytes(c.Output, data); err != nil {
			return err
		}
	}
	if err := t.SaveEvaluation(ctx, data); err != nil {
		if c.Output == "" {
			return err
		}
		g.Logger.Warn("keep evaluation beside the trajectory", "err", err)
	}
	if c.HTML != "" {
		if err := writeReportFile(c.HTML, report.Report{
			Title: "Trajectory " + t.ID, Trajectories: []report.Trajectory{report.Summarize(t.Trace, out)},
		}, report.WriteHTML); err != nil {
			return err
		}
	}
	fmt.Fprintf(g.Stderr, "evaluated %d parts: %d commits, %d distinct trees, %d from cache, %d ms → %s\n",
		out.Stats.Parts, out.Stats.UniqueCommits, out.Stats.UniqueTrees, out.Stats.CacheHits, out.Stats.DurationMs, dest)
	return evalErr
}

// ReplayVerifyCmd checks a trajectory's integrity. Exit status: 0 when it
// is intact, 1 listing every problem otherwise, 2 for usage errors.
type ReplayVerifyCmd struct {
	replaySource
	JSON bool `help:"Print the problems as JSON."`
}

func (c *ReplayVerifyCmd) Run(ctx context.Context, g *Globals) error {
	// The trace streams through the checks: a long trace is never held.
	t, err := c.open(ctx, g, source.TraceHeader)
	if err != nil {
		return err
	}
	defer t.Close()
	probs, parts, err := t.Verify(ctx)
	if err != nil {
		return err
	}
	if c.JSON {
		data, err := replay.MarshalIndent(map[string]any{"trajectory_id": t.ID, "ok": len(probs) == 0, "problems": nonNil(probs)})
		if err != nil {
			return err
		}
		g.Stdout.Write(data)
	} else if len(probs) == 0 {
		fmt.Fprintf(g.Stdout, "trajectory %s: ok (%d parts, every commit in the bundle)\n", trace.Printable(t.ID), parts)
	} else {
		fmt.Fprintf(g.Stdout, "trajectory %s: %d problem(s)\n", trace.Printable(t.ID), len(probs))
		for _, p := range probs {
			fmt.Fprintf(g.Stdout, "  %s\n", trace.Printable(p.String()))
		}
	}
	if len(probs) > 0 {
		return &exitError{1, nil}
	}
	return nil
}

func nonNil(p []replay.Problem) []replay.Problem {
	if p == nil {
		return []replay.Problem{}
	}
	return p
}

// allottedCPUs is the CPUs this evaluate may use: a Slurm job's
// SLURM_CPUS_PER_TASK (a cluster whose task plugin does not confine the
// job shows every CPU of the node), else the CPUs the process may run on.
func allottedCPUs(getenv func(string) string) int {
	if n, err := strconv.Atoi(getenv("SLURM_CPUS_PER_TASK")); err == nil && n > 0 {
		return n
	}
	return runtime.NumCPU()
}
