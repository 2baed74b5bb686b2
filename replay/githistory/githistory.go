// Package githistory opens a trajectory's git bundle as a replay.History:
// it answers which commits exist and what tree each has, and checks a
// commit out into a folder as a real git repository.
package githistory

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/memory"
)

// History is a bundle's objects held in memory. It is safe for concurrent
// readers once opened.
type History struct {
	path string
	refs map[string]string // ref name → commit
	pack []byte
	objs *memory.Storage
}

// Open reads the bundle at path (git bundle format v2 or v3, no
// prerequisites).
func Open(path string) (*History, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read bundle: %w", err)
	}
	h, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("read bundle %s: %w", path, err)
	}
	h.path = path
	return h, nil
}

func parse(data []byte) (*History, error) {
	r := bufio.NewReader(bytes.NewReader(data))
	sig, err := r.ReadString('\n')
	if err != nil {
		return nil, errors.New("not a git bundle: no header")
	}
	if sig != "# v2 git bundle\n" && sig != "# v3 git bundle\n" {
		return nil, fmt.Errorf("not a git bundle: header %q", strings.TrimSpace(sig))
	}
	h := &History{refs: make(map[string]string)}
	off := len(sig)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, errors.New("truncated bundle header")
		}
		off += len(line)
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			break
		}
		switch {
		case strings.HasPrefix(line, "@"):
			// v3 capability (object-format=sha1 is the only one we meet).
			if strings.HasPrefix(line, "@object-format=") && line != "@object-format=sha1" {
				return nil, fmt.Errorf("unsupported bundle capability %s", line)
			}
		case strings.HasPrefix(line, "-"):
			return nil, errors.New("bundle has prerequisites; a trajectory bundle must hold the full history")
		default:
			hash, name, ok := strings.Cut(line, " ")
			if !ok || !plumbing.IsHash(hash) {
				return nil, fmt.Errorf("bad bundle reference line %q", line)
			}
			h.refs[name] = hash
		}
	}
	h.pack = data[off:]
	h.objs = memory.NewStorage()
	if err := packfile.UpdateObjectStorage(h.objs, bytes.NewReader(h.pack)); err != nil {
		return nil, fmt.Errorf("read bundle packfile: %w", err)
	}
	return h, nil
}

// Refs returns the bundle's references (name → commit).
func (h *History) Refs() map[string]string { return h.refs }

// HasCommit implements replay.History.
func (h *History) HasCommit(_ context.Context, commit string) (bool, error) {
	if !plumbing.IsHash(commit) {
		return false, nil
	}
	_, err := h.objs.EncodedObject(plumbing.CommitObject, plumbing.NewHash(commit))
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Tree implements replay.TreeResolver.
func (h *History) Tree(_ context.Context, commit string) (string, error) {
	if !plumbing.IsHash(commit) {
		return "", fmt.Errorf("%q is not a commit hash", commit)
	}
	c, err := object.GetCommit(h.objs, plumbing.NewHash(commit))
	if err != nil {
		return "", fmt.Errorf("commit %s: %w", commit, err)
	}
	return c.TreeHash.String(), nil
}

// Checkout implements replay.History: dir becomes a git repository with the
// bundle's objects and references, HEAD detached at commit, and a clean
// worktree and index.
func (h *History) Checkout(ctx context.Context, commit, dir string) error {
	if ok, err := h.HasCommit(ctx, commit); err != nil || !ok {
		return fmt.Errorf("commit %s is not in the bundle %s", commit, h.path)
	}
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		return fmt.Errorf("init repository: %w", err)
	}
	pw, ok := repo.Storer.(storer.PackfileWriter)
	if !ok {
		return errors.New("repository storage cannot take a packfile")
	}
	w, err := pw.PackfileWriter()
	if err != nil {
		return fmt.Errorf("write packfile: %w", err)
	}
	if _, err := io.Copy(w, bytes.NewReader(h.pack)); err != nil {
		w.Close()
		return fmt.Errorf("write packfile: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("index packfile: %w", err)
	}
	for name, hash := range h.refs {
		if name == "HEAD" || !strings.HasPrefix(name, "refs/") {
			continue
		}
		if err := repo.Storer.SetReference(plumbing.NewHashReference(plumbing.ReferenceName(name), plumbing.NewHash(hash))); err != nil {
			return fmt.Errorf("set reference %s: %w", name, err)
		}
	}
	hash := plumbing.NewHash(commit)
	if err := repo.Storer.SetReference(plumbing.NewHashReference(plumbing.HEAD, hash)); err != nil {
		return fmt.Errorf("set HEAD: %w", err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		return fmt.Errorf("open worktree: %w", err)
	}
	if err := wt.Reset(&git.ResetOptions{Commit: hash, Mode: git.HardReset}); err != nil {
		return fmt.Errorf("check out %s: %w", commit, err)
	}
	return nil
}
