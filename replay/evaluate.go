package replay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trajlab/traj/trace"
)

// Evaluator runs test paths against one checked-out repository state. The
// environment package satisfies it through a thin adapter.
type Evaluator interface {
	// Version is a digest of everything besides the tree that decides
	// results (suites, runner, build script); it is part of the cache key.
	Version() string
	// Evaluate builds the repository in dir and runs testPaths. Test
	// failures and build failures are results, not errors; an error means
	// the evaluation itself could not be done.
	Evaluate(ctx context.Context, dir string, testPaths []string) (Result, error)
}

// History is a trajectory's git history, opened from its bundle.
type History interface {
	TreeResolver
	// HasCommit reports whether commit is in the history.
	HasCommit(ctx context.Context, commit string) (bool, error)
	// Checkout writes commit into dir (empty or absent) as a git
	// repository whose HEAD is commit and whose status is clean.
	Checkout(ctx context.Context, commit, dir string) error
	// Export writes commit's files into dir (empty or absent) without a
	// .git: evaluate's worktrees, cheaper than a clone per tree. It is
	// called from several goroutines at once.
	Export(ctx context.Context, commit, dir string) error
}

// Progress is reported after each distinct tree is done.
type Progress struct {
	Done, Total int
	// Cached counts trees served from the cache so far.
	Cached int
	// Commit is the commit just finished.
	Commit string
}

// EvaluateOptions tune Evaluate. The zero value evaluates with one worker
// per core and no cache.
type EvaluateOptions struct {
	TestPaths []string
	// Workers is how many trees are evaluated at once; <= 0 means one per core.
	Workers int
	Cache   Cache
	// EnvironmentName is recorded in the output.
	EnvironmentName string
	// TempDir holds the per-tree worktrees; "" means os.TempDir().
	TempDir  string
	Progress func(Progress)
	Logger   *slog.Logger
	// Now is the clock (for reproducible tests); nil means time.Now.
	Now func() time.Time
}

// ErrIncomplete is wrapped by Evaluate's error when some trees could not be
// evaluated; the returned Output is still complete for the others.
var ErrIncomplete = errors.New("evaluation incomplete")

// Evaluate evaluates every distinct tree the trajectory reached once (from
// the cache when it can), in parallel worktrees, and maps the results back
// onto commits and parts.
func Evaluate(ctx context.Context, tr *trace.Trace, h History, ev Evaluator, opts EvaluateOptions) (*Output, error) {
	parts, partCommit, err := PartCommits(tr)
	if err != nil {
		return nil, fmt.Errorf("plan evaluation of %s: %w", tr.TrajectoryID, err)
	}
	return EvaluateParts(ctx, tr.TrajectoryID, parts, partCommit, h, ev, opts)
}

// EvaluateParts is Evaluate for trajectory id's parts (in order) and
// their commits, as PartCommitsAt reads them from the part index without
// reading the trace.
func EvaluateParts(ctx context.Context, id string, parts []int, partCommit map[int]string, h History, ev Evaluator, opts EvaluateOptions) (*Output, error) {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	start := now()
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cache := opts.Cache
	if cache == nil {
		cache = nopCache{}
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	if len(opts.TestPaths) == 0 {
		return nil, errors.New("evaluate: no test paths given")
	}
	paths := slices.Clone(opts.TestPaths)
	envVersion := ev.Version()

	plan, err := NewPlanParts(ctx, parts, partCommit, h)
	if err != nil {
		return nil, fmt.Errorf("plan evaluation of %s: %w", id, err)
	}

	type treeResult struct {
		result   Result
		source   string
		duration time.Duration
		err      error
	}
	results := make(map[string]*treeResult, len(plan.Trees))
	var mu sync.Mutex
	done, cached := 0, 0
	report := func(commit string, fromCache bool) {
		mu.Lock()
		done++
		if fromCache {
			cached++
		}
		p := Progress{Done: done, Total: len(plan.Trees), Cached: cached, Commit: commit}
		mu.Unlock()
		if opts.Progress != nil {
			opts.Progress(p)
		}
	}

	// Cache lookups first, so only misses take a worker. They are read
	// several at a time (thousands of small reads at 10,000 parts; a
	// remote store's round trips overlap), then taken in plan order.
	looked := lookupCache(ctx, cache, plan.Trees, envVersion, paths, 4*workers)
	var todo []string
	for i, tree := range plan.Trees {
		key := CacheKey(tree, envVersion, paths)
		e, ok, err := looked[i].entry, looked[i].ok, looked[i].err
		switch {
		case errors.Is(err, ErrBadEntry):
			logger.Warn("evaluation cache entry ignored; evaluating the tree again", "tree", tree, "why", err)
		case err != nil:
			logger.Warn("evaluation cache read", "tree", tree, "err", err)
		case ok && !e.matches(tree, envVersion, paths):
			logger.Warn("evaluation cache entry ignored; evaluating the tree again", "tree", tree,
				"why", fmt.Sprintf("entry %s is for tree %s, environment %s, paths %v", key, e.Tree, e.EnvVersion, e.TestPaths))
			ok = false
		}
		if ok {
			results[tree] = &treeResult{result: e.Result, source: SourceCache, duration: time.Duration(e.DurationMs) * time.Millisecond}
			report(plan.TreeCommit[tree], true)
			continue
		}
		todo = append(todo, tree)
	}

	jobs := make(chan string)
	var wg sync.WaitGroup
	for range min(workers, max(len(todo), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for tree := range jobs {
				commit := plan.TreeCommit[tree]
				t0 := time.Now()
				res, err := evaluateTree(ctx, h, ev, commit, paths, opts.TempDir)
				d := time.Since(t0)
				tres := &treeResult{result: res, source: SourceEvaluated, duration: d, err: err}
				if err == nil {
					e := CacheEntry{Tree: tree, EnvVersion: envVersion, TestPaths: paths, Result: res, DurationMs: d.Milliseconds()}
					if perr := cache.Put(ctx, CacheKey(tree, envVersion, paths), e); perr != nil {
						logger.Warn("evaluation cache write", "tree", tree, "err", perr)
					}
				} else {
					logger.Error("evaluate commit", "commit", commit, "err", err)
				}
				mu.Lock()
				results[tree] = tres
				mu.Unlock()
				report(commit, false)
			}
		}()
	}
feed:
	for _, tree := range todo {
		select {
		case jobs <- tree:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("evaluate %s: %w", id, err)
	}

	out := &Output{
		TrajectoryID:      id,
		CommitsEvaluated:  len(plan.Commits),
		CommitEvaluations: make(map[string]*CommitEvaluation, len(plan.Commits)),
		PartToCommit:      make(PartMap[string], len(plan.Parts)),
		PartEvaluations:   make(PartMap[*PartEvaluation], len(plan.Parts)),
		Environment:       EnvironmentRef{Name: opts.EnvironmentName, Version: envVersion},
		TestPaths:         paths,
		Stats: Stats{
			Parts:         len(plan.Parts),
			UniqueCommits: len(plan.Commits),
			UniqueTrees:   len(plan.Trees),
			CacheHits:     cached,
			Workers:       workers,
		},
	}
	out.Stats.TreesEvaluated = len(plan.Trees) - cached
	for _, c := range plan.Commits {
		if uerr, ok := plan.Unresolved[c]; ok {
			out.CommitEvaluations[c] = &CommitEvaluation{Suites: map[string]SuiteResult{}, Source: SourceFailed, Error: uerr.Error(), Parts: []int{}}
			continue
		}
		tree := plan.CommitTree[c]
		r := results[tree]
		ce := &CommitEvaluation{Tree: tree, Suites: r.result.Suites, Source: r.source, DurationMs: r.duration.Milliseconds(), Parts: []int{}}
		if ce.Suites == nil {
			ce.Suites = map[string]SuiteResult{}
		}
		if rep := plan.TreeCommit[tree]; rep != c {
			ce.SameTreeAs = rep
			if r.source == SourceEvaluated {
				ce.Source = SourceSameTree
			}
			ce.DurationMs = 0
		}
		if r.err != nil {
			ce.Source = SourceFailed
			ce.Error = r.err.Error()
		}
		ce.Passed, ce.Failed, ce.Total = r.result.Totals()
		ce.PassRate = PassRate(ce.Passed, ce.Total)
		out.CommitEvaluations[c] = ce
	}
	// The parts of one commit share its PartEvaluation (read-only), so the
	// report encodes it once (PartMap.MarshalJSON).
	partEval := make(map[string]*PartEvaluation, len(plan.Commits))
	for _, part := range plan.Parts {
		c := plan.PartCommit[part]
		ce := out.CommitEvaluations[c]
		ce.Parts = append(ce.Parts, part)
		out.PartToCommit[part] = c
		pe := partEval[c]
		if pe == nil {
			pe = &PartEvaluation{Commit: c, Passed: ce.Passed, Failed: ce.Failed, Total: ce.Total, PassRate: ce.PassRate, Error: ce.Error, Suites: make(map[string]SuiteSummary, len(ce.Suites))}
			for name, s := range ce.Suites {
				pe.Suites[name] = SuiteSummary{Passed: s.Passed, Failed: s.Failed, Total: s.Total, PassRate: PassRate(s.Passed, s.Total), Error: s.Error}
			}
			partEval[c] = pe
		}
		out.PartEvaluations[part] = pe
	}
	out.TestAttribution = Attribute(plan.Parts, func(part int) (Result, bool) {
		r, ok := results[plan.CommitTree[plan.PartCommit[part]]]
		if !ok {
			return Result{}, false
		}
		return r.result, r.err == nil
	})

	var failed []string
	for _, tree := range plan.Trees {
		if r := results[tree]; r.err != nil {
			failed = append(failed, fmt.Sprintf("commit %s: %v", plan.TreeCommit[tree], r.err))
		}
	}
	for _, uerr := range plan.Unresolved {
		failed = append(failed, uerr.Error())
	}
	sort.Strings(failed)
	out.Stats.Failures = len(failed)
	out.Stats.DurationMs = now().Sub(start).Milliseconds()
	if len(failed) > 0 {
		return out, fmt.Errorf("%w: %d failed (of %d commits, %d distinct trees): %v", ErrIncomplete, len(failed), len(plan.Commits), len(plan.Trees), failed)
	}
	return out, nil
}

// cacheLookup is one tree's cache read.
type cacheLookup struct {
	entry CacheEntry
	ok    bool
	err   error
}

// lookupCache reads the cache entry of every tree, n at a time.
func lookupCache(ctx context.Context, cache Cache, trees []string, envVersion string, paths []string, n int) []cacheLookup {
	out := make([]cacheLookup, len(trees))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(n, len(trees)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < len(trees); i = int(next.Add(1) - 1) {
				l := &out[i]
				l.entry, l.ok, l.err = cache.Get(ctx, CacheKey(trees[i], envVersion, paths))
			}
		}()
	}
	wg.Wait()
	return out
}

// evaluateTree exports commit into a fresh temporary worktree, evaluates
// it and removes the worktree.
func evaluateTree(ctx context.Context, h History, ev Evaluator, commit string, paths []string, tempDir string) (Result, error) {
	dir, err := os.MkdirTemp(tempDir, "traj-eval-*")
	if err != nil {
		return Result{}, fmt.Errorf("make worktree for %s: %w", commit, err)
	}
	defer os.RemoveAll(dir)
	if err := h.Export(ctx, commit, dir); err != nil {
		return Result{}, fmt.Errorf("export %s: %w", commit, err)
	}
	res, err := ev.Evaluate(ctx, dir, paths)
	if err != nil {
		return Result{}, fmt.Errorf("evaluate %s: %w", commit, err)
	}
	return res, nil
}
