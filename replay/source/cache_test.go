package source_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/githistory"
	"github.com/trajlab/traj/replay/replaytest"
	"github.com/trajlab/traj/replay/source"
	"github.com/trajlab/traj/trace/store/local"
)

// countingEnv counts evaluations.
type countingEnv struct {
	replay.Evaluator
	calls atomic.Int64
}

func (c *countingEnv) Evaluate(ctx context.Context, dir string, paths []string) (replay.Result, error) {
	c.calls.Add(1)
	return c.Evaluator.Evaluate(ctx, dir, paths)
}

// Entries edited by hand in the store's evaluation cache (a faked result,
// one copied under another key, one without its digest, garbage) are
// ignored with a warning and evaluated again; the others still hit, and
// the results are the true ones.
func TestEvaluateIgnoresTamperedCacheEntries(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := local.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	cache := source.Cache(st)
	tj := replaytest.Build(t, "traj-tamper", replaytest.AttributionScript(), 4, true)
	h, err := githistory.Open(ctx, tj.BundlePath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	var logs bytes.Buffer
	opts := replay.EvaluateOptions{TestPaths: []string{"basics", "extra"}, Workers: 2, Cache: cache,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	want, err := replay.Evaluate(ctx, tj.Trace, h, replaytest.TinyEnv{}, opts)
	if err != nil {
		t.Fatal(err)
	}

	files, err := filepath.Glob(filepath.Join(dir, "evalcache", "*.json"))
	if err != nil || len(files) != 6 {
		t.Fatalf("%d cache files (%v), want 6", len(files), err)
	}
	slices.Sort(files)
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A faked score: every "passed":false made true, digest left alone.
	// The entry with a failing case goes first.
	fi := slices.IndexFunc(files, func(p string) bool { return strings.Contains(read(p), `"passed":false`) })
	if fi < 0 {
		t.Fatal("no entry has a failing case to fake")
	}
	files[0], files[fi] = files[fi], files[0]
	write(files[0], strings.ReplaceAll(read(files[0]), `"passed":false`, `"passed":true`))
	// A foreign entry: another key's valid entry copied here.
	write(files[1], read(files[5]))
	// No digest: what an older traj, or a hand, wrote.
	noDigest := read(files[2])
	i := strings.Index(noDigest, `,"digest":`)
	write(files[2], noDigest[:i]+"}")
	// Garbage.
	write(files[3], "{not json")

	// The trajectory's set holds its own copy of the entries: the
	// tampered files are not read, the scores are the true ones.
	viaSet := &countingEnv{Evaluator: replaytest.TinyEnv{}}
	got, err := replay.Evaluate(ctx, tj.Trace, h, viaSet, opts)
	if err != nil {
		t.Fatal(err)
	}
	if n := viaSet.calls.Load(); n != 0 || got.Stats.CacheHits != 6 || !reflect.DeepEqual(got.PartEvaluations, want.PartEvaluations) {
		t.Fatalf("with the set: %d evaluations, %d cache hits, same results %v", n, got.Stats.CacheHits, reflect.DeepEqual(got.PartEvaluations, want.PartEvaluations))
	}
	// Without it, every tree's entry is read and checked.
	if err := os.RemoveAll(filepath.Join(dir, "evalcache", "sets")); err != nil {
		t.Fatal(err)
	}
	logs.Reset()
	ev := &countingEnv{Evaluator: replaytest.TinyEnv{}}
	got, err = replay.Evaluate(ctx, tj.Trace, h, ev, opts)
	if err != nil {
		t.Fatal(err)
	}
	if n := ev.calls.Load(); n != 4 || got.Stats.CacheHits != 2 {
		t.Fatalf("%d evaluations, %d cache hits; want the 4 tampered trees evaluated again and 2 hits", n, got.Stats.CacheHits)
	}
	for _, why := range []string{"does not match its digest", "foreign", "has no digest", "does not parse"} {
		if !strings.Contains(logs.String(), why) {
			t.Fatalf("no warning saying %q in:\n%s", why, logs.String())
		}
	}
	if !reflect.DeepEqual(got.PartEvaluations, want.PartEvaluations) {
		t.Fatal("results after tampering differ from the true ones")
	}
	// The bad entries were overwritten: a third evaluate is all hits.
	ev3 := &countingEnv{Evaluator: replaytest.TinyEnv{}}
	if out, err := replay.Evaluate(ctx, tj.Trace, h, ev3, opts); err != nil || ev3.calls.Load() != 0 || out.Stats.CacheHits != 6 {
		t.Fatalf("third evaluate: %d evaluations, err %v", ev3.calls.Load(), err)
	}
}
