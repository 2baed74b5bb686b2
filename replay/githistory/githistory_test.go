package githistory_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trajlab/traj/replay/githistory"
	"github.com/trajlab/traj/replay/replaytest"
)

func TestOpenAndCheckout(t *testing.T) {
	for _, tt := range []struct {
		name string
		spec replaytest.Spec
		// chain opens the per-part history bundles instead of repo.bundle.
		chain bool
	}{
		{"gitstate bundle", replaytest.Spec{}, false},
		{"git CLI bundle", replaytest.Spec{GitCLIBundle: true}, false},
		{"gitstate history chain", replaytest.Spec{History: true}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			spec := tt.spec
			spec.ID, spec.Changes, spec.TurnSize = "traj-gh", replaytest.AttributionScript(), 5
			tj := replaytest.BuildSpec(t, spec)
			paths := []string{tj.BundlePath}
			if tt.chain {
				paths = tj.HistoryBundles
				if len(paths) != 7 {
					t.Fatalf("%d history bundles, want one per committed part (7)", len(paths))
				}
			}
			h, err := githistory.Open(context.Background(), paths...)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			checkHistory(t, tj, h)
		})
	}
}

func checkHistory(t *testing.T, tj *replaytest.Trajectory, h *githistory.History) {
	ctx := context.Background()
	for i, c := range tj.Commits {
		ok, err := h.HasCommit(ctx, c)
		if err != nil || !ok {
			t.Fatalf("part %d commit %s not found: %v", i+1, c, err)
		}
		tree, err := h.Tree(ctx, c)
		if want := replaytest.Git(t, tj.Work, "rev-parse", c+"^{tree}"); err != nil || tree != want {
			t.Fatalf("tree of %s = %s (%v), want %s", c, tree, err, want)
		}
	}
	if ok, _ := h.HasCommit(ctx, strings.Repeat("0", 40)); ok {
		t.Fatal("a made-up commit was found")
	}
	if ok, _ := h.HasCommit(ctx, "../../etc"); ok {
		t.Fatal("a non-hash was found")
	}
	if got := h.Refs()["refs/heads/main"]; got != tj.Commits[len(tj.Commits)-1] {
		t.Fatalf("refs/heads/main = %s", got)
	}
	dest := filepath.Join(t.TempDir(), "co")
	if err := h.Checkout(ctx, tj.Commits[4], dest); err != nil {
		t.Fatal(err)
	}
	if st := replaytest.Git(t, dest, "status", "--porcelain"); st != "" {
		t.Fatalf("status: %s", st)
	}
	if log := replaytest.Git(t, dest, "log", "--format=%H", "-1", "main"); log != tj.Commits[len(tj.Commits)-1] {
		t.Fatalf("branch main in the checkout = %s", log)
	}
	replaytest.Git(t, dest, "fsck", "--no-progress")

	// Export: the same files, no .git.
	exp := filepath.Join(t.TempDir(), "export")
	if err := h.Export(ctx, tj.Commits[4], exp); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(exp, ".git")); !os.IsNotExist(err) {
		t.Fatal("export wrote a .git")
	}
	for _, line := range strings.Split(replaytest.Git(t, tj.Work, "ls-tree", "-r", "--name-only", tj.Commits[4]), "\n") {
		want := replaytest.Git(t, tj.Work, "show", tj.Commits[4]+":"+line)
		got, err := os.ReadFile(filepath.Join(exp, line))
		if err != nil || strings.TrimSpace(string(got)) != want {
			t.Fatalf("export %s: %q (%v), want %q", line, got, err, want)
		}
	}
	if err := h.Export(ctx, strings.Repeat("1", 40), filepath.Join(t.TempDir(), "x")); err == nil {
		t.Fatal("export of an unknown commit succeeded")
	}
}

func TestOpenRejectsBadBundles(t *testing.T) {
	tj := replaytest.BuildSpec(t, replaytest.Spec{ID: "traj-bad", Changes: replaytest.AttributionScript()[:5], TurnSize: 3, History: true})
	good, err := os.ReadFile(tj.BundlePath)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tests := map[string][]byte{
		"empty":          nil,
		"not a bundle":   []byte("hello\n"),
		"truncated head": good[:20],
		"truncated pack": good[:len(good)-30],
		"prerequisite":   []byte("# v2 git bundle\n-" + strings.Repeat("a", 40) + " x\n" + strings.Repeat("b", 40) + " refs/heads/main\n\nPACK"),
	}
	for name, data := range tests {
		p := filepath.Join(dir, fmt.Sprintf("%x.bundle", name))
		os.WriteFile(p, data, 0o644)
		if _, err := githistory.Open(context.Background(), p); err == nil {
			t.Errorf("%s: opened without error", name)
		}
	}
	if _, err := githistory.Open(context.Background(), filepath.Join(dir, "missing.bundle")); err == nil {
		t.Error("missing file opened")
	}
	// An incremental bundle without the ones before it.
	if _, err := githistory.Open(context.Background(), tj.HistoryBundles[1:]...); err == nil {
		t.Error("a chain missing its first bundle opened")
	}
}

func BenchmarkCheckout(b *testing.B) {
	tj := replaytest.Build(b, "traj-co", replaytest.AttributionScript(), 5, false)
	h, err := githistory.Open(context.Background(), tj.BundlePath)
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	root := b.TempDir()
	i := 0
	for b.Loop() {
		i++
		if err := h.Checkout(context.Background(), tj.Commits[9], filepath.Join(root, fmt.Sprint(i))); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDiffMatchesGit: files changed and lines added and removed between
// consecutive commits are what `git diff --numstat` says.
func TestDiffMatchesGit(t *testing.T) {
	changes := []replaytest.Change{
		{Write: map[string]string{"a.c": "int main(void) {\n  return 0;\n}\n", "README": "one\ntwo\n"}},
		{Write: map[string]string{"a.c": "int main(void) {\n  int x = 2;\n  return x;\n}\n"}},
		{Write: map[string]string{"bin.dat": "\x00\x01\x02binary\x00"}, Delete: []string{"README"}},
		{Write: map[string]string{"b.c": ""}},
	}
	tj := replaytest.BuildSpec(t, replaytest.Spec{ID: "traj-diff", Changes: changes, TurnSize: 2})
	h, err := githistory.Open(context.Background(), tj.BundlePath)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	prev := tj.Initial
	for i, c := range tj.Commits {
		got, err := h.Diff(context.Background(), prev, c)
		if err != nil {
			t.Fatalf("part %d: %v", i+1, err)
		}
		var want githistory.DiffStat
		for _, line := range strings.Split(replaytest.Git(t, tj.Work, "diff", "--numstat", "--no-renames", prev, c), "\n") {
			f := strings.Fields(line)
			if len(f) < 3 {
				continue
			}
			want.Files++
			var a, d int
			fmt.Sscan(f[0], &a) // "-" for binary files leaves 0
			fmt.Sscan(f[1], &d)
			want.Added += a
			want.Removed += d
		}
		if got != want {
			t.Errorf("part %d: Diff %+v, git diff --numstat %+v", i+1, got, want)
		}
		prev = c
	}
	if _, err := h.Diff(context.Background(), "", tj.Commits[0]); err != nil {
		t.Errorf("diff from the empty tree: %v", err)
	}
}

// TestDiffPermutedBounded: a checkpoint that rewrites a 160,000-line file
// as a permutation of its lines (go-git's diff: 134 s of the Parquet
// export) is counted within linediff's budget and said to be too large;
// the counts are those of a correct diff (the file replaced whole).
func TestDiffPermutedBounded(t *testing.T) {
	tj := replaytest.BuildSpec(t, replaytest.Spec{ID: "permuted", Changes: replaytest.PermutedRewrite(160_000), TurnSize: 2})
	h, err := githistory.Open(context.Background(), tj.BundlePath)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	got, err := h.Diff(context.Background(), tj.Commits[0], tj.Commits[1])
	if err != nil {
		t.Fatal(err)
	}
	if want := (githistory.DiffStat{Files: 1, Added: 160_000, Removed: 160_000, TooLarge: true}); got != want {
		t.Fatalf("Diff %+v, want %+v", got, want)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.Diff(ctx, tj.Commits[0], tj.Commits[1]); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestDiffMatchesGitRandom holds Diff to `git diff --numstat --no-renames`
// on a random history of nested folders (names that sort differently as
// files and as folders: "a", "a-b", "a.c", "a/", "a0"), binary files,
// empty files, folders added and removed whole, a file that becomes a
// folder, and pairs of commits out of order (the trees Diff keeps from
// the call before must not stand in for others).
func TestDiffMatchesGitRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 40))
	names := []string{"a", "a-b", "a.c", "a0", "b.c", "src/x.c", "src/y.c", "src/deep/z.c", "inc/a.h", "t/1/2/3.c", "t/1/4.c"}
	live := map[string]bool{}
	var changes []replaytest.Change
	text := func() string {
		var b strings.Builder
		for range rng.IntN(30) {
			fmt.Fprintf(&b, "line %d\n", rng.IntN(12))
		}
		return b.String()
	}
	for len(changes) < 40 {
		ch := replaytest.Change{Write: map[string]string{}}
		for range 1 + rng.IntN(3) {
			name := names[rng.IntN(len(names))]
			switch {
			case live[name] && rng.IntN(3) == 0:
				if !slices.Contains(ch.Delete, name) {
					if _, w := ch.Write[name]; !w {
						ch.Delete = append(ch.Delete, name)
					}
				}
			case rng.IntN(8) == 0:
				ch.Write[name] = "\x00binary" + text()
			default:
				ch.Write[name] = text()
			}
		}
		for name := range ch.Write {
			live[name] = true
		}
		for _, name := range ch.Delete {
			delete(live, name)
		}
		changes = append(changes, ch)
	}
	// "a" becomes a folder: removed, then "a/b" written.
	changes = append(changes, replaytest.Change{Write: map[string]string{"a": "file\n"}},
		replaytest.Change{Delete: []string{"a"}, Write: map[string]string{"keep": "1\n"}},
		replaytest.Change{Write: map[string]string{"a/b": "folder\nnow\n"}})
	tj := replaytest.BuildSpec(t, replaytest.Spec{ID: "traj-diff-random", Changes: changes, TurnSize: 4})
	checkDiffs(t, tj, rng)
	// Beside a folder "a": a file that sorts before "a/" appears, then the
	// folder changes beside one that sorts after it (a walk that orders
	// "a" as a file pairs the wrong entries).
	checkDiffs(t, replaytest.BuildSpec(t, replaytest.Spec{ID: "traj-diff-folder", TurnSize: 4, Changes: []replaytest.Change{
		{Write: map[string]string{"a/b": "0\n", "a0": "0\n"}},
		{Write: map[string]string{"a.c": "1\n"}},
		{Write: map[string]string{"a/b": "2\n", "a-b": "3\n"}},
	}}), rng)
}

// checkDiffs holds Diff to `git diff --numstat --no-renames` for each
// commit of tj against the one before, then for random pairs.
func checkDiffs(t *testing.T, tj *replaytest.Trajectory, rng *rand.Rand) {
	t.Helper()
	h, err := githistory.Open(context.Background(), tj.BundlePath)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	check := func(from, to string) {
		t.Helper()
		got, err := h.Diff(context.Background(), from, to)
		if err != nil {
			t.Fatalf("Diff %s..%s: %v", from, to, err)
		}
		var want githistory.DiffStat
		for _, line := range strings.Split(replaytest.Git(t, tj.Work, "diff", "--numstat", "--no-renames", from, to), "\n") {
			f := strings.Fields(line)
			if len(f) < 3 {
				continue
			}
			want.Files++
			var a, d int
			fmt.Sscan(f[0], &a)
			fmt.Sscan(f[1], &d)
			want.Added += a
			want.Removed += d
		}
		if got != want {
			t.Errorf("Diff %s..%s = %+v, git diff --numstat %+v", from, to, got, want)
		}
	}
	prev := tj.Initial
	for _, c := range tj.Commits {
		check(prev, c)
		prev = c
	}
	n := len(tj.Commits)
	check(tj.Commits[max(0, n-4)], tj.Commits[n-1]) // in TestDiffMatchesGitRandom: "a" the file, then "a/b"
	check(tj.Commits[n-1], tj.Commits[max(0, n-4)])
	for range 30 {
		check(tj.Commits[rng.IntN(n)], tj.Commits[rng.IntN(n)])
	}
}
