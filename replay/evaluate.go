package replay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/trajlab/traj/environment/evaluation"
	"log/slog"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trajlab/traj/trace"
)

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
	// Commit is the commit just finished; "" for the one report of every
	// tree the cache served.
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
	// Previous is the inputs digest of an earlier report (its
	// InputsDigest, after ReadReportDigest checked it): when the cache
	// serves every tree and the digest is the same, no report is built
	// and Evaluate returns ErrUnchanged.
	Previous string
	// PartsDigest is trace.PartIndexDigest of the trace the parts were
	// read from, taken before they were read ("" when it has none). With
	// it, a report the cache serves entirely gets a digest of the parts
	// and the cache set alone, which Unchanged checks without reading a
	// part, commit or tree.
	PartsDigest string
}

// workers is how many trees are evaluated at once.
func (o EvaluateOptions) workers() int {
	if o.Workers > 0 {
		return o.Workers
	}
	return runtime.NumCPU()
}

// Unchanged reports whether an evaluate with opts would write the report
// whose inputs digest is opts.Previous, from opts.PartsDigest and the
// trajectory's cache set's sum alone: a cached evaluate of 50,000 parts
// then reads two small files instead of the part index, the bundle's
// commits and 12,500 entries. false means only "evaluate": the report is
// then built, and left as it is if it is the same.
func Unchanged(ctx context.Context, id string, ev Evaluator, opts EvaluateOptions) bool {
	sets, ok := opts.Cache.(SetCache)
	if !ok || opts.Previous == "" || opts.PartsDigest == "" || len(opts.TestPaths) == 0 {
		return false
	}
	envVersion := ev.Version()
	sum, err := sets.SetSum(ctx, SetName(id, envVersion, opts.TestPaths))
	if err != nil || sum == "" {
		return false
	}
	return quickDigest(id, opts.EnvironmentName, envVersion, opts.TestPaths, opts.workers(), opts.PartsDigest, sum) == opts.Previous
}

// ErrUnchanged says an evaluate would write the report it was given the
// inputs digest of (EvaluateOptions.Previous).
var ErrUnchanged = errors.New("evaluation unchanged")

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
	workers := opts.workers()
	if len(opts.TestPaths) == 0 {
		return nil, errors.New("evaluate: no test paths given")
	}
	paths := slices.Clone(opts.TestPaths)
	envVersion := ev.Version()

	plan, err := NewPlanParts(ctx, parts, partCommit, h)
	if err != nil {
		return nil, fmt.Errorf("plan evaluation of %s: %w", id, err)
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

	// Cache lookups first, so only misses take a worker: the trajectory's
	// set first (one object), then the trees it lacks, several at a time
	// (thousands of small reads at 10,000 parts; a remote store's round
	// trips overlap), taken in plan order.
	sets, _ := cache.(SetCache)
	setName := SetName(id, envVersion, paths)
	set := loadSet(ctx, sets, setName, envVersion, paths, logger)
	looked := lookupCache(ctx, cache, set, plan.Trees, envVersion, paths, 4*workers)
	if opts.Previous != "" && len(plan.Unresolved) == 0 {
		if d, ok := inputsDigest(id, opts.EnvironmentName, envVersion, paths, workers, plan, looked); ok && d == opts.Previous {
			saveSet(ctx, sets, setName, set, plan.Trees, looked, nil, envVersion, paths, logger)
			return nil, ErrUnchanged
		}
	}
	todo := checkLooked(ctx, cache, set, plan.Trees, looked, envVersion, paths, logger)
	for i, tree := range plan.Trees {
		if l := looked[i]; l.ok {
			results[tree] = &treeResult{result: l.entry.Result, source: SourceCache, duration: time.Duration(l.entry.DurationMs) * time.Millisecond}
			done++
			cached++
		}
	}
	if cached > 0 && opts.Progress != nil {
		// One report for every tree the cache served (a line a tree would
		// be 12,500 lines of a 50,000-part trajectory).
		opts.Progress(Progress{Done: done, Total: len(plan.Trees), Cached: cached})
	}
	var evaluated sync.Map // tree → CacheEntry written by this evaluate
	evaluateTrees(ctx, h, ev, plan.TreeCommit, todo, paths, cache, workers, opts.TempDir, logger,
		func(tree string, r *treeResult, written *CacheEntry) {
			if written != nil {
				evaluated.Store(tree, *written)
			}
			mu.Lock()
			results[tree] = r
			mu.Unlock()
			report(plan.TreeCommit[tree], false)
		})
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("evaluate %s: %w", id, err)
	}
	setSum := saveSet(ctx, sets, setName, set, plan.Trees, looked, &evaluated, envVersion, paths, logger)

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
	for _, r := range results {
		if r.source == SourceEvaluated && r.err == nil && r.result.Key != nil && r.result.Key.Cached {
			out.Stats.ArtifactHits++
		}
	}
	if cached == len(plan.Trees) && len(plan.Unresolved) == 0 {
		if opts.PartsDigest != "" && setSum != "" {
			out.InputsDigest = quickDigest(id, opts.EnvironmentName, envVersion, paths, workers, opts.PartsDigest, setSum)
		} else {
			out.InputsDigest, _ = inputsDigest(id, opts.EnvironmentName, envVersion, paths, workers, plan, looked)
		}
	}
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
		if k := r.result.Key; k != nil {
			ce.Key, ce.Artifact, ce.KeyWhy = k.Key, k.Artifact, k.Why
			if k.Cached && ce.Source == SourceEvaluated {
				ce.Source = SourceArtifact
			}
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
				pe.Suites[name] = SuiteSummary{Passed: s.Passed, Failed: s.Failed, Total: s.Total, PassRate: PassRate(s.Passed, s.Total), Error: s.Error,
					FixedLike: s.FixedLike}
				pe.FixedLike += s.FixedLike
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

// treeResult is one distinct tree's result in an evaluate.
type treeResult struct {
	result   Result
	source   string
	duration time.Duration
	err      error
}

// loadSet reads the trajectory's cache set (nil when the cache keeps
// none, or it is unreadable or of other inputs: the trees' own entries
// are read then).
func loadSet(ctx context.Context, sets SetCache, name, envVersion string, paths []string, logger *slog.Logger) *Set {
	if sets == nil {
		return nil
	}
	switch set, err := sets.LoadSet(ctx, name); {
	case err != nil:
		logger.Warn("evaluation cache set ignored; reading the trees' entries", "err", err)
		return nil
	case set != nil && (set.EnvVersion != envVersion || !slices.Equal(set.TestPaths, paths)):
		logger.Warn("evaluation cache set ignored; reading the trees' entries", "why", "set of another environment or test paths")
		return nil
	default:
		return set
	}
}

// checkLooked decodes the set's entries among looked and checks every
// entry against its tree, environment and paths: afterwards looked[i].ok
// says the cache serves trees[i] (its entry in looked[i].entry). It
// returns the trees left to evaluate, in order.
func checkLooked(ctx context.Context, cache Cache, set *Set, trees []string, looked []cacheLookup, envVersion string, paths []string, logger *slog.Logger) []string {
	var todo []string
	for i, tree := range trees {
		key := evaluation.CacheKey(tree, envVersion, paths)
		l := &looked[i]
		if l.ok && l.set {
			if l.entry, l.err = set.entry(tree); l.err != nil {
				// The set's sum matched, so this is no accident: read the
				// tree's own entry.
				logger.Warn("evaluation cache set entry ignored", "tree", tree, "why", l.err)
				l.set = false
				l.entry, l.ok, l.err = cache.Get(ctx, key)
				l.digest = l.entry.Digest
			}
		}
		e, ok, err := l.entry, l.ok, l.err
		switch {
		case errors.Is(err, evaluation.ErrBadEntry):
			logger.Warn("evaluation cache entry ignored; evaluating the tree again", "tree", tree, "why", err)
		case err != nil:
			logger.Warn("evaluation cache read", "tree", tree, "err", err)
		case ok && !e.Matches(tree, envVersion, paths):
			logger.Warn("evaluation cache entry ignored; evaluating the tree again", "tree", tree,
				"why", fmt.Sprintf("entry %s is for tree %s, environment %s, paths %v", key, e.Tree, e.EnvVersion, e.TestPaths))
			ok = false
		}
		l.ok = ok && err == nil
		if !l.ok {
			todo = append(todo, tree)
		}
	}
	return todo
}

// evaluateTrees evaluates todo, workers at a time, each exported from its
// commit (treeCommit) into a fresh worktree, by the one per-tree protocol
// (evaluation.Tree). Each result is written to the cache as soon as it is
// done, so a killed evaluate loses only the trees in flight; done is
// called once a tree (written: its cache entry, nil when it failed or the
// write did), from the workers. It stops feeding trees when ctx ends.
func evaluateTrees(ctx context.Context, h History, ev Evaluator, treeCommit map[string]string, todo []string, paths []string, cache Cache, workers int, tempDir string, logger *slog.Logger, done func(tree string, r *treeResult, written *CacheEntry)) {
	one := evaluation.Tree{Eval: ev, Cache: cache, TempDir: tempDir, Logger: logger}
	jobs := make(chan string)
	var wg sync.WaitGroup
	for range min(workers, max(len(todo), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for tree := range jobs {
				commit := treeCommit[tree]
				s, err := one.Evaluate(ctx, commit, tree, paths, func(ctx context.Context, dir string) error {
					return h.Export(ctx, commit, dir)
				})
				if err != nil {
					logger.Error("evaluate commit", "commit", commit, "err", err)
				}
				done(tree, &treeResult{result: s.Result, source: SourceEvaluated, duration: s.Duration, err: err}, s.Kept)
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
}

// cacheLookup is one tree's cache read.
type cacheLookup struct {
	entry CacheEntry
	ok    bool
	err   error
	// set says the entry is in the trajectory's set (not yet decoded:
	// digest is the set's, entry is empty until decodeSetEntry).
	set    bool
	digest string
}

// lookupCache finds the cache entry of every tree: in set when it holds
// the tree, else read from the cache, n at a time.
func lookupCache(ctx context.Context, cache Cache, set *Set, trees []string, envVersion string, paths []string, n int) []cacheLookup {
	out := make([]cacheLookup, len(trees))
	var missing []int
	for i, tree := range trees {
		if set != nil {
			if se, ok := set.Entries[tree]; ok {
				out[i] = cacheLookup{ok: true, set: true, digest: se.Digest}
				continue
			}
		}
		missing = append(missing, i)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(n, len(missing)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := int(next.Add(1) - 1); j < len(missing); j = int(next.Add(1) - 1) {
				i := missing[j]
				l := &out[i]
				l.entry, l.ok, l.err = cache.Get(ctx, evaluation.CacheKey(trees[i], envVersion, paths))
				l.digest = l.entry.Digest
			}
		}()
	}
	wg.Wait()
	return out
}

// saveSet writes the trajectory's set again when it lacks an entry the
// cache served or this evaluate wrote (evaluated; nil for none), so the
// next evaluate reads one object. A set that cannot be written costs the
// next evaluate the per-tree reads, nothing else. It returns the stored
// set's Sum when the set holds every tree ("" otherwise).
func saveSet(ctx context.Context, sets SetCache, name string, set *Set, trees []string, looked []cacheLookup, evaluated *sync.Map, envVersion string, paths []string, logger *slog.Logger) string {
	if sets == nil {
		return ""
	}
	next := &Set{EnvVersion: envVersion, TestPaths: paths, Entries: make(map[string]SetEntry, len(trees))}
	changed := false
	for i, tree := range trees {
		l := looked[i]
		var e CacheEntry
		switch {
		case l.ok && l.set:
			next.Entries[tree] = set.Entries[tree]
			continue
		case l.ok && l.err == nil:
			e = l.entry
		case evaluated != nil:
			v, ok := evaluated.Load(tree)
			if !ok {
				continue
			}
			e = v.(CacheEntry)
		default:
			continue
		}
		added, err := next.add(e)
		if err != nil {
			logger.Warn("evaluation cache set", "err", err)
			return ""
		}
		changed = changed || added
	}
	covers := len(next.Entries) == len(trees)
	if !changed {
		if set == nil || !covers {
			return ""
		}
		return set.Sum
	}
	if err := sets.SaveSet(ctx, name, next); err != nil {
		logger.Warn("evaluation cache set write", "err", err)
		return ""
	}
	if !covers {
		return ""
	}
	return next.Sum
}

// quickDigest is the inputs digest of a report the cache served entirely
// when the parts' digest is known (EvaluateOptions.PartsDigest): the
// parts (so their commits, and the commits' trees, which a commit's id
// fixes) and the cache set holding every tree's entry stand for what
// inputsDigest lists one by one. It starts with another line, so the two
// never meet.
func quickDigest(id, envName, envVersion string, paths []string, workers int, partsDigest, setSum string) string {
	b := fmt.Appendf(nil, "%s\nquick\nid %q\nenv %q %q\nworkers %d\n", outputVersion, id, envName, envVersion, workers)
	for _, p := range paths {
		b = fmt.Appendf(b, "path %q\n", p)
	}
	b = fmt.Appendf(b, "parts %s\nset %s\n", partsDigest, setSum)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// inputsDigest is the digest of everything an evaluate's report is made
// of when the cache serves every tree: the trajectory, its parts'
// commits, their trees, each tree's cache entry (by its digest), the
// environment and test paths, the workers. ok is false when some tree was
// not served by the cache. Two evaluates with the same digest write the
// same report but for its duration.
func inputsDigest(id, envName, envVersion string, paths []string, workers int, plan *Plan, looked []cacheLookup) (string, bool) {
	for _, l := range looked {
		if !l.ok || l.err != nil || l.digest == "" {
			return "", false
		}
	}
	b := make([]byte, 0, 64*(len(plan.Parts)+2*len(plan.Commits)))
	b = fmt.Appendf(b, "%s\nid %q\nenv %q %q\nworkers %d\n", outputVersion, id, envName, envVersion, workers)
	for _, p := range paths {
		b = fmt.Appendf(b, "path %q\n", p)
	}
	for _, part := range plan.Parts {
		b = strconv.AppendInt(b, int64(part), 10)
		b = append(b, ' ')
		b = append(b, plan.PartCommit[part]...)
		b = append(b, '\n')
	}
	for _, c := range plan.Commits {
		b = append(b, c...)
		b = append(b, ' ')
		b = append(b, plan.CommitTree[c]...)
		b = append(b, '\n')
	}
	for i, tree := range plan.Trees {
		b = append(b, tree...)
		b = append(b, ' ')
		b = append(b, looked[i].digest...)
		b = append(b, '\n')
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), true
}
