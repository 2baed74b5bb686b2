package gitstate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"golang.org/x/sys/unix"
)

// TestReadsStayInWorkspace is the attack of an agent that swaps what the
// walk saw for symlinks to the host before the checkpoint reads it (a
// daemon it left can do that at any moment): a file becomes a symlink to
// a host file, a folder a symlink to a host folder holding a file and a
// symlink of the same names. Neither the file read, nor the link read,
// nor the folder listing follows them out, and a checkpoint after the
// swaps records the symlinks themselves: no byte of the host's files is
// ever stored.
func TestReadsStayInWorkspace(t *testing.T) {
	ctx := context.Background()
	outside := t.TempDir()
	secret := "HOST SECRET 5f0c1d\n"
	writeFile(t, outside, "secret.txt", secret, 0o644)
	writeFile(t, outside, "b.txt", secret, 0o644)
	if err := os.Symlink("HOST-LINK-TARGET", filepath.Join(outside, "l")); err != nil {
		t.Fatal(err)
	}
	r := newRepo(t)
	writeFile(t, r.Dir(), "a.txt", "ok\n", 0o644)
	writeFile(t, r.Dir(), "src/b.txt", "fine\n", 0o644)
	if err := os.Symlink("x", filepath.Join(r.Dir(), "src", "l")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Checkpoint(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// The swaps, after the walk would have seen a file and a folder.
	if err := os.Remove(filepath.Join(r.Dir(), "a.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(r.Dir(), "a.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(r.Dir(), "src")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(r.Dir(), "src")); err != nil {
		t.Fatal(err)
	}
	ws, err := openWorkspace(r.Dir())
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	for _, tc := range []struct {
		rel  string
		mode filemode.FileMode
	}{
		{"a.txt", filemode.Regular},
		{"src/b.txt", filemode.Regular},
		{"src/l", filemode.Symlink},
	} {
		if _, _, err := r.hashFile(ws, tc.rel, tc.mode, int64(len(secret))); !errors.Is(err, errMoved) {
			t.Errorf("hashFile %s: %v, want %v", tc.rel, err, errMoved)
		}
	}
	// The fallback without openat2 refuses the same paths.
	dir := ws.root
	for _, tc := range []struct {
		rel   string
		flags int
	}{
		{"a.txt", unix.O_RDONLY},
		{"src/b.txt", unix.O_RDONLY},
		{"src", unix.O_RDONLY | unix.O_DIRECTORY},
		{"src/.", unix.O_PATH | unix.O_DIRECTORY},
		{"../" + filepath.Base(r.Dir()) + "/a.txt", unix.O_RDONLY},
	} {
		if fd, err := openChain(int(dir.Fd()), tc.rel, tc.flags); err == nil {
			unix.Close(fd)
			t.Errorf("openChain %s: opened, want refused", tc.rel)
		}
	}
	writeFile(t, r.Dir(), "ok/deep/c.txt", "c\n", 0o644)
	for _, rel := range []string{".", "ok/deep/c.txt"} {
		if fd, err := openChain(int(dir.Fd()), rel, unix.O_RDONLY); err != nil {
			t.Errorf("openChain %s: %v", rel, err)
		} else {
			unix.Close(fd)
		}
	}
	if err := os.RemoveAll(filepath.Join(r.Dir(), "ok")); err != nil {
		t.Fatal(err)
	}

	w := &walker{ws: ws, exclude: r.exclude}
	var d walkDir
	if subs, err := w.list([]string{"src"}, &d); err != nil || len(subs) != 0 || len(d.items) != 0 {
		t.Errorf("listing src (now a symlink out): %d items, %d folders, %v; want nothing", len(d.items), len(subs), err)
	}
	cp, err := r.Checkpoint(ctx, 2)
	if err != nil || !cp.Committed {
		t.Fatalf("checkpoint after the swaps: %+v %v", cp, err)
	}
	if got := lsTree(t, r); got["a.txt"] != "120000 blob" || got["src"] != "120000 blob" || len(got) != 2 {
		t.Errorf("tree after the swaps %v, want a.txt and src as symlinks", got)
	}
	for _, s := range []string{secret, "HOST-LINK-TARGET"} {
		if r.st.HasEncodedObject(plumbing.ComputeHash(plumbing.BlobObject, []byte(s))) == nil {
			t.Errorf("the history stores %q, read from outside the workspace", strings.TrimSpace(s))
		}
	}
}

// TestAgentHeadStaysInWorkspace: the agent's .git is the agent's; a HEAD
// or a refs folder that is a symlink to the host gives no agent_git_head,
// and the same refs as plain files do.
func TestAgentHeadStaysInWorkspace(t *testing.T) {
	outside, ws := t.TempDir(), t.TempDir()
	hash := strings.Repeat("ab", 20)
	writeFile(t, outside, "HEAD", hash+"\n", 0o644)
	writeFile(t, outside, "heads/main", hash+"\n", 0o644)
	if err := os.MkdirAll(filepath.Join(ws, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := func(target, rel string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(ws, rel)); err != nil {
			t.Fatal(err)
		}
	}
	link(filepath.Join(outside, "HEAD"), ".git/HEAD")
	if got := agentHead(ws); got != "" {
		t.Errorf("HEAD a symlink to the host: agent head %q, want none", got)
	}
	os.Remove(filepath.Join(ws, ".git", "HEAD"))
	writeFile(t, ws, ".git/HEAD", "ref: refs/heads/main\n", 0o644)
	link(outside, ".git/refs")
	if got := agentHead(ws); got != "" {
		t.Errorf("refs a symlink to the host: agent head %q, want none", got)
	}
	os.Remove(filepath.Join(ws, ".git", "refs"))
	writeFile(t, ws, ".git/refs/heads/main", hash+"\n", 0o644)
	if got := agentHead(ws); got != hash {
		t.Errorf("plain refs: agent head %q, want %s", got, hash)
	}
}
