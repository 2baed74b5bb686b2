package evaluation_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trajlab/traj/environment/ccompiler"
	"github.com/trajlab/traj/environment/evaluation"
	"github.com/trajlab/traj/environment/host"
)

// gccTree is a tree whose build makes ./cc a wrapper of the host's gcc.
const gccBuild = "printf '#!/bin/sh\\nexec gcc -w \"$@\"\\n' > cc && chmod +x cc\n"

// memCache is a Cache in memory; putErr, when set, fails every Put
// (failure injection: a store that cannot be written).
type memCache struct {
	m      map[string]evaluation.CacheEntry
	putErr error
}

func (c *memCache) Get(_ context.Context, key string) (evaluation.CacheEntry, bool, error) {
	e, ok := c.m[key]
	return e, ok, nil
}

func (c *memCache) Put(_ context.Context, key string, e evaluation.CacheEntry) error {
	if c.putErr != nil {
		return c.putErr
	}
	if c.m == nil {
		c.m = map[string]evaluation.CacheEntry{}
	}
	c.m[key] = e
	return nil
}

// The per-tree protocol with the real C environment on the host: the
// first score evaluates and keeps the result, the second is served by
// the cache without exporting the tree; an entry of another tree under
// the key (copied in, or a store's mix-up) is never used; a cache that
// cannot be written leaves the result standing.
func TestTreeProtocol(t *testing.T) {
	if _, err := os.Stat("/usr/bin/gcc"); err != nil {
		t.Skip("needs gcc")
	}
	env, err := ccompiler.New(ccompiler.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	paths := []string{"basics/smoke"}
	ev := &evaluation.EnvironmentEvaluator{Env: env, Executor: host.Executor{}, CaseWorkers: 2}
	var exports atomic.Int32
	export := func(ctx context.Context, dir string) error {
		exports.Add(1)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, "build.sh"), []byte(gccBuild), 0o755)
	}
	cache := &memCache{}
	one := evaluation.Tree{Eval: ev, Cache: cache, TempDir: t.TempDir()}
	const tree = "1111111111111111111111111111111111111111"

	first, err := one.Score(ctx, tree, tree, paths, export, nil)
	if err != nil {
		t.Fatal(err)
	}
	if first.Cached || first.Kept == nil || exports.Load() != 1 {
		t.Fatalf("first score: cached %v, kept %v, exports %d", first.Cached, first.Kept != nil, exports.Load())
	}
	s := first.Result.Suites["basics/smoke"]
	if s.Total == 0 || s.Passed != s.Total {
		t.Fatalf("gcc as ./cc: %+v", s)
	}
	if k := first.Kept; k.Tree != tree || k.Artifact != "" || k.EnvVersion != ev.Version() || first.Key != evaluation.CacheKey(tree, ev.Version(), paths) {
		t.Errorf("kept %+v under %s", k, first.Key)
	}

	second, err := one.Score(ctx, tree, tree, paths, export, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !second.Cached || exports.Load() != 1 || second.Result.Suites["basics/smoke"].Passed != s.Passed {
		t.Errorf("second score: cached %v, exports %d", second.Cached, exports.Load())
	}

	// Another tree's entry under this tree's key: evaluated again and
	// overwritten, never served.
	const other = "2222222222222222222222222222222222222222"
	forged := cache.m[first.Key]
	forged.Tree = other
	forged.Result.Suites = map[string]evaluation.SuiteResult{"basics/smoke": {Passed: 999, Total: 999}}
	cache.m[first.Key] = forged
	third, err := one.Score(ctx, tree, tree, paths, export, nil)
	if err != nil {
		t.Fatal(err)
	}
	if third.Cached || exports.Load() != 2 || third.Result.Suites["basics/smoke"].Passed == 999 || cache.m[first.Key].Tree != tree {
		t.Errorf("foreign entry: cached %v, exports %d, result %+v", third.Cached, exports.Load(), third.Result.Suites)
	}

	// A cache that cannot be written: the result stands, nothing kept.
	broken := &memCache{putErr: errors.New("store unreachable")}
	r, err := evaluation.Tree{Eval: ev, Cache: broken, TempDir: t.TempDir()}.Score(ctx, tree, tree, paths, export, nil)
	if err != nil || r.Kept != nil || r.Result.Suites["basics/smoke"].Passed != s.Passed {
		t.Errorf("unwritable cache: err %v, kept %v, result %+v", err, r.Kept != nil, r.Result.Suites)
	}

	// A tree that cannot be exported is an error naming it and the
	// operation; the wait for a slot is taken before, and released.
	released := false
	_, err = one.Score(ctx, "c0ffee", other, paths, func(context.Context, string) error { return errors.New("no such tree") },
		func(context.Context) (func(), error) { return func() { released = true }, nil })
	if err == nil || !strings.HasPrefix(err.Error(), "export c0ffee: ") || !released {
		t.Errorf("failed export: %v (slot released %v)", err, released)
	}
}

// Keep is the one writer: a tree's entry keeps which key a result is kept
// under but not that this evaluation found it cached; an artifacts' entry
// has no tree and lives under the artifacts' key.
func TestKeep(t *testing.T) {
	ctx := context.Background()
	cache := &memCache{}
	res := evaluation.Result{Suites: map[string]evaluation.SuiteResult{"basics": {Passed: 1, Total: 2}},
		Key: &evaluation.KeyUse{Key: evaluation.KeyArtifact, Artifact: "ab", Cached: true}}
	e, err := evaluation.Keep(ctx, cache, evaluation.Inputs{Tree: "t1", EnvVersion: "v", TestPaths: []string{"basics"}}, res, 1500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := cache.m[evaluation.CacheKey("t1", "v", []string{"basics"})]; !ok || got.Result.Key.Cached || got.DurationMs != 1500 || e.Tree != "t1" {
		t.Errorf("tree entry %+v", got)
	}
	in := evaluation.Inputs{Tree: "t1", Artifact: "ab", EnvVersion: "v", TestPaths: []string{"basics"}}
	if _, err := evaluation.Keep(ctx, cache, in, evaluation.Result{}, 0); err != nil {
		t.Fatal(err)
	}
	got, ok := cache.m[evaluation.ArtifactCacheKey("ab", "v", []string{"basics"})]
	if !ok || got.Tree != "" || !got.MatchesArtifact("ab", "v", []string{"basics"}) {
		t.Errorf("artifact entry %+v (found %v)", got, ok)
	}
}
