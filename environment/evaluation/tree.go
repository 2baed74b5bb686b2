package evaluation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"
)

// Tree is the one per-tree protocol every evaluation of a tree takes
// (ground truth, `traj replay evaluate`, a share of a cluster's array):
// the cache first (Get), else the tree exported into a fresh folder,
// evaluated and its result put into the cache (Evaluate) by Keep, the
// one writer of cache entries.
type Tree struct {
	Eval Evaluator
	// Cache keeps results; nil keeps none.
	Cache Cache
	// TempDir holds the exported trees; os.TempDir when empty.
	TempDir string
	Logger  *slog.Logger
}

// Export writes a tree's files into dir (empty or absent).
type Export func(ctx context.Context, dir string) error

// Scored is one tree's evaluation.
type Scored struct {
	Result Result
	// Key is the tree's cache key (CacheKey).
	Key string
	// Cached: the result came from the cache.
	Cached bool
	// Duration is how long the evaluation took (the original's, when
	// cached).
	Duration time.Duration
	// Kept is the entry written to the cache (nil: none was).
	Kept *CacheEntry
}

func (t Tree) log() *slog.Logger {
	if t.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return t.Logger
}

// Get returns tree's cached result on paths; a damaged, foreign or
// unreadable entry is logged and counts as none (the tree is evaluated
// again and the entry overwritten).
func (t Tree) Get(ctx context.Context, tree string, paths []string) (Scored, bool) {
	version := t.Eval.Version()
	key := CacheKey(tree, version, paths)
	if t.Cache == nil {
		return Scored{Key: key}, false
	}
	e, ok, err := t.Cache.Get(ctx, key)
	switch {
	case errors.Is(err, ErrBadEntry):
		t.log().Warn("evaluation cache entry ignored; evaluating the tree again", "tree", tree, "why", err)
	case err != nil:
		t.log().Warn("evaluation cache read", "tree", tree, "err", err)
	case ok && !e.Matches(tree, version, paths):
		t.log().Warn("evaluation cache entry ignored; evaluating the tree again", "tree", tree,
			"why", fmt.Sprintf("entry %s is for tree %s, environment %s, paths %v", key, e.Tree, e.EnvVersion, e.TestPaths))
	case ok:
		return Scored{Result: e.Result, Key: key, Cached: true, Duration: time.Duration(e.DurationMs) * time.Millisecond}, true
	}
	return Scored{Key: key}, false
}

// Evaluate exports tree (export) into a fresh folder named for name (the
// commit or tree the errors name), evaluates it on paths, removes the
// folder and keeps the result in the cache. A cache that cannot be
// written is logged: the result stands (Kept nil).
func (t Tree) Evaluate(ctx context.Context, name, tree string, paths []string, export Export) (Scored, error) {
	version := t.Eval.Version()
	s := Scored{Key: CacheKey(tree, version, paths)}
	start := time.Now()
	res, err := t.evaluate(ctx, name, paths, export)
	s.Duration = time.Since(start)
	if err != nil {
		return s, err
	}
	s.Result = res
	if t.Cache != nil {
		e, err := Keep(ctx, t.Cache, Inputs{Tree: tree, EnvVersion: version, TestPaths: paths}, res, s.Duration)
		if err != nil {
			t.log().Warn("evaluation cache write", "tree", tree, "err", err)
		} else {
			s.Kept = &e
		}
	}
	return s, nil
}

// Score is Get, else Evaluate once wait (nil: at once) gave a slot.
func (t Tree) Score(ctx context.Context, name, tree string, paths []string, export Export, wait func(context.Context) (release func(), err error)) (Scored, error) {
	if s, ok := t.Get(ctx, tree, paths); ok {
		return s, nil
	}
	if wait != nil {
		release, err := wait(ctx)
		if err != nil {
			return Scored{Key: CacheKey(tree, t.Eval.Version(), paths)}, err
		}
		defer release()
	}
	return t.Evaluate(ctx, name, tree, paths, export)
}

func (t Tree) evaluate(ctx context.Context, name string, paths []string, export Export) (Result, error) {
	tmp, err := os.MkdirTemp(t.TempDir, "traj-eval-")
	if err != nil {
		return Result{}, fmt.Errorf("make worktree for %s: %w", name, err)
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "tree")
	if err := export(ctx, dir); err != nil {
		return Result{}, fmt.Errorf("export %s: %w", name, err)
	}
	res, err := t.Eval.Evaluate(ctx, dir, paths)
	if err != nil {
		return Result{}, fmt.Errorf("evaluate %s: %w", name, err)
	}
	return res, nil
}

// Inputs are what a cache entry is the result of: a tree, or (Artifact
// set, Tree empty) the build's artifacts, on an environment version and
// test paths.
type Inputs struct {
	Tree, Artifact string
	EnvVersion     string
	TestPaths      []string
}

// Key is the inputs' cache key: ArtifactCacheKey when Artifact is set,
// else CacheKey.
func (in Inputs) Key() string {
	if in.Artifact != "" {
		return ArtifactCacheKey(in.Artifact, in.EnvVersion, in.TestPaths)
	}
	return CacheKey(in.Tree, in.EnvVersion, in.TestPaths)
}

// Keep writes res, which took took, into cache under in's key: the one
// writer of cache entries. The entry keeps which key the result is kept
// under, not whether this evaluation found it in the cache
// (Result.ForTree).
func Keep(ctx context.Context, cache Cache, in Inputs, res Result, took time.Duration) (CacheEntry, error) {
	if in.Artifact != "" {
		in.Tree = ""
	}
	e := CacheEntry{Tree: in.Tree, Artifact: in.Artifact, EnvVersion: in.EnvVersion, TestPaths: in.TestPaths,
		Result: res.ForTree(), DurationMs: took.Milliseconds()}
	if err := cache.Put(ctx, in.Key(), e); err != nil {
		return CacheEntry{}, err
	}
	return e, nil
}
