package githistory_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trajlab/traj/replay/githistory"
	"github.com/trajlab/traj/replay/replaytest"
)

func TestOpenAndCheckout(t *testing.T) {
	ctx := context.Background()
	tj := replaytest.Build(t, "traj-gh", replaytest.AttributionScript(), 5, false)
	h, err := githistory.Open(tj.BundlePath)
	if err != nil {
		t.Fatal(err)
	}
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
}

func TestOpenRejectsBadBundles(t *testing.T) {
	tj := replaytest.Build(t, "traj-bad", replaytest.AttributionScript()[:3], 3, false)
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
		"prerequisite":   []byte("# v2 git bundle\n-" + strings.Repeat("a", 40) + " x\n\nPACK"),
	}
	for name, data := range tests {
		p := filepath.Join(dir, fmt.Sprintf("%x.bundle", name))
		os.WriteFile(p, data, 0o644)
		if _, err := githistory.Open(p); err == nil {
			t.Errorf("%s: opened without error", name)
		}
	}
	if _, err := githistory.Open(filepath.Join(dir, "missing.bundle")); err == nil {
		t.Error("missing file opened")
	}
}

func BenchmarkCheckout(b *testing.B) {
	tj := replaytest.Build(b, "traj-co", replaytest.AttributionScript(), 5, false)
	h, err := githistory.Open(tj.BundlePath)
	if err != nil {
		b.Fatal(err)
	}
	root := b.TempDir()
	i := 0
	for b.Loop() {
		i++
		if err := h.Checkout(context.Background(), tj.Commits[9], filepath.Join(root, fmt.Sprint(i))); err != nil {
			b.Fatal(err)
		}
	}
}
