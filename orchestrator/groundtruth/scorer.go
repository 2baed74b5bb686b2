// Package groundtruth scores a trajectory while it runs, outside the
// agent's reach: every checkpoint tree is built and tested in an
// evaluation sandbox (replay/evalbox) with the same environment, cache key
// and result format as `traj replay evaluate`, by the same per-tree
// protocol (environment/evaluation's Tree), and the results decide
// "solved" and feed the continuation prompt (Background). The agent's own
// run_tests calls take the same road (Scorer.RunTests, behind the tool
// gateway), on a snapshot of the workspace, so the tests and their
// expected outputs never enter the agent's sandbox.
//
// With a Sample (task setting ground_truth.sample) every checkpoint is
// scored on a fixed, seeded sample of each suite, named by the
// environment as a test path of its own (so cached apart), and the full
// paths run for each new best, each sample passing completely, every
// k-th checkpoint and the final tree; a sampled result is never solved.
// Measured in environment/ccompiler's BenchmarkSampledGroundTruth: at 10
// cases a suite one tree costs 4.0x less CPU than the 196 full cases, a
// 300-checkpoint trajectory 2.1x less (67 full evaluations), the demo's
// 10 trees 1.05x (7 are new bests); the sample's score is within 10.6
// points of the full score on every demo tree. With Options.NoWait
// (ground_truth.wait false) AtTurnEnd reports the latest result landed
// instead of waiting.
package groundtruth

import (
	"context"
	"fmt"
	"github.com/trajlab/traj/environment/evaluation"
	"log/slog"
	"os"
	"time"

	"github.com/trajlab/traj/environment"
	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/evalbox"
	"github.com/trajlab/traj/trace"
)

// Trees is what the scorer needs of the checkpoint history.
type Trees interface {
	// CommitTree returns commit's tree hash.
	CommitTree(commit string) (string, error)
	// ExportTree writes a tree's files into dest (missing or empty).
	ExportTree(ctx context.Context, tree, dest string) error
}

// Evaluator builds and tests a tree in an evaluation sandbox
// (*evalbox.Evaluator).
type Evaluator interface {
	replay.Evaluator
	// EvaluateDetailed also returns each path's full environment result.
	EvaluateDetailed(ctx context.Context, dir string, paths []string) (evalbox.Payload, error)
}

// Scorer evaluates trees: from the evaluation cache when it holds the
// tree, else exported from the history and evaluated in the sandbox, and
// the result cached under the key `traj replay evaluate` uses.
type Scorer struct {
	Trees Trees
	Eval  Evaluator
	// Cache is where results are kept (the store's evaluation cache, which
	// no agent can write); nil caches nothing.
	Cache replay.Cache
	// Paths are the task's required test paths.
	Paths []string
	// TempDir holds exported trees; os.TempDir when empty.
	TempDir string
	Logger  *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Budget, when set, is the run's evaluation budget: every evaluation
	// (not a cache hit) waits for one of its slots.
	Budget *Budget
	// Sample, when set, is what ScoreSampled runs of each required path.
	Sample *Sample
}

// Sample is a fixed, seeded sample of each required path's cases, named
// by the environment as a test path of its own (so cached apart from the
// full path, and the same cases for every tree).
type Sample struct {
	Env  environment.Sampler
	Size int
	Seed int64
}

// runPaths are the test paths a sampled evaluation runs, one per required
// path (the path itself when the environment does not sample it), and
// whether any is a sample.
func (s *Scorer) runPaths() ([]string, bool) {
	if s.Sample == nil {
		return s.Paths, false
	}
	out := make([]string, len(s.Paths))
	sampled := false
	for i, p := range s.Paths {
		out[i] = p
		if sp, ok := s.Sample.Env.SamplePath(p, s.Sample.Size, s.Sample.Seed); ok {
			out[i], sampled = sp, true
		}
	}
	return out, sampled
}

// slot waits for an evaluation slot of the budget (at once without one).
func (s *Scorer) slot(ctx context.Context) (time.Duration, func(), error) {
	if s.Budget == nil {
		return 0, func() {}, nil
	}
	return s.Budget.Acquire(ctx)
}

func (s *Scorer) log() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

func (s *Scorer) now() time.Time {
	if s.Now == nil {
		return time.Now()
	}
	return s.Now()
}

// Score evaluates commit (made by part) on the required paths and
// summarizes it. An evaluation that could not be done is a GroundTruth
// with Error set, not an error; the error is only ctx's.
func (s *Scorer) Score(ctx context.Context, part int, commit string) (trace.GroundTruth, error) {
	return s.score(ctx, part, commit, s.Paths)
}

// ScoreSampled is Score on the sample of each required path (Sample);
// when no path is sampled it is Score, and its result says so (not
// Sampled).
func (s *Scorer) ScoreSampled(ctx context.Context, part int, commit string) (trace.GroundTruth, error) {
	run, _ := s.runPaths()
	return s.score(ctx, part, commit, run)
}

// score evaluates commit on run, the required paths or their samples.
func (s *Scorer) score(ctx context.Context, part int, commit string, run []string) (trace.GroundTruth, error) {
	start := s.now()
	g := trace.GroundTruth{Part: part, Commit: commit, Suites: []trace.SuiteCount{}}
	tree, err := s.Trees.CommitTree(commit)
	if err != nil {
		g.Error = err.Error()
		g.Timestamp = trace.Timestamp(s.now())
		return g, nil
	}
	g.Tree = tree
	res, key, cached, err := s.scoreTree(ctx, tree, run)
	if ctx.Err() != nil {
		return g, ctx.Err()
	}
	g.CacheKey, g.Cached = key, cached
	if k := res.Key; k != nil {
		g.Key, g.Artifact, g.ArtifactCached, g.KeyWhy = k.Key, k.Artifact, k.Cached, k.Why
	}
	if err != nil {
		g.Error = err.Error()
	} else {
		summarize(&g, res, s.Paths, run)
		if g.Sampled {
			g.SampleSeed = s.Sample.Seed
		}
	}
	g.Timestamp = trace.Timestamp(s.now())
	g.DurationMs = s.now().Sub(start).Milliseconds()
	return g, nil
}

// Detail returns the cached per-case result of a ground truth (its
// CacheKey), for the continuation prompt's failing and regressed tests.
func (s *Scorer) Detail(ctx context.Context, g trace.GroundTruth) (replay.Result, bool) {
	if s.Cache == nil || g.CacheKey == "" {
		return replay.Result{}, false
	}
	e, ok, err := s.Cache.Get(ctx, g.CacheKey)
	if err != nil || !ok {
		return replay.Result{}, false
	}
	return e.Result, true
}

// scoreTree scores tree on paths by the one per-tree protocol
// (evaluation.Tree): the cache, else exported from the checkpoint
// history and evaluated once the budget gives a slot.
func (s *Scorer) scoreTree(ctx context.Context, tree string, paths []string) (replay.Result, string, bool, error) {
	one := evaluation.Tree{Eval: s.Eval, Cache: s.Cache, TempDir: s.TempDir, Logger: s.log()}
	r, err := one.Score(ctx, tree, tree, paths, s.export(tree), func(ctx context.Context) (func(), error) {
		_, release, err := s.slot(ctx)
		return release, err
	})
	if err != nil {
		return replay.Result{}, r.Key, false, err
	}
	return r.Result, r.Key, r.Cached, nil
}

// export writes tree from the checkpoint history.
func (s *Scorer) export(tree string) evaluation.Export {
	return func(ctx context.Context, dir string) error { return s.Trees.ExportTree(ctx, tree, dir) }
}

// withTree exports tree into a fresh folder, calls fn with it, and
// removes it.
func (s *Scorer) withTree(ctx context.Context, tree string, fn func(dir string) error) error {
	tmp, err := os.MkdirTemp(s.TempDir, "traj-gt-")
	if err != nil {
		return fmt.Errorf("folder for tree %s: %w", tree, err)
	}
	defer os.RemoveAll(tmp)
	dir := tmp + "/tree"
	if err := s.export(tree)(ctx, dir); err != nil {
		return err
	}
	return fn(dir)
}

// RunTests runs one test path on a workspace snapshot (tree) in the
// evaluation sandbox and returns the environment's full result: what
// the agent's run_tests call answers, before its feedback level cuts it;
// and how long it waited for an evaluation slot.
func (s *Scorer) RunTests(ctx context.Context, tree, path string) (environment.Result, time.Duration, error) {
	waited, release, err := s.slot(ctx)
	if err != nil {
		return environment.Result{}, waited, err
	}
	defer release()
	var run environment.Result
	err = s.withTree(ctx, tree, func(dir string) error {
		p, err := s.Eval.EvaluateDetailed(ctx, dir, []string{path})
		if err != nil {
			return err
		}
		if len(p.Runs) != 1 {
			return fmt.Errorf("evaluation of %s returned %d results, want 1", path, len(p.Runs))
		}
		run = p.Runs[0]
		return nil
	})
	return run, waited, err
}

// summarize fills g's counts from res, per required path in task order;
// run[i] is the test path that ran for paths[i] (a sample of it, or
// itself). A result with any sampled path is never solved.
func summarize(g *trace.GroundTruth, res replay.Result, paths, run []string) {
	g.Solved = len(paths) > 0
	for i, p := range paths {
		sr, ok := res.Suites[run[i]]
		c := trace.SuiteCount{Path: p, Passed: int64(sr.Passed), Failed: int64(sr.Failed), Total: int64(sr.Total),
			BuildOK: ok && sr.Error == "", FixedLike: int64(sr.FixedLike)}
		if run[i] != p {
			c.SampleSize = int64(sr.Total)
			g.Sampled = true
		}
		g.Suites = append(g.Suites, c)
		g.Passed += c.Passed
		g.Failed += c.Failed
		g.Total += c.Total
		g.FixedLike += c.FixedLike
		if !ok || sr.Error != "" || sr.Total == 0 || sr.Failed > 0 || sr.Passed != sr.Total {
			g.Solved = false
		}
	}
	if g.Sampled {
		g.Solved = false
	}
}

// allPassed reports whether every path of g ran and passed every case it
// ran (for a sampled result: every case of its sample).
func allPassed(g trace.GroundTruth) bool {
	if g.Error != "" || len(g.Suites) == 0 {
		return false
	}
	for _, c := range g.Suites {
		if !c.BuildOK || c.Total == 0 || c.Failed > 0 || c.Passed != c.Total {
			return false
		}
	}
	return true
}
