// Package evaluate is `traj replay evaluate` as a library call: a
// Request (what the command's flags say) and Run, which opens the
// trajectory, builds its evaluator by the one constructor
// (replay/evalbox.New) from the environment the trace recorded
// (environment/evaluation's registry and settings), evaluates every
// distinct tree (replay.EvaluateParts, cached) or hands them to a
// cluster (Request.Cluster), and writes the report: the output file, the
// copy beside the trajectory in the store, the HTML report. The CLI maps
// its flags to a Request; the experiment's attached evaluation calls Run
// the same way.
//
// A report this evaluate would write again (every tree from the cache,
// same inputs) is left as it is (replay.Unchanged, replay.ErrUnchanged):
// at 50,000 parts it is 24 MB; the labels are recomputed all the same
// (thresholds may have changed) and the report written again only when
// they differ.
package evaluate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/trajlab/traj/environment/evaluation"
	"github.com/trajlab/traj/environment/evaluation/registry"
	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/evalbox"
	"github.com/trajlab/traj/replay/labels"
	"github.com/trajlab/traj/replay/report"
	"github.com/trajlab/traj/replay/source"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/atomicfile"
)

// Request is one evaluate.
type Request struct {
	// Source names the trajectory (Ref, StoreURL, or loose TracePath and
	// BundlePath); Run sets how much of it is read.
	Source source.Request
	// Output is the evaluation JSON's file ("" with StoreOnly or a
	// Cluster that writes none).
	Output string
	// StoreOnly keeps the report only beside the trajectory
	// (evaluation.json), no Output: an experiment's attached evaluation,
	// whose work folder may be the store.
	StoreOnly bool
	// HTML, when set, is an HTML report's file.
	HTML string
	// NoCache neither reads nor writes the evaluation cache.
	NoCache bool
	// Tests are the test paths (default: the trace's recorded ones, else
	// every suite but the heavy ones: evaluation.DefaultTestPaths).
	Tests []string
	// Workers is how many distinct trees are evaluated at once (0: the
	// CPUs allotted, AllottedCPUs).
	Workers int
	// TestsDir is the fixtures root of the public suites.
	TestsDir string
	// Sandbox is the provider each tree is built and tested in ("": the
	// best available; "local": none, for trusted trees).
	Sandbox string
	// Labels are the failure labels' thresholds.
	Labels labels.Options
	// Environments is what the trace's environment name picks (zero:
	// registry.Builtin()).
	Environments registry.Environments
	// Task is the folder of the task the trajectory ran (registry.Config's
	// TaskDir: a Harbor task's trees are scored in its verifier's room);
	// "": TaskOf's.
	Task string
	// TaskOf names the task folder the trajectory's run recorded (its
	// run.json, read by orchestrator's one reader; "" when it is not
	// here); nil: none.
	TaskOf func(t *source.Trajectory) string
	// Executor names where the trees are evaluated ("" or "local": here;
	// anything else needs Cluster).
	Executor string
	// Cluster evaluates the trajectory's trees elsewhere (an array of
	// tasks against the store's cache) and then has the report written
	// (Run with no Cluster, every tree from the cache).
	Cluster func(ctx context.Context, t *source.Trajectory, e Evaluation) error
	// Logger gets warnings; Stderr the progress and the closing line,
	// redrawn in place when Terminal.
	Logger   *slog.Logger
	Stderr   io.Writer
	Terminal bool
	// Getenv reads SLURM_CPUS_PER_TASK (AllottedCPUs; nil: os.Getenv).
	Getenv func(string) string
}

// Evaluation is a trajectory's evaluator and the options of its
// evaluate: what a local evaluate, a cluster's submitter and its tasks
// share, so their cache keys are the same.
type Evaluation struct {
	Evaluator *evalbox.Evaluator
	Options   replay.EvaluateOptions
	// Task is the task folder the environment was opened on ("": none),
	// what a cluster's tasks are given too.
	Task string
}

func (r Request) local() bool { return r.Executor == "" || r.Executor == "local" }

func (r Request) logger() *slog.Logger {
	if r.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Logger
}

func (r Request) stderr() io.Writer {
	if r.Stderr == nil {
		return io.Discard
	}
	return r.Stderr
}

// Open opens the trajectory req names, reading as much of it as read
// says, its warnings logged.
func Open(ctx context.Context, req Request, read source.TraceRead, lazy bool) (*source.Trajectory, error) {
	sr := req.Source
	sr.Read, sr.LazyHistory = read, lazy
	t, err := source.Open(ctx, sr)
	if err != nil {
		return nil, err
	}
	for _, w := range t.Warnings {
		req.logger().Warn(w)
	}
	return t, nil
}

// Run evaluates the trajectory req names. Its error is
// replay.ErrIncomplete's when some tree could not be evaluated (the
// report still holds the others) and matches replay.ErrUsage for the
// caller's mistakes.
func Run(ctx context.Context, req Request) error {
	if req.Output == "" && req.Executor != "kube" && !req.StoreOnly {
		return replay.UsageError("missing flags: --output=FILE")
	}
	// Parts and commits come from the trace's part index; only the HTML
	// report reads the parts themselves. The history is read only if a
	// tree is not in the cache, or a commit is not among the bundles'
	// leading commits.
	read := source.TraceHeader
	if req.HTML != "" {
		read = source.WholeTrace
	}
	t, err := Open(ctx, req, read, true)
	if err != nil {
		return err
	}
	defer t.Close()
	var previousDigest string
	if req.Output != "" {
		if previousDigest, err = replay.CheckReportOutput(req.Output, t.Protected); err != nil {
			return err
		}
	}
	if req.HTML != "" {
		if err := replay.CheckOutput(req.HTML, t.Protected); err != nil {
			return err
		}
	}
	if req.StoreOnly && !t.KeepsEvaluation() {
		return replay.UsageError("--store-only: this trajectory has no store to keep its evaluation in")
	}
	if !req.local() {
		if req.NoCache {
			return replay.UsageError("--executor %s evaluates into the cache: --no-cache does not apply", req.Executor)
		}
		if req.Cluster == nil {
			return replay.UsageError("--executor %s: no cluster to evaluate on", req.Executor)
		}
		e, err := Shared(ctx, t, req)
		if err != nil {
			return err
		}
		return req.Cluster(ctx, t, e)
	}
	var cache replay.Cache
	if !req.NoCache {
		st, err := t.CacheStore(ctx)
		if err != nil {
			return err
		}
		cache = source.Cache(st)
	}
	bar := replay.NewProgressBar(req.stderr(), req.Terminal)
	e, err := NewEvaluation(ctx, t, req, bar, cache)
	if err != nil {
		return err
	}
	return write(ctx, req, t, e, previousDigest)
}

// write evaluates t's trees (every one from the cache when the report
// is unchanged) and writes the report.
func write(ctx context.Context, req Request, t *source.Trajectory, e Evaluation, previousDigest string) error {
	dest := req.Output
	if dest == "" {
		dest = "the store"
	}
	opts := e.Options
	// The parts' digest is taken before the parts are read: a trace that
	// grows in between gets a report that says it is older than it is,
	// never one that says it is newer.
	var nparts int
	opts.PartsDigest, nparts, _ = trace.PartIndexDigest(t.TracePath)
	if req.HTML == "" {
		opts.Previous = previousDigest
	}
	var out *replay.Output
	var evalErr error
	if replay.Unchanged(ctx, t.ID, e.Evaluator, opts) {
		evalErr = replay.ErrUnchanged
	} else {
		parts, commits, err := replay.PartCommitsAt(t.TracePath)
		if err != nil {
			return fmt.Errorf("plan evaluation of %s: %w", t.ID, err)
		}
		nparts = len(parts)
		out, evalErr = replay.EvaluateParts(ctx, t.ID, parts, commits, t.History, e.Evaluator, opts)
	}
	relabelled := false
	if errors.Is(evalErr, replay.ErrUnchanged) {
		// The trees' results are the same; the labels are recomputed from
		// the trace and the report (thresholds may have changed), and the
		// report is written again only if they differ.
		if data, err := os.ReadFile(req.Output); err == nil && replay.ReportDigest(data) == previousDigest {
			prev := &replay.Output{}
			if err := json.Unmarshal(data, prev); err != nil {
				return fmt.Errorf("read %q: %w", req.Output, err)
			}
			changed, err := Relabel(t.TracePath, prev, req.Labels)
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
			if data, err := os.ReadFile(req.Output); err == nil && replay.ReportDigest(data) == previousDigest {
				if err := t.SaveEvaluationUnlessSame(ctx, data); err != nil {
					req.logger().Warn("keep evaluation beside the trajectory", "err", err)
				}
			}
		}
		fmt.Fprintf(req.stderr(), "evaluated %d parts: every tree from the cache, %s unchanged\n", nparts, dest)
		return nil
	}
	if out == nil {
		return evalErr
	}
	if !relabelled {
		if _, err := Relabel(t.TracePath, out, req.Labels); err != nil {
			return err
		}
	}
	data, err := replay.MarshalIndent(out)
	if err != nil {
		return err
	}
	if req.Output != "" {
		if err := atomicfile.WriteBytes(req.Output, data); err != nil {
			return err
		}
	}
	if err := t.SaveEvaluation(ctx, data); err != nil {
		if req.Output == "" {
			return err
		}
		req.logger().Warn("keep evaluation beside the trajectory", "err", err)
	}
	if req.HTML != "" {
		if err := writeHTML(req.HTML, report.Report{
			Title: "Trajectory " + t.ID, Trajectories: []report.Trajectory{report.Summarize(t.Trace, out)},
		}); err != nil {
			return err
		}
	}
	fmt.Fprintf(req.stderr(), "evaluated %d parts: %d commits, %d distinct trees, %d from cache, %d ms → %s\n",
		out.Stats.Parts, out.Stats.UniqueCommits, out.Stats.UniqueTrees, out.Stats.CacheHits, out.Stats.DurationMs, dest)
	return evalErr
}

// Shared is the evaluation of a cluster's submitter and tasks: against
// the store's evaluation cache (the one the tasks share), with no
// progress bar (a task's log gets lines instead).
func Shared(ctx context.Context, t *source.Trajectory, req Request) (Evaluation, error) {
	st, err := t.CacheStore(ctx)
	if err != nil {
		return Evaluation{}, err
	}
	return NewEvaluation(ctx, t, req, replay.NewProgressBar(io.Discard, false), source.Cache(st))
}

// NewEvaluation builds the evaluator of t's trees and the options of its
// evaluate, as req says: the environment the trace names (the registry's
// default when it names none, or one not registered), the test paths,
// the task's settings the trace recorded, the sandboxes each tree runs
// in, and cache (nil: none).
func NewEvaluation(ctx context.Context, t *source.Trajectory, req Request, bar *replay.ProgressBar, cache replay.Cache) (Evaluation, error) {
	envs := req.Environments
	if len(envs.Names()) == 0 {
		envs = registry.Builtin()
	}
	info := t.Trace.Environment
	var name string
	var recorded []string
	if info != nil {
		name, recorded = info.Name, info.TestPaths
	}
	entry, err := envs.Lookup(name)
	if err != nil {
		// What traj evaluated such a trace with before environments were a
		// registry: the default.
		entry, _ = envs.Lookup("")
		req.logger().Warn("the trajectory's environment is not registered: evaluating with the default", "environment", name, "default", entry.Name)
	}
	task := req.Task
	if task == "" && req.TaskOf != nil {
		task = req.TaskOf(t)
	}
	env, err := envs.Open(ctx, entry.Name, registry.Config{TestsDir: req.TestsDir, TaskDir: task})
	if err != nil {
		return Evaluation{}, replay.UsageError("trajectory %s (task %s): %v", t.ID, t.Trace.Task, err)
	}
	paths := req.Tests
	if len(paths) == 0 {
		paths = evaluation.DefaultTestPaths(recorded, env.TestPaths())
	}
	for _, p := range paths {
		if !slices.Contains(env.TestPaths(), p) {
			return Evaluation{}, replay.UsageError("test path %q is not available (public suites need --tests-dir or TRAJ_TESTS_DIR); available: %s", p, strings.Join(env.TestPaths(), ", "))
		}
	}
	opts := replay.EvaluateOptions{
		TestPaths: paths, Workers: req.Workers, EnvironmentName: entry.Name, Logger: req.Logger, Progress: bar.Tree, Cache: cache,
	}
	cpus := AllottedCPUs(req.Getenv)
	workers := req.Workers
	if workers <= 0 {
		workers = cpus
		opts.Workers = cpus
	}
	// The store's secret, as ground truth had it (no cache too).
	st, err := t.SecretStore(ctx)
	if err != nil {
		return Evaluation{}, err
	}
	secret, err := source.EvalSecret(ctx, st)
	if err != nil {
		return Evaluation{}, err
	}
	// The trees are untrusted: their build, compiles and programs each run
	// in a sandbox of their own (local: on the host, for trusted trees);
	// the evaluator is this process. What the run's task decided (the C
	// compiler hidden, compiles shown only the build's artifacts), replay
	// does too.
	ev, err := evalbox.New(ctx, evalbox.Config{Env: env, Settings: evaluation.Recorded(info), Provider: req.Sandbox,
		Cache: cache, Secret: secret, CaseWorkers: max(1, cpus/workers), OnCase: bar.Case})
	switch {
	case errors.Is(err, evalbox.ErrProvider):
		return Evaluation{}, fmt.Errorf("this trajectory's task hid the C compiler from its evaluations: %w", err)
	case err != nil:
		return Evaluation{}, fmt.Errorf("%w (or --sandbox local for trees you trust)", err)
	}
	req.logger().Info("evaluating", "sandbox", ev.Provider)
	return Evaluation{Evaluator: ev, Options: opts, Task: task}, nil
}

// AllottedCPUs is the CPUs an evaluate may use: a Slurm job's
// SLURM_CPUS_PER_TASK (a cluster whose task plugin does not confine the
// job shows every CPU of the node), else the CPUs the process may run on.
func AllottedCPUs(getenv func(string) string) int {
	if getenv == nil {
		getenv = os.Getenv
	}
	if n, err := strconv.Atoi(getenv("SLURM_CPUS_PER_TASK")); err == nil && n > 0 {
		return n
	}
	return runtime.NumCPU()
}
