package evaluation

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"

	"github.com/trajlab/traj/environment"
)

// Evaluator runs test paths against one checked-out repository state
// (replay/evalbox's, built by evalbox.New, for untrusted trees).
type Evaluator interface {
	// Version is a digest of everything besides the tree that decides
	// results (suites, runner, build script, the task's settings, the
	// sandbox); it is part of the cache key.
	Version() string
	// Evaluate builds the repository in dir and runs testPaths. Test
	// failures and build failures are results, not errors; an error means
	// the evaluation itself could not be done.
	Evaluate(ctx context.Context, dir string, testPaths []string) (Result, error)
}

// EnvironmentEvaluator adapts an environment.Environment to Evaluator: it
// builds the tree once and runs every test path against that build.
type EnvironmentEvaluator struct {
	Env environment.Environment
	// CaseWorkers bounds the cases run at once within one tree; 0 means
	// cores / TreeWorkers, so trees × cases do not oversubscribe the CPU.
	CaseWorkers int
	// TreeWorkers is evaluate's --workers; 0 means one per core.
	TreeWorkers int
	// OnCase, when set, is called after each test case (progress).
	OnCase func()
	// Executor runs the tree's build, compiles and programs (nil: on the
	// host, for trusted trees; replay/evalbox's sandboxes otherwise).
	Executor environment.Executor
	// Secret is the store's evaluation secret (environment.RunOptions).
	Secret []byte
	// Digest goes to every run (environment.RunOptions): with Secret it
	// keys the programs an evaluation generates (the fresh suite).
	Digest string
	// TempDir holds the cases' folders (environment.RunOptions.TempDir).
	TempDir string
}

// Version implements Evaluator.
func (e *EnvironmentEvaluator) Version() string { return e.Env.Version() }

// Evaluate implements Evaluator.
func (e *EnvironmentEvaluator) Evaluate(ctx context.Context, dir string, paths []string) (Result, error) {
	res, _, err := e.EvaluateDetailed(ctx, dir, paths)
	return res, err
}

// EvaluateDetailed is Evaluate that also returns the environment's own
// result of each path, in order (every case with its expected and actual
// output: what run_tests answers the agent).
func (e *EnvironmentEvaluator) EvaluateDetailed(ctx context.Context, dir string, paths []string) (Result, []environment.Result, error) {
	build := e.Env.Build(ctx, dir, e.Executor)
	if err := ctx.Err(); err != nil {
		return Result{}, nil, err
	}
	return e.RunBuilt(ctx, dir, build, paths)
}

// RunBuilt runs every test path against dir, already built (build is its
// result): the built tree, or a folder holding only the build's artifacts
// (replay/evalbox), which is all each compile is then shown.
func (e *EnvironmentEvaluator) RunBuilt(ctx context.Context, dir string, build environment.BuildResult, paths []string) (Result, []environment.Result, error) {
	workers := e.CaseWorkers
	if workers <= 0 {
		trees := e.TreeWorkers
		if trees <= 0 {
			trees = runtime.NumCPU()
		}
		workers = max(1, runtime.NumCPU()/trees)
	}
	opts := environment.RunOptions{Workers: workers, Prebuilt: &build, Executor: e.Executor, Secret: e.Secret, Digest: e.Digest, TempDir: e.TempDir}
	res := Result{Suites: make(map[string]SuiteResult, len(paths))}
	runs := make([]environment.Result, 0, len(paths))
	for _, p := range paths {
		if e.OnCase != nil {
			seen := 0
			opts.Progress = func(done, _ int) {
				for ; seen < done; seen++ {
					e.OnCase()
				}
			}
		}
		r, err := e.Env.Run(ctx, dir, p, opts)
		if err != nil {
			return Result{}, nil, fmt.Errorf("run %s: %w", p, err)
		}
		runs = append(runs, r)
		s := SuiteResult{Passed: r.Passed, Failed: r.Failed, Total: r.Total, FixedLike: r.FixedLike, Cases: make([]CaseResult, 0, len(r.Cases))}
		if !r.Build.OK {
			s.Error = "build failed: " + r.Build.Error
		}
		var voids []string
		for _, v := range r.Voided {
			voids = append(voids, v.Suite+": "+v.Reason)
		}
		s.Void = strings.Join(voids, "; ")
		for _, c := range r.Cases {
			s.Cases = append(s.Cases, CaseResult{Name: c.Name, Passed: c.Passed})
		}
		res.Suites[p] = s
	}
	return res, runs, nil
}

// HeavySuites are left out of the default test paths: the full gcc torture
// suite is about 1,500 programs per tree, too slow to run at every
// distinct state of a long trajectory by default. Ask for it with --tests.
var HeavySuites = []string{"torture", "torture_std"}

// DefaultTestPaths picks what evaluate runs when no --tests is given: the
// test paths the trajectory recorded for its environment if any, else every
// top-level suite the environment has except HeavySuites (and except the
// "all" alias, which would run everything twice).
func DefaultTestPaths(recorded []string, available []string) []string {
	if len(recorded) > 0 {
		return slices.Clone(recorded)
	}
	var out []string
	for _, p := range available {
		if p == "all" || strings.Contains(p, "/") || slices.Contains(HeavySuites, p) {
			continue
		}
		out = append(out, p)
	}
	return out
}
