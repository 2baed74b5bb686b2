package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/githistory"
	"github.com/trajlab/traj/replay/replaytest"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/tracetest"
)

// countingEvaluator counts evaluations and the trees they ran on.
type countingEvaluator struct {
	replay.Evaluator
	calls atomic.Int64
	mu    sync.Mutex
	dirs  []string
}

func (c *countingEvaluator) Evaluate(ctx context.Context, dir string, paths []string) (replay.Result, error) {
	c.calls.Add(1)
	c.mu.Lock()
	c.dirs = append(c.dirs, dir)
	c.mu.Unlock()
	return c.Evaluator.Evaluate(ctx, dir, paths)
}

func openHistory(t *testing.T, tj *replaytest.Trajectory) *githistory.History {
	t.Helper()
	h, err := openHistoryTB(t, tj)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func openHistoryTB(tb testing.TB, tj *replaytest.Trajectory) (*githistory.History, error) {
	tb.Helper()
	h, err := githistory.Open(context.Background(), tj.BundlePath)
	if err == nil {
		tb.Cleanup(func() { h.Close() })
	}
	return h, err
}

func TestCheckoutPartMatchesCommitTree(t *testing.T) {
	ctx := context.Background()
	tj := replaytest.Build(t, "traj-checkout", replaytest.AttributionScript(), 3, true)
	h := openHistory(t, tj)
	for _, part := range []int{1, 2, 5, 8, 10} {
		dest := filepath.Join(t.TempDir(), "repo")
		sum, err := replay.CheckoutPart(ctx, tj.Trace, h, replay.CheckoutRequest{Part: part, Dest: dest})
		if err != nil {
			t.Fatalf("part %d: %v", part, err)
		}
		want := tj.Commits[part-1]
		if sum.Commit != want || sum.Part != part || sum.TrajectoryID != tj.ID {
			t.Fatalf("part %d: summary %+v, want commit %s", part, sum, want)
		}
		if head := replaytest.Git(t, dest, "rev-parse", "HEAD"); head != want {
			t.Fatalf("part %d: HEAD %s, want %s", part, head, want)
		}
		if st := replaytest.Git(t, dest, "status", "--porcelain"); st != "" {
			t.Fatalf("part %d: status not clean:\n%s", part, st)
		}
		got := replaytest.Git(t, dest, "ls-tree", "-r", "HEAD")
		if exp := replaytest.Git(t, tj.Work, "ls-tree", "-r", want); got != exp {
			t.Fatalf("part %d: tree differs:\n%s\nwant\n%s", part, got, exp)
		}
		// The files on disk are the commit's files.
		for _, line := range strings.Split(got, "\n") {
			if line == "" {
				continue
			}
			fields := strings.Fields(line)
			name := fields[len(fields)-1]
			blob := replaytest.Git(t, tj.Work, "cat-file", "-p", fields[2])
			disk, err := os.ReadFile(filepath.Join(dest, name))
			if err != nil || strings.TrimSpace(string(disk)) != blob {
				t.Fatalf("part %d: %s on disk differs from blob", part, name)
			}
		}
	}
}

func TestCheckoutPartErrors(t *testing.T) {
	ctx := context.Background()
	tj := replaytest.Build(t, "traj-errors", replaytest.AttributionScript()[:4], 2, false)
	h := openHistory(t, tj)
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "keep.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		req  replay.CheckoutRequest
		want string
	}{
		{"part too high", replay.CheckoutRequest{Part: 9, Dest: t.TempDir()}, "parts 1..4"},
		{"part zero", replay.CheckoutRequest{Part: 0, Dest: t.TempDir()}, "parts 1..4"},
		{"dest not empty", replay.CheckoutRequest{Part: 1, Dest: full}, "--force"},
		{"dest inside source", replay.CheckoutRequest{Part: 1, Dest: filepath.Join(tj.Dir, "out"), Protected: []string{tj.Dir}}, "inside the trajectory's source folder"},
		{"dest holds source", replay.CheckoutRequest{Part: 1, Dest: filepath.Dir(tj.Dir), Force: true, Protected: []string{tj.Dir}}, "holds the trajectory's source folder"},
		{"force on root", replay.CheckoutRequest{Part: 1, Dest: "/", Force: true}, "filesystem root"},
		{"force on current folder", replay.CheckoutRequest{Part: 1, Dest: ".", Force: true}, "holds the current folder"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := replay.CheckoutPart(ctx, tj.Trace, h, tt.req)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, replay.ErrUsage) {
				t.Fatalf("err = %v, want usage error mentioning %q", err, tt.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(full, "keep.txt")); err != nil {
		t.Fatal("a refused checkout touched the destination")
	}
	// --force replaces the contents.
	if _, err := replay.CheckoutPart(ctx, tj.Trace, h, replay.CheckoutRequest{Part: 3, Dest: full, Force: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(full, "keep.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("--force kept the old contents")
	}
	// A commit missing from the bundle is named.
	bad := *tj.Trace
	bad.Turns = slices.Clone(tj.Trace.Turns)
	bad.Turns[0].Parts = slices.Clone(bad.Turns[0].Parts)
	bad.Turns[0].Parts[0].GitCommit = strings.Repeat("ab", 20)
	_, err := replay.CheckoutPart(ctx, &bad, h, replay.CheckoutRequest{Part: 1, Dest: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), strings.Repeat("ab", 20)) {
		t.Fatalf("err = %v, want the missing commit named", err)
	}
}

func TestEvaluateAttributionAndCache(t *testing.T) {
	ctx := context.Background()
	tj := replaytest.Build(t, "traj-attr", replaytest.AttributionScript(), 4, true)
	h := openHistory(t, tj)
	ev := &countingEvaluator{Evaluator: replaytest.TinyEnv{}}
	cache := &replay.MemCache{}
	opts := replay.EvaluateOptions{TestPaths: []string{"basics", "extra"}, Workers: 2, Cache: cache}

	out, err := replay.Evaluate(ctx, tj.Trace, h, ev, opts)
	if err != nil {
		t.Fatal(err)
	}
	// Parts 1..10 all mapped; 7 distinct commits, 6 distinct trees.
	if len(out.PartToCommit) != 10 {
		t.Fatalf("part_to_commit has %d parts, want 10", len(out.PartToCommit))
	}
	for part := 1; part <= 10; part++ {
		if out.PartToCommit[part] != tj.Commits[part-1] {
			t.Fatalf("part %d → %s, want %s", part, out.PartToCommit[part], tj.Commits[part-1])
		}
		if out.PartEvaluations[part] == nil {
			t.Fatalf("part %d has no evaluation", part)
		}
	}
	if out.CommitsEvaluated != 7 || out.Stats.UniqueTrees != 6 {
		t.Fatalf("commits %d trees %d, want 7 and 6", out.CommitsEvaluated, out.Stats.UniqueTrees)
	}
	if n := ev.calls.Load(); n != 6 {
		t.Fatalf("evaluator ran %d times, want once per distinct tree (6)", n)
	}
	if ce := out.CommitEvaluations[tj.Commits[7]]; ce.SameTreeAs != tj.Commits[3] || ce.Source != replay.SourceSameTree {
		t.Fatalf("part 8's commit: %+v, want same tree as part 4's", ce)
	}
	// Worktrees are gone afterwards.
	for _, d := range ev.dirs {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("worktree %s left behind", d)
		}
	}

	add := out.TestAttribution["basics/add"]
	if add == nil || add.FirstPassPart == nil || *add.FirstPassPart != 3 ||
		!slices.Equal(add.BrokenAt, []int{5}) || !slices.Equal(add.FixedAt, []int{8}) || !add.PassingAtEnd {
		t.Fatalf("basics/add attribution = %+v", add)
	}
	ret := out.TestAttribution["basics/ret42"]
	if ret == nil || *ret.FirstPassPart != 3 || len(ret.BrokenAt) != 0 || len(ret.FixedAt) != 0 {
		t.Fatalf("basics/ret42 attribution = %+v", ret)
	}
	if pe := out.PartEvaluations[5]; pe.Passed != 2 || pe.Total != 3 || pe.Suites["basics"].Passed != 1 {
		t.Fatalf("part 5 = %+v", pe)
	}
	if pe := out.PartEvaluations[1]; pe.Passed != 0 || pe.Suites["basics"].Error == "" {
		t.Fatalf("part 1 = %+v, want a build error", pe)
	}
	regs := replay.Regressions(out.TestAttribution)
	if len(regs) != 1 || regs[0] != (replay.Regression{Test: "basics/add", BrokenAt: 5, FixedAt: 8}) {
		t.Fatalf("regressions = %+v", regs)
	}

	// Second evaluate: everything from the cache, nothing run.
	ev2 := &countingEvaluator{Evaluator: replaytest.TinyEnv{}}
	out2, err := replay.Evaluate(ctx, tj.Trace, h, ev2, opts)
	if err != nil {
		t.Fatal(err)
	}
	if n := ev2.calls.Load(); n != 0 || out2.Stats.CacheHits != 6 {
		t.Fatalf("second evaluate ran %d evaluations, %d cache hits; want 0 and 6", n, out2.Stats.CacheHits)
	}
	if !slices.Equal(out2.TestAttribution["basics/add"].BrokenAt, []int{5}) {
		t.Fatal("cached results changed the attribution")
	}
	// A different environment version misses.
	ev3 := &countingEvaluator{Evaluator: replaytest.TinyEnv{V: "tiny-2"}}
	if _, err := replay.Evaluate(ctx, tj.Trace, h, ev3, opts); err != nil {
		t.Fatal(err)
	}
	if n := ev3.calls.Load(); n != 6 {
		t.Fatalf("new environment version ran %d evaluations, want 6", n)
	}
}

// Another trajectory reaching the same trees through different commits is
// served from the first one's cache entries.
func TestEvaluateCacheAcrossTrajectories(t *testing.T) {
	ctx := context.Background()
	cache := &replay.MemCache{}
	opts := replay.EvaluateOptions{TestPaths: []string{"basics"}, Workers: 2, Cache: cache}
	a := replaytest.BuildSpec(t, replaytest.Spec{ID: "traj-a", Changes: replaytest.AttributionScript(), TurnSize: 5})
	b := replaytest.BuildSpec(t, replaytest.Spec{ID: "traj-b", Changes: replaytest.AttributionScript(), TurnSize: 2, MessagePrefix: "other agent: "})
	if a.Commits[9] == b.Commits[9] {
		t.Fatal("the two trajectories share commits; the test needs different commits with the same trees")
	}
	if _, err := replay.Evaluate(ctx, a.Trace, openHistory(t, a), replaytest.TinyEnv{}, opts); err != nil {
		t.Fatal(err)
	}
	ev := &countingEvaluator{Evaluator: replaytest.TinyEnv{}}
	out, err := replay.Evaluate(ctx, b.Trace, openHistory(t, b), ev, opts)
	if err != nil {
		t.Fatal(err)
	}
	if ev.calls.Load() != 0 || out.Stats.CacheHits != 6 || out.CommitEvaluations[b.Commits[4]].Source != replay.SourceCache {
		t.Fatalf("second trajectory: %d evaluations, stats %+v", ev.calls.Load(), out.Stats)
	}
}

func TestEvaluateOriginalShapeTrace(t *testing.T) {
	ctx := context.Background()
	tj := replaytest.Build(t, "traj-original", replaytest.AttributionScript()[:5], 5, false)
	// Reload the trace from its JSON: no traj fields at all.
	data, err := os.ReadFile(tj.TracePath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "schema_version") || strings.Contains(string(data), "part_type") {
		t.Fatal("the original-shape trace carries traj fields")
	}
	tr, err := replay.ReadTraceFile(tj.TracePath)
	if err != nil {
		t.Fatal(err)
	}
	h := openHistory(t, tj)
	out, err := replay.Evaluate(ctx, tr, h, replaytest.TinyEnv{}, replay.EvaluateOptions{TestPaths: []string{"basics"}, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.PartToCommit) != 5 || *out.TestAttribution["basics/add"].FirstPassPart != 3 {
		t.Fatalf("original trace: %+v", out.TestAttribution["basics/add"])
	}
	if probs, err := replay.Verify(ctx, tr, h); err != nil || len(probs) != 0 {
		t.Fatalf("verify original trace: %v %v", probs, err)
	}
}

func TestVerify(t *testing.T) {
	ctx := context.Background()
	tj := replaytest.Build(t, "traj-verify", replaytest.AttributionScript(), 3, true)
	h := openHistory(t, tj)
	if probs, err := replay.Verify(ctx, tj.Trace, h); err != nil || len(probs) != 0 {
		t.Fatalf("clean trajectory: %v %v", probs, err)
	}
	missing := strings.Repeat("cd", 20)
	tests := []struct {
		name   string
		break_ func(tr *trace.Trace)
		want   []string
	}{
		{"commit not in bundle", func(tr *trace.Trace) {
			p := &tr.Turns[1].Parts[0] // part 4
			p.GitCommit, p.RepoCheckpoint.CommitAfter = missing, missing
		}, []string{"part 4: git_commit " + missing + " is not in the bundle", "part 5: commit_before"}},
		{"gap in parts", func(tr *trace.Trace) {
			tr.Turns[1].Parts[1].Part = 7
		}, []string{"part 7: expected part 5"}},
		{"git_commit differs from commit_after", func(tr *trace.Trace) {
			tr.Turns[0].Parts[2].RepoCheckpoint.CommitAfter = tj.Initial
		}, []string{"part 3: git_commit", "differs from repo_checkpoint.commit_after"}},
		{"commit_before not previous", func(tr *trace.Trace) {
			tr.Turns[2].Parts[1].RepoCheckpoint.CommitBefore = tj.Initial
		}, []string{"part 8: commit_before " + tj.Initial + " is not the previous part's effective commit"}},
		{"null checkpoint but a new commit", func(tr *trace.Trace) {
			p := &tr.Turns[0].Parts[2] // part 3
			p.RepoCheckpoint, p.GitCommit = nil, tj.Initial
		}, []string{"part 3: repo_checkpoint is null (nothing changed) but git_commit " + tj.Initial + " is not the previous part's effective commit"}},
		{"total_parts", func(tr *trace.Trace) { tr.SessionEnd.TotalParts = 11 }, []string{"session_end.total_parts is 11"}},
		{"commit_after not a child of commit_before", func(tr *trace.Trace) {
			// Part 4 claims to have started from the initial commit, and
			// part 3 to have ended there.
			tr.Turns[0].Parts[2].GitCommit = tj.Initial
			tr.Turns[0].Parts[2].RepoCheckpoint.CommitAfter = tj.Initial
			tr.Turns[1].Parts[0].RepoCheckpoint.CommitBefore = tj.Initial
		}, []string{"part 4: commit_after " + tj.Commits[3] + " is not a child of commit_before " + tj.Initial}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := cloneTrace(t, tj.Trace)
			tt.break_(tr)
			probs, err := replay.Verify(ctx, tr, h)
			if err != nil {
				t.Fatal(err)
			}
			var all []string
			for _, p := range probs {
				all = append(all, p.String())
			}
			joined := strings.Join(all, "\n")
			for _, w := range tt.want {
				if !strings.Contains(joined, w) {
					t.Fatalf("problems:\n%s\nwant one containing %q", joined, w)
				}
			}
			// The streaming verify (what `traj replay verify` runs) finds
			// the same problems in the same trace read from its JSON.
			doc, err := json.Marshal(tr)
			if err != nil {
				t.Fatal(err)
			}
			streamed, parts, err := replay.VerifyTrace(ctx, bytes.NewReader(doc), h)
			if err != nil {
				t.Fatal(err)
			}
			if parts != 10 {
				t.Errorf("VerifyTrace counted %d parts, want 10", parts)
			}
			var got []string
			for _, p := range streamed {
				got = append(got, p.String())
			}
			slices.Sort(all)
			slices.Sort(got)
			if !slices.Equal(all, got) {
				t.Fatalf("VerifyTrace:\n%s\nVerify:\n%s", strings.Join(got, "\n"), joined)
			}
		})
	}
	if _, _, err := replay.VerifyTrace(ctx, strings.NewReader(`{"turns": [{"parts": [`), h); err == nil {
		t.Error("VerifyTrace accepted a cut-off trace")
	}
}

// TestCommitForPartIn: the streaming lookup checkout-part runs agrees
// with CommitForPart on every part and on the errors (out of range, a
// duplicated part), and the header read keeps the top-level fields only.
func TestCommitForPartIn(t *testing.T) {
	path := tracetest.WriteDir(t, t.TempDir(), tracetest.Spec{TrajectoryID: "traj-stream", Turns: []int{3, 4}, PartSize: 2000, End: "part_limit"})
	tr, err := replay.ReadTraceFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for part := 0; part <= 8; part++ {
		want, wantErr := replay.CommitForPart(tr, part)
		got, err := replay.CommitForPartIn(bytes.NewReader(data), part)
		if got != want || (err == nil) != (wantErr == nil) || errors.Is(err, replay.ErrUsage) != errors.Is(wantErr, replay.ErrUsage) {
			t.Fatalf("part %d: %q, %v; CommitForPart: %q, %v", part, got, err, want, wantErr)
		}
		if err != nil && err.Error() != wantErr.Error() {
			t.Fatalf("part %d: error %q, CommitForPart's %q", part, err, wantErr)
		}
	}
	dup := cloneTrace(t, tr)
	dup.Turns[1].Parts[0].Part = 2
	doc, err := json.Marshal(dup)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replay.CommitForPartIn(bytes.NewReader(doc), 5); err == nil || !strings.Contains(err.Error(), "part 2 appears twice") {
		t.Fatalf("duplicated part: %v", err)
	}
	head, err := replay.ReadTraceHeader(path)
	if err != nil {
		t.Fatal(err)
	}
	if head.TrajectoryID != "traj-stream" || head.Agent != tr.Agent || len(head.Turns) != 0 || head.SessionEnd != nil {
		t.Fatalf("header read: %+v", head)
	}
}

func cloneTrace(t *testing.T, tr *trace.Trace) *trace.Trace {
	t.Helper()
	c := *tr
	c.Turns = slices.Clone(tr.Turns)
	for i := range c.Turns {
		c.Turns[i].Parts = slices.Clone(c.Turns[i].Parts)
		for j := range c.Turns[i].Parts {
			if c.Turns[i].Parts[j].RepoCheckpoint != nil {
				cp := *c.Turns[i].Parts[j].RepoCheckpoint
				c.Turns[i].Parts[j].RepoCheckpoint = &cp
			}
		}
	}
	se := *tr.SessionEnd
	c.SessionEnd = &se
	return &c
}

// failingCheckout writes part of the repository, then fails: fault
// injection for a checkout that dies half-way (a full disk).
type failingCheckout struct{ replay.History }

func (f failingCheckout) Checkout(ctx context.Context, commit, dir string) error {
	if err := f.History.Checkout(ctx, commit, dir); err != nil {
		return err
	}
	return errors.New("no space left on device (injected)")
}

// TestCheckoutPartFailureLeavesNothing: a checkout that fails removes the
// folders it made, and empties a destination that existed empty.
func TestCheckoutPartFailureLeavesNothing(t *testing.T) {
	ctx := context.Background()
	tj := replaytest.Build(t, "traj-failed-checkout", replaytest.AttributionScript()[:4], 2, true)
	h := failingCheckout{openHistory(t, tj)}
	root := t.TempDir()
	dest := filepath.Join(root, "a", "b", "repo")
	if _, err := replay.CheckoutPart(ctx, tj.Trace, h, replay.CheckoutRequest{Part: 3, Dest: dest}); err == nil || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("err = %v, want the injected failure", err)
	}
	if _, err := os.Stat(filepath.Join(root, "a")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a failed checkout left %s behind (%v)", filepath.Join(root, "a"), err)
	}
	empty := filepath.Join(root, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := replay.CheckoutPart(ctx, tj.Trace, h, replay.CheckoutRequest{Part: 3, Dest: empty}); err == nil {
		t.Fatal("the injected failure was not reported")
	}
	if ents, err := os.ReadDir(empty); err != nil || len(ents) != 0 {
		t.Fatalf("the destination that existed empty holds %d entries (%v)", len(ents), err)
	}
}

// failingEvaluator fails on trees holding a marker file: failure injection
// for a tree whose evaluation cannot be done.
type failingEvaluator struct{ replay.Evaluator }

func (f failingEvaluator) Evaluate(ctx context.Context, dir string, paths []string) (replay.Result, error) {
	if _, err := os.Stat(filepath.Join(dir, "broken.txt")); err == nil {
		if data, _ := os.ReadFile(filepath.Join(dir, "broken.txt")); strings.TrimSpace(string(data)) == "add" {
			return replay.Result{}, errors.New("runner crashed")
		}
	}
	return f.Evaluator.Evaluate(ctx, dir, paths)
}

// TestEvaluateKeepsOthersWhenACommitIsMissing: one commit the bundle lacks
// makes that commit's parts fail; every other part is still evaluated.
func TestEvaluateKeepsOthersWhenACommitIsMissing(t *testing.T) {
	ctx := context.Background()
	tj := replaytest.Build(t, "traj-missing", replaytest.AttributionScript(), 5, true)
	h := openHistory(t, tj)
	tr := cloneTrace(t, tj.Trace)
	missing := strings.Repeat("ab", 20)
	p := &tr.Turns[0].Parts[3] // part 4
	p.GitCommit, p.RepoCheckpoint.CommitAfter = missing, missing
	out, err := replay.Evaluate(ctx, tr, h, replaytest.TinyEnv{}, replay.EvaluateOptions{TestPaths: []string{"basics"}, Workers: 2})
	if !errors.Is(err, replay.ErrIncomplete) || out == nil {
		t.Fatalf("err = %v, want ErrIncomplete with an output", err)
	}
	if !strings.Contains(err.Error(), missing) {
		t.Fatalf("the error does not name the missing commit: %v", err)
	}
	ce := out.CommitEvaluations[missing]
	if ce == nil || ce.Source != replay.SourceFailed || ce.Error == "" || !slices.Equal(ce.Parts, []int{4}) {
		t.Fatalf("missing commit's evaluation: %+v", ce)
	}
	if pe := out.PartEvaluations[4]; pe == nil || pe.Error == "" || pe.Commit != missing {
		t.Fatalf("part 4: %+v", pe)
	}
	if len(out.PartEvaluations) != 10 || out.CommitsEvaluated != len(out.CommitEvaluations) || out.Stats.Failures != 1 {
		t.Fatalf("parts %d, commits %d/%d, stats %+v", len(out.PartEvaluations), out.CommitsEvaluated, len(out.CommitEvaluations), out.Stats)
	}
	for part := 1; part <= 10; part++ {
		if pe := out.PartEvaluations[part]; part != 4 && (pe == nil || pe.Error != "" || pe.Total == 0) {
			t.Fatalf("part %d was not evaluated: %+v", part, pe)
		}
	}
	if _, err := replay.MarshalIndent(out); err != nil {
		t.Fatal(err)
	}
}

func TestEvaluateRecordsFailuresAndDoesNotCacheThem(t *testing.T) {
	ctx := context.Background()
	tj := replaytest.Build(t, "traj-fail", replaytest.AttributionScript(), 5, true)
	h := openHistory(t, tj)
	cache := &replay.MemCache{}
	opts := replay.EvaluateOptions{TestPaths: []string{"basics"}, Workers: 2, Cache: cache}
	out, err := replay.Evaluate(ctx, tj.Trace, h, failingEvaluator{replaytest.TinyEnv{}}, opts)
	if !errors.Is(err, replay.ErrIncomplete) || out == nil {
		t.Fatalf("err = %v, want ErrIncomplete with an output", err)
	}
	// Parts 5..7 share broken.txt = "add" (commits of parts 5 and 7).
	for _, part := range []int{5, 6, 7} {
		if pe := out.PartEvaluations[part]; pe.Error == "" || !strings.Contains(pe.Error, "runner crashed") {
			t.Fatalf("part %d: %+v", part, pe)
		}
	}
	if out.Stats.Failures != 2 || out.PartEvaluations[8].Passed != 2 {
		t.Fatalf("stats %+v part 8 %+v", out.Stats, out.PartEvaluations[8])
	}
	// The failures were not cached: a healthy evaluator computes exactly them.
	ev := &countingEvaluator{Evaluator: replaytest.TinyEnv{}}
	if _, err := replay.Evaluate(ctx, tj.Trace, h, ev, opts); err != nil {
		t.Fatal(err)
	}
	if n := ev.calls.Load(); n != 2 {
		t.Fatalf("re-evaluate ran %d trees, want the 2 that failed", n)
	}
}
