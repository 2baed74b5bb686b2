package view

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/trajlab/traj/replay/replaytest"
	"github.com/trajlab/traj/trace/store"
)

// storeOf puts a built trajectory (trace and repo.bundle) into a fresh
// store folder.
func storeOf(t *testing.T, tj *replaytest.Trajectory) string {
	t.Helper()
	dir := t.TempDir()
	out := filepath.Join(dir, store.TrajectoriesDir, tj.ID)
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	for src, name := range map[string]string{tj.TracePath: store.TraceName, tj.BundlePath: store.BundleName} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(out, name), b)
	}
	return dir
}

// TestPermutedRewriteBounded is the attack on the viewer's diffs: part 2
// rewrites a 160,000-line file as a permutation of its lines (go-git's
// diff: 124 s of CPU for the diff, 50 s for the file view). The diff
// answers with the file labelled too large to diff and no hunks; the file
// view marks no added lines and says why; an edit action of the same
// size is labelled too.
func TestPermutedRewriteBounded(t *testing.T) {
	changes := replaytest.PermutedRewrite(160_000)
	tj := replaytest.BuildSpec(t, replaytest.Spec{ID: "permuted", Changes: changes, TurnSize: 2, TrajFields: true})
	_, _, c := testServer(t, Options{StoreURL: storeOf(t, tj)})
	var d Diff
	c.mustGet("/api/t/permuted/diff/2", &d)
	if !d.TooLarge || len(d.Files) != 1 || !d.Files[0].TooLarge || d.Files[0].Path != "big.c" {
		t.Fatalf("diff: too large %v, files %+v", d.TooLarge, d.Files)
	}
	if strings.Contains(d.Patch, "@@") || !strings.Contains(d.Patch, "diff --git a/big.c b/big.c") {
		t.Errorf("patch of a file too large to diff:\n%.500s", d.Patch)
	}
	var f struct {
		File File `json:"file"`
	}
	c.mustGet("/api/t/permuted/file/2?path=big.c", &f)
	if !f.File.AddedTooLarge || len(f.File.Added) != 0 {
		t.Errorf("file view: added %d lines, too large %v", len(f.File.Added), f.File.AddedTooLarge)
	}
	// Part 1 added the file: an honest diff, whole.
	var first Diff
	c.mustGet("/api/t/permuted/diff/1", &first)
	if first.TooLarge || !strings.HasPrefix(first.Patch, "diff --git a/big.c b/big.c") || !strings.Contains(first.Patch, "+int v1000 = 7000;") {
		t.Errorf("part 1's diff: too large %v, truncated %v\n%.300s", first.TooLarge, first.Truncated, first.Patch)
	}
	old, new := changes[0].Write["big.c"], changes[1].Write["big.c"]
	if _, tooLarge := lineDiff(old, new); !tooLarge {
		t.Error("an edit action replacing the file by its permutation is not labelled too large")
	}
}

// TestDiffCancelled: a request whose client went away ends the diff with
// the context's error.
func TestDiffCancelled(t *testing.T) {
	tj := replaytest.BuildSpec(t, replaytest.Spec{ID: "permuted", Changes: replaytest.PermutedRewrite(20_000), TurnSize: 2, TrajFields: true})
	srv, _, c := testServer(t, Options{StoreURL: storeOf(t, tj)})
	c.mustGet("/api/t/permuted/diff/1", nil) // clones the history
	tr, err := srv.cat.get("permuted")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	repo := tr.git
	if repo == nil {
		t.Fatal("no clone after a diff")
	}
	if _, err := repo.diff(ctx, tj.Commits[0], tj.Commits[1]); !errors.Is(err, context.Canceled) {
		t.Fatalf("diff under a cancelled context: %v", err)
	}
}

// TestDiffSameAsGoGit: on the recorded demo's checkpoints (honest edits)
// the patch is the one go-git's own diff printed before linediff.
func TestDiffSameAsGoGit(t *testing.T) {
	srv, _, c := testServer(t, Options{StoreURL: sharedSample(t)})
	var page struct {
		Rows []Row `json:"rows"`
	}
	c.mustGet("/api/t/demo/parts?from=1&n=500", &page)
	tr, err := srv.cat.get("demo")
	if err != nil {
		t.Fatal(err)
	}
	compared := 0
	for _, r := range page.Rows {
		if !r.Committed {
			continue
		}
		var d Diff
		c.mustGet(fmt.Sprintf("/api/t/demo/diff/%d", r.Part), &d)
		a, err := object.GetCommit(tr.git.st, plumbing.NewHash(d.Before))
		if err != nil {
			t.Fatal(err)
		}
		b, err := object.GetCommit(tr.git.st, plumbing.NewHash(d.After))
		if err != nil {
			t.Fatal(err)
		}
		p, err := a.PatchContext(context.Background(), b)
		if err != nil {
			t.Fatal(err)
		}
		if want := p.String(); want != d.Patch {
			t.Errorf("part %d: patch differs from go-git's\n--- go-git\n%s\n--- ours\n%s", r.Part, want, d.Patch)
		}
		compared++
	}
	if compared < 3 {
		t.Fatalf("only %d committed parts compared", compared)
	}
}

// TestCallsFromChunks: a running trajectory's model calls are in the
// store only as the call chunks its turn ends uploaded (no whole
// model_calls.jsonl yet): the viewer reads them back as one record.
func TestCallsFromChunks(t *testing.T) {
	sample := sharedSample(t)
	src := filepath.Join(sample, store.TrajectoriesDir, "alpha")
	dir := t.TempDir()
	out := filepath.Join(dir, store.TrajectoriesDir, "alpha")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{store.TraceName, store.BundleName} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(out, name), b)
	}
	rec, err := os.ReadFile(filepath.Join(src, store.ModelCallsName))
	if err != nil {
		t.Fatal(err)
	}
	cut := int64(strings.Index(string(rec), "\n") + 1) // after the first call
	for _, c := range [][2]int64{{0, cut}, {cut, int64(len(rec))}} {
		path := filepath.Join(dir, filepath.FromSlash(store.CallChunkKey("alpha", store.ModelCallsName, c[0], c[1])))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, path, rec[c[0]:c[1]])
	}
	_, _, c := testServer(t, Options{StoreURL: dir})
	var calls struct {
		Recorded bool `json:"recorded"`
		Total    int  `json:"total"`
	}
	c.mustGet("/api/t/alpha/calls", &calls)
	if want := strings.Count(string(rec), "\n"); !calls.Recorded || calls.Total != want || want < 2 {
		t.Fatalf("calls from chunks: %+v, want %d", calls, want)
	}
}
