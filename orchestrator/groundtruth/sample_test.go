package groundtruth

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/trajlab/traj/environment/evaluation"
	"github.com/trajlab/traj/orchestrator/task"
	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/trace"
)

// fakeSampler names "<path>/sample_<size>_<seed>" for every path; with
// fakeEvaluator it runs the first size cases. The real sample is
// environment/ccompiler's (tested there and end to end in the
// orchestrator).
type fakeSampler struct{}

func (fakeSampler) SamplePath(path string, size int, seed int64) (string, bool) {
	return path + "/sample_" + strconv.Itoa(size) + "_" + strconv.FormatInt(seed, 10), true
}

func (f *fakeEvaluator) ran() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.runs)
}

// TestSampledBackground: every checkpoint runs the sample; the full paths
// run for a new best, a sample that passes completely and every k-th
// checkpoint; only a full result is solved, and each result says what
// it ran.
func TestSampledBackground(t *testing.T) {
	repo, commit := history(t)
	ev := &fakeEvaluator{cases: []string{"a", "b", "c", "d"}}
	cache := &replay.MemCache{}
	s := &Scorer{Trees: repo, Eval: ev, Cache: cache, Paths: []string{"basics"},
		Sample: &Sample{Env: fakeSampler{}, Size: 2, Seed: 7}}
	bg := Start(context.Background(), s, Options{FullEvery: 5})
	ctx := context.Background()

	sampled := func(part int, c string) trace.GroundTruth {
		t.Helper()
		g, err := bg.Wait(ctx, part, c)
		if err != nil {
			t.Fatal(err)
		}
		if !g.Sampled || g.SampleSeed != 7 || g.Solved || g.Total != 2 || g.Suites[0].SampleSize != 2 || g.Suites[0].Path != "basics" {
			t.Fatalf("part %d: sampled result %+v", part, g)
		}
		return g
	}
	hasFull := func(c string) bool { bg.mu.Lock(); defer bg.mu.Unlock(); return bg.known[jobKey{c, true}] }
	full := func(part int, c string) trace.GroundTruth {
		t.Helper()
		if !hasFull(c) {
			t.Fatalf("part %d: no full evaluation queued", part)
		}
		g, err := bg.WaitFull(ctx, part, c)
		if err != nil {
			t.Fatal(err)
		}
		if g.Sampled || g.Total != 4 || g.Suites[0].SampleSize != 0 {
			t.Fatalf("part %d: full result %+v", part, g)
		}
		return g
	}

	c1 := commit("t1", "a") // sample 1/2: the first best
	sampled(1, c1)
	full(1, c1)
	c2 := commit("t2", "a", "c") // sample 1/2: no better
	sampled(2, c2)
	if hasFull(c2) {
		t.Error("part 2: evaluated in full though its sample is no better")
	}
	c3 := commit("t3", "a", "b") // sample 2/2, full 2/4: the attack's shape
	if g := sampled(3, c3); g.Passed != 2 {
		t.Fatalf("part 3 sample passed %d", g.Passed)
	}
	if g := full(3, c3); g.Solved || g.Passed != 2 {
		t.Errorf("part 3: full %+v; a sample passing completely must not solve", g)
	}
	if bg.SolvedAt() != 0 {
		t.Errorf("solved at %d after a sampled 100 %%", bg.SolvedAt())
	}
	c4 := commit("t4", "a", "b", "c", "d")
	sampled(4, c4)
	if g := full(4, c4); !g.Solved {
		t.Errorf("part 4: %+v, want solved", g)
	}
	c5, c6 := commit("t5", "a"), commit("t6", "a", "c")
	bg.Submit(5, c5)
	full(5, c5) // the 5th checkpoint: FullEvery 5 (newest first: before its sample)
	sampled(6, c6)
	if hasFull(c6) {
		t.Error("part 6 evaluated in full: not a best, not a 5th checkpoint")
	}
	bg.Close(ctx)
	if bg.SolvedAt() != 4 {
		t.Errorf("solved at %d, want 4", bg.SolvedAt())
	}
	runs := ev.ran()
	want := []string{"t1 basics/sample_2_7", "t1 basics", "t2 basics/sample_2_7", "t3 basics/sample_2_7", "t3 basics",
		"t4 basics/sample_2_7", "t4 basics", "t5 basics", "t5 basics/sample_2_7", "t6 basics/sample_2_7"}
	if !slices.Equal(runs, want) {
		t.Errorf("evaluations\n%v\nwant\n%v", runs, want)
	}
	// Full results are cached under the key replay evaluate uses.
	tree, _ := repo.CommitTree(c3)
	if e, ok, _ := cache.Get(ctx, evaluation.CacheKey(tree, ev.Version(), []string{"basics"})); !ok || e.Result.Suites["basics"].Total != 4 {
		t.Errorf("full result of part 3 not under the full key: %+v %v", e, ok)
	}
	taken := bg.Take()
	nSampled := 0
	for _, g := range taken {
		if g.Sampled {
			nSampled++
		}
	}
	if len(taken) != 10 || nSampled != 6 {
		t.Errorf("%d results taken, %d sampled; want 10, 6", len(taken), nSampled)
	}
}

// TestAtTurnEndWaitsForFullWhenTheSamplePasses: a turn end whose sample
// passes completely waits for the full result, which decides.
func TestAtTurnEndWaitsForFullWhenTheSamplePasses(t *testing.T) {
	repo, commit := history(t)
	ev := &fakeEvaluator{cases: []string{"a", "b", "c"}}
	s := &Scorer{Trees: repo, Eval: ev, Cache: &replay.MemCache{}, Paths: []string{"basics"},
		Sample: &Sample{Env: fakeSampler{}, Size: 1, Seed: 1}}
	bg := Start(context.Background(), s, Options{})
	defer bg.Close(context.Background())
	st, solved, err := bg.AtTurnEnd(context.Background(), 1, commit("t1", "a"))
	if err != nil || solved || st.Sampled || st.Status[0].Total != 3 || st.Status[0].Sample != 0 {
		t.Errorf("sample passes, full does not: %+v solved=%v %v", st, solved, err)
	}
	st, solved, err = bg.AtTurnEnd(context.Background(), 2, commit("t2", "b"))
	if err != nil || solved || !st.Sampled || st.Status[0].Sample != 1 || st.Status[0].Passed != 0 {
		t.Errorf("sample fails: %+v solved=%v %v", st, solved, err)
	}
	prompt, err := (&task.Task{Name: "x"}).Continuation(2, st)
	if err != nil || !strings.Contains(prompt, "fixed sample") {
		t.Errorf("prompt does not say the result is of a sample:\n%s", prompt)
	}
	_, solved, _ = bg.AtTurnEnd(context.Background(), 3, commit("t3", "a", "b", "c"))
	if !solved {
		t.Error("all pass in full: not solved")
	}
}

// TestAtTurnEndWithoutWaiting: with NoWait a turn end never waits for
// the workspace's evaluation. The evaluation is held by a gate (failure
// injection) and AtTurnEnd is called with a cancelled context, which a
// waiting turn end could only answer with an error: it answers with the
// latest result landed, whose part the prompt names.
func TestAtTurnEndWithoutWaiting(t *testing.T) {
	repo, commit := history(t)
	ev := &fakeEvaluator{cases: []string{"a", "b"}, gate: make(chan struct{})}
	s := &Scorer{Trees: repo, Eval: ev, Cache: &replay.MemCache{}, Paths: []string{"basics"}}
	bg := Start(context.Background(), s, Options{NoWait: true})
	defer func() { close(ev.gate); bg.Close(context.Background()) }()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tk := &task.Task{Name: "x"}

	c1 := commit("t1", "a")
	st, solved, err := bg.AtTurnEnd(cancelled, 1, c1)
	if err != nil || solved || !st.Pending || len(st.Status) != 1 {
		t.Fatalf("turn 1 with nothing landed: %+v %v %v", st, solved, err)
	}
	prompt, _ := tk.Continuation(2, st)
	if !strings.Contains(prompt, "has not landed yet") {
		t.Errorf("turn 1 prompt:\n%s", prompt)
	}
	ev.gate <- struct{}{} // part 1's evaluation may finish
	waitFor(t, func() bool { _, ok := bg.Latest(); return ok })

	c2 := commit("t2", "a", "b") // held at the gate
	st, solved, err = bg.AtTurnEnd(cancelled, 5, c2)
	if err != nil || solved || st.Pending || st.Part != 1 || st.Now != 5 || st.Status[0].Passed != 1 {
		t.Fatalf("turn 2 with part 1 landed and part 5 held: %+v %v %v", st, solved, err)
	}
	prompt, _ = tk.Continuation(3, st)
	if !strings.Contains(prompt, "at part 1, the latest that landed; your workspace is now at part 5") {
		t.Errorf("turn 2 prompt does not name the older part:\n%s", prompt)
	}
	ev.gate <- struct{}{}
	waitFor(t, func() bool { return bg.SolvedAt() == 5 })
	if _, solved, _ := bg.AtTurnEnd(cancelled, 6, c2); !solved {
		t.Error("solved result landed: the turn end does not say solved")
	}
}

// TestResumedBackgroundCarriesOn: a resumed run's background takes the
// trace's results in: the k-th checkpoint and the best sample are counted
// across the resume, and a commit already evaluated is not evaluated
// again.
func TestResumedBackgroundCarriesOn(t *testing.T) {
	repo, commit := history(t)
	ev := &fakeEvaluator{cases: []string{"a", "b", "c", "d"}}
	s := &Scorer{Trees: repo, Eval: ev, Cache: &replay.MemCache{}, Paths: []string{"basics"},
		Sample: &Sample{Env: fakeSampler{}, Size: 2, Seed: 7}}
	// Four checkpoints recorded before the resume, the best sample 1 of 2
	// (the first also run in full), and one whose evaluation failed.
	prior := []trace.GroundTruth{
		{Part: 1, Commit: "p1", Sampled: true, Passed: 1, Total: 2},
		{Part: 1, Commit: "p1", Passed: 1, Total: 4},
		{Part: 2, Commit: "p2", Sampled: true, Passed: 0, Total: 2},
		{Part: 3, Commit: "p3", Sampled: true, Passed: 1, Total: 2},
		{Part: 4, Commit: "p4", Sampled: true, Passed: 1, Total: 2},
		{Part: 4, Commit: "p5", Sampled: true, Error: "sandbox killed"},
	}
	bg := Start(context.Background(), s, Options{FullEvery: 5, Prior: prior})
	ctx := context.Background()
	hasFull := func(c string) bool { bg.mu.Lock(); defer bg.mu.Unlock(); return bg.known[jobKey{c, true}] }

	c5 := commit("t5", "c") // sample 0 of 2, the 5th checkpoint: in full all the same
	if _, err := bg.Wait(ctx, 5, c5); err != nil {
		t.Fatal(err)
	}
	if !hasFull(c5) {
		t.Error("the 5th checkpoint, the first after the resume, was not evaluated in full")
	}
	c6 := commit("t6", "a") // sample 1 of 2: no better than before the resume
	if _, err := bg.Wait(ctx, 6, c6); err != nil {
		t.Fatal(err)
	}
	if hasFull(c6) {
		t.Error("a sample no better than the best before the resume was evaluated in full")
	}
	// A commit recorded before is answered from the trace's result.
	if g, err := bg.Wait(ctx, 7, "p3"); err != nil || g.Part != 3 || g.Passed != 1 {
		t.Errorf("recorded commit p3: %+v, %v", g, err)
	}
	if _, err := bg.WaitFull(ctx, 7, "p1"); err != nil {
		t.Fatal(err)
	}
	bg.Close(ctx)
	want := []string{"t5 basics", "t5 basics/sample_2_7", "t6 basics/sample_2_7"}
	if runs := ev.ran(); !slices.Equal(runs, want) {
		t.Errorf("evaluations after the resume\n%v\nwant\n%v", runs, want)
	}
	for _, g := range bg.Take() {
		if g.Commit != c5 && g.Commit != c6 {
			t.Errorf("a result of the earlier recording was handed to the trace again: %+v", g)
		}
	}
}
