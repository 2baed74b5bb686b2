package groundtruth

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/evalbox"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/gitstate"
)

// fakeEvaluator scores an exported tree from its files, without building
// anything: a case "<suite>/<name>" passes when the file pass/<name>
// exists. It counts evaluations and can hold them until released, to
// make the queue's order observable. A fake, for the queue's logic; the
// real evaluation sandbox is tested in replay/evalbox and end to end in
// the orchestrator.
type fakeEvaluator struct {
	cases []string
	gate  chan struct{} // nil: no holding

	mu    sync.Mutex
	order []string // the "mark" file of each tree evaluated, in order
	runs  []string // "mark path,path…" of each evaluation
}

func (f *fakeEvaluator) Version() string { return "fake-1" }

func (f *fakeEvaluator) Evaluate(ctx context.Context, dir string, paths []string) (replay.Result, error) {
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return replay.Result{}, ctx.Err()
		}
	}
	mark, _ := os.ReadFile(filepath.Join(dir, "mark"))
	f.mu.Lock()
	f.order = append(f.order, strings.TrimSpace(string(mark)))
	f.mu.Unlock()
	f.mu.Lock()
	f.runs = append(f.runs, strings.TrimSpace(string(mark))+" "+strings.Join(paths, ","))
	f.mu.Unlock()
	res := replay.Result{Suites: map[string]replay.SuiteResult{}}
	for _, p := range paths {
		s := replay.SuiteResult{}
		cases := f.cases
		if _, sel, ok := strings.Cut(p, "/sample_"); ok {
			// fakeSampler's path: the first <size> cases.
			size, _, _ := strings.Cut(sel, "_")
			n, _ := strconv.Atoi(size)
			cases = cases[:n]
		}
		for _, c := range cases {
			_, err := os.Stat(filepath.Join(dir, "pass", c))
			ok := err == nil
			s.Cases = append(s.Cases, replay.CaseResult{Name: p + "/" + c, Passed: ok})
			s.Total++
			if ok {
				s.Passed++
			} else {
				s.Failed++
			}
		}
		res.Suites[p] = s
	}
	return res, nil
}

func (f *fakeEvaluator) EvaluateDetailed(ctx context.Context, dir string, paths []string) (evalbox.Payload, error) {
	r, err := f.Evaluate(ctx, dir, paths)
	return evalbox.Payload{Result: r}, err
}

func (f *fakeEvaluator) evaluated() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.order)
}

// history makes a checkpoint history and returns a function that commits
// the workspace with mark and the passing cases given.
func history(t *testing.T) (*gitstate.Repo, func(mark string, pass ...string) string) {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	repo, err := gitstate.Init(context.Background(), filepath.Join(dir, "checkpoints.git"), ws, gitstate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	return repo, func(mark string, pass ...string) string {
		t.Helper()
		os.RemoveAll(filepath.Join(ws, "pass"))
		os.MkdirAll(filepath.Join(ws, "pass"), 0o755)
		for _, c := range pass {
			os.WriteFile(filepath.Join(ws, "pass", c), nil, 0o644)
		}
		if err := os.WriteFile(filepath.Join(ws, "mark"), []byte(mark), 0o644); err != nil {
			t.Fatal(err)
		}
		n++
		cp, err := repo.Checkpoint(context.Background(), n)
		if err != nil || !cp.Committed {
			t.Fatalf("checkpoint %s: %+v %v", mark, cp, err)
		}
		return cp.CommitAfter
	}
}

// TestBackground: newest first when it falls behind, each commit once, a
// full queue drops the oldest, results land in order with cache keys, and
// an identical tree comes from the cache.
func TestBackground(t *testing.T) {
	repo, commit := history(t)
	ev := &fakeEvaluator{cases: []string{"a", "b"}, gate: make(chan struct{})}
	cache := &replay.MemCache{}
	s := &Scorer{Trees: repo, Eval: ev, Cache: cache, Paths: []string{"basics"}}
	bg := Start(context.Background(), s, Options{Queue: 3})

	c1 := commit("one")
	bg.Submit(1, c1) // the worker takes it and waits at the gate
	waitFor(t, func() bool { bg.mu.Lock(); defer bg.mu.Unlock(); return len(bg.waiting) == 0 })
	c2, c3, c4 := commit("two", "a"), commit("three", "a", "b"), commit("four")
	c5 := commit("five", "a", "b")
	for i, c := range []string{c2, c3, c4, c5} {
		bg.Submit(i+2, c)
	}
	bg.Submit(5, c5) // twice: ignored
	if got := bg.Dropped(); got != 1 {
		t.Fatalf("dropped %d, want 1 (queue of 3, 4 waiting)", got)
	}
	for range 4 {
		ev.gate <- struct{}{}
	}
	var g trace.GroundTruth
	for _, c := range []string{c1, c3, c4, c5} {
		var err error
		if g, err = bg.Wait(context.Background(), 0, c); err != nil {
			t.Fatal(err)
		}
	}
	// one ran first; then newest first: five, four, three; two dropped.
	if got, want := ev.evaluated(), []string{"one", "five", "four", "three"}; !slices.Equal(got, want) {
		t.Errorf("evaluation order %v, want %v", got, want)
	}
	if !g.Solved || g.Passed != 2 || g.Total != 2 || g.CacheKey == "" || g.Tree == "" || len(g.Suites) != 1 {
		t.Errorf("ground truth of five: %+v", g)
	}
	if bg.SolvedAt() != 3 {
		t.Errorf("solved at %d, want 3 (three passes both cases)", bg.SolvedAt())
	}
	taken := bg.Take()
	if len(taken) != 4 || taken[0].Commit != c1 || len(bg.Take()) != 0 {
		t.Errorf("taken %d results (first %s), then more: want 4, one first, once", len(taken), taken[0].Commit)
	}
	if latest, _ := bg.Latest(); latest.Commit != c5 {
		t.Errorf("latest %+v, want five's", latest)
	}
	// A commit whose tree was evaluated comes from the cache.
	ev.gate = nil
	commit("six")
	c6 := commit("five", "a", "b") // the files of five again: its tree
	if c6 == c5 {
		t.Fatal("no new commit")
	}
	bg.Close(context.Background())
	if g, err := s.Score(context.Background(), 6, c6); err != nil || !g.Cached || !g.Solved {
		t.Errorf("same tree again: %+v %v, want from the cache", g, err)
	}
	if len(ev.evaluated()) != 4 {
		t.Errorf("evaluated %v: the cached tree ran again", ev.evaluated())
	}
}

// TestAtTurnEnd: the standing names the failing tests (capped), and what
// got fixed and regressed since the previous turn.
func TestAtTurnEnd(t *testing.T) {
	repo, commit := history(t)
	ev := &fakeEvaluator{cases: []string{"a", "b", "c", "d"}}
	s := &Scorer{Trees: repo, Eval: ev, Cache: &replay.MemCache{}, Paths: []string{"basics"}}
	bg := Start(context.Background(), s, Options{FailingTests: 1})
	defer bg.Close(context.Background())

	st, solved, err := bg.AtTurnEnd(context.Background(), 1, commit("t1", "a", "b"))
	if err != nil || solved {
		t.Fatalf("turn 1: solved %v, %v", solved, err)
	}
	if st.FailingCount != 2 || !slices.Equal(st.Failing, []string{"basics/c"}) || st.FixedCount != 0 || !st.GroundTruth || st.Part != 1 {
		t.Errorf("turn 1 standing %+v", st)
	}
	if len(st.Status) != 1 || st.Status[0].Passed != 2 || st.Status[0].Total != 4 {
		t.Errorf("turn 1 status %+v", st.Status)
	}
	st, _, err = bg.AtTurnEnd(context.Background(), 2, commit("t2", "b", "c", "d"))
	if err != nil {
		t.Fatal(err)
	}
	if st.FixedCount != 2 || st.RegressedCount != 1 || !slices.Equal(st.Regressed, []string{"basics/a"}) || len(st.Fixed) != 1 {
		t.Errorf("turn 2 standing %+v: want c, d fixed (one listed), a regressed", st)
	}
	_, solved, _ = bg.AtTurnEnd(context.Background(), 3, commit("t3", "a", "b", "c", "d"))
	if !solved {
		t.Error("all four pass: not solved")
	}
}

// TestScoreErrors: an unknown commit and a failing evaluation are results
// with Error set, never cached; a cancelled context is an error.
func TestScoreErrors(t *testing.T) {
	repo, commit := history(t)
	cache := &replay.MemCache{}
	s := &Scorer{Trees: repo, Eval: failingEvaluator{}, Cache: cache, Paths: []string{"basics"}}
	g, err := s.Score(context.Background(), 1, strings.Repeat("ab", 20))
	if err != nil || g.Error == "" || g.Solved {
		t.Errorf("unknown commit: %+v %v", g, err)
	}
	c := commit("x")
	g, err = s.Score(context.Background(), 1, c)
	if err != nil || !strings.Contains(g.Error, "no sandbox here") || g.Solved {
		t.Errorf("failing evaluation: %+v %v", g, err)
	}
	if _, ok, _ := cache.Get(context.Background(), g.CacheKey); ok {
		t.Error("a failed evaluation was cached")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Score(ctx, 1, c); err == nil {
		t.Error("cancelled: no error")
	}
}

type failingEvaluator struct{}

func (failingEvaluator) Version() string { return "fail" }
func (failingEvaluator) Evaluate(context.Context, string, []string) (replay.Result, error) {
	return replay.Result{}, fmt.Errorf("evaluation sandbox: no sandbox here")
}
func (failingEvaluator) EvaluateDetailed(context.Context, string, []string) (evalbox.Payload, error) {
	return evalbox.Payload{}, fmt.Errorf("evaluation sandbox: no sandbox here")
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
