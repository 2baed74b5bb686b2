package gitstate

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTreeCacheMatchesGit attacks the in-memory cache of folder trees
// (cachedTree): a seeded run of random edits (files written, removed,
// made executable, turned into folders, symlinks, whole folders removed
// and made), with scans that build trees and store nothing (as the tool
// gateway's snapshots and a failed checkpoint leave them) between the
// checkpoints. After every checkpoint, the git CLI finds every object
// (fsck), and the commit's tree is the tree git itself writes for the
// work tree (add -A and write-tree on an index of its own).
func TestTreeCacheMatchesGit(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	rng := rand.New(rand.NewPCG(7, 11))
	dirs := []string{"", "src", "src/a", "src/a/deep", "src/b", "tests", "docs/x/y"}
	pick := func() string {
		d := dirs[rng.IntN(len(dirs))]
		return filepath.Join(d, fmt.Sprintf("f%d.txt", rng.IntN(6)))
	}
	// put writes a file, replacing a folder of that name.
	put := func(rel, content string) {
		p := filepath.Join(r.Dir(), rel)
		if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
			os.RemoveAll(p)
		}
		writeFile(t, r.Dir(), rel, content, 0o644)
	}
	for i := range 20 {
		put(pick(), fmt.Sprintf("seed %d\n", i))
	}
	for round := 1; round <= 60; round++ {
		for range 1 + rng.IntN(4) {
			p := filepath.Join(r.Dir(), pick())
			switch op := rng.IntN(10); {
			case op < 4:
				put(strings.TrimPrefix(p, r.Dir()+"/"), fmt.Sprintf("round %d %d\n", round, rng.Int()))
			case op == 4:
				os.Remove(p)
			case op == 5:
				os.Chmod(p, os.FileMode(0o644|rng.IntN(2)*0o111))
			case op == 6:
				os.RemoveAll(filepath.Dir(p)) // a whole folder (or the workspace's files: the root stays)
				os.MkdirAll(r.Dir(), 0o755)
			case op == 7:
				os.Remove(p) // a file becomes a folder of the same name
				put(strings.TrimPrefix(p, r.Dir()+"/")+"/inner.txt", "inner\n")
			case op == 8:
				os.Remove(p)
				os.MkdirAll(filepath.Dir(p), 0o755)
				os.Symlink(fmt.Sprintf("target-%d", round), p)
			default:
				if _, err := r.scan(ctx); err != nil { // built, never stored
					t.Fatal(err)
				}
			}
		}
		if _, err := r.Checkpoint(ctx, round); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if out, err := gitTry(r.Dir(), "--git-dir="+r.GitDir(), "fsck", "--full", "--no-dangling"); err != nil {
			t.Fatalf("round %d: fsck: %v\n%s", round, err, out)
		}
		got := strings.TrimSpace(rgit(t, r, "rev-parse", "HEAD^{tree}"))
		if want := gitWriteTree(t, r); got != want {
			t.Fatalf("round %d: checkpoint tree %s, git writes %s for the same work tree", round, got, want)
		}
	}
}

// gitWriteTree is the tree the git CLI writes for r's work tree, through
// an index file of its own.
func gitWriteTree(t *testing.T, r *Repo) string {
	t.Helper()
	idx := filepath.Join(t.TempDir(), "index")
	run := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"--git-dir=" + r.GitDir(), "--work-tree=" + r.Dir()}, args...)...)
		cmd.Dir = r.Dir()
		cmd.Env = append(gitEnv(), "GIT_INDEX_FILE="+idx)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	run("add", "-A")
	return strings.TrimSpace(run("write-tree"))
}

// TestTreeCacheKeepsEveryFolder: a one-file change re-encodes only the
// folders on its way (root, src, modNN, subN: 4), whichever folder the
// last change was in; the cache keeps every folder, also those beneath a
// folder it reused whole.
func TestTreeCacheKeepsEveryFolder(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	paths := genWorkspace(t, r.Dir(), 600, 50, 0)
	if _, err := r.Checkpoint(ctx, 1); err != nil {
		t.Fatal(err)
	}
	folders := len(r.trees)
	for i := range 12 {
		writeFile(t, r.Dir(), paths[(i*7919)%len(paths)], fmt.Sprintf("edit %d\n", i), 0o644)
		sc, err := r.scan(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if sc.tb.encoded != 4 || len(r.trees) != folders {
			t.Fatalf("edit %d: %d trees encoded, %d of %d folders cached; want 4 and all", i, sc.tb.encoded, len(r.trees), folders)
		}
		if _, err := r.Checkpoint(ctx, i+2); err != nil {
			t.Fatal(err)
		}
	}
}
