// Package githistory opens a trajectory's git bundles as a replay.History:
// it answers which commits exist and what tree each has, checks a commit
// out as a real git repository (checkout-part), and exports a commit's
// files into a plain folder (evaluate's worktrees). Bundle reading, cloning
// and exporting are trace/gitstate's.
//
// Memory stays flat however long the trajectory or large its files: Open
// reads the bundles once into a bare repository in a temp folder (packs
// and their indexes on disk, as `git clone --bare` would keep them), every
// lookup reads from there, and a checkout hard-links those objects into
// the destination instead of reading the bundles again.
//
// Diff (the export's lines added and removed, checkpoint after
// checkpoint) walks raw tree bytes in git's order and reads only the
// folders on the way to a change, keeping the trees it read for the next
// Diff (rawdiff.go); it reads objects from the packs itself, deltas
// resolved against a 16 MB LRU of bases keyed by pack offset
// (packread.go), not through go-git's storage, which hashed every object
// it resolved from a delta to key its 96 MB cache. A 100,000-part
// synthetic trajectory (18,735 checkpoints, ~5,000 files): its Parquet
// export took 132 s of wall time (load ~10-20) and 375 MB with go-git's
// DiffTree, 13.7 CPU-s and 415 MB with the raw walk through go-git's
// storage, and takes 10.4-10.7 CPU-s and 210 MB now, of which opening the
// bundle (our index-pack) is 2.4 s and the diffs about 1 s.
package githistory

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/trajlab/traj/replay/linediff"
	"github.com/trajlab/traj/trace/gitstate"
)

// History is the objects of one full bundle, or of a chain of incremental
// bundles read in order. It is safe for concurrent use. Close removes its
// temp folder.
type History struct {
	paths []string // the bundles, in order

	mu      sync.Mutex
	opened  bool
	openErr error
	refs    map[string]string
	dir     string           // temp folder holding the bare repository
	repo    *gitstate.Repo   // the bare repository (nil until opened, and once closed)
	free    []*gitstate.Repo // idle handles of it, one per concurrent caller
	closed  bool

	// diffMu serialises Diff, which keeps the trees it read for the next
	// one (diffTrees) and reads objects through its own pack reader
	// (diffPacks, opened by the first Diff).
	diffMu    sync.Mutex
	diffTrees map[plumbing.Hash]*rawTree
	diffPacks *packObjects
}

// Open reads the bundles at paths, in order: one full bundle, or a chain
// of incremental bundles each needing the ones before. The bare repository
// is made in a temp folder.
func Open(ctx context.Context, paths ...string) (*History, error) {
	h, err := OpenLazy(paths...)
	if err != nil {
		return nil, err
	}
	if err := h.open(ctx); err != nil {
		return nil, err
	}
	return h, nil
}

// OpenLazy is Open that reads the bundles only when a method first needs
// the whole history: Trees may answer from the bundles' leading commits
// alone (a cached evaluate), and a command that needs nothing more never
// pays for indexing the packs. A damaged bundle is reported by that
// first method.
func OpenLazy(paths ...string) (*History, error) {
	if len(paths) == 0 {
		return nil, errors.New("open history: no bundles given")
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("read bundle: %w", err)
		}
	}
	return &History{paths: paths}, nil
}

// Opened reports whether the bundles were read whole (OpenLazy's
// history reads them only when it must).
func (h *History) Opened() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.opened
}

// open reads the bundles into the bare repository, once.
func (h *History) open(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return errors.New("history closed")
	}
	if !h.opened {
		h.opened = true
		h.openErr = h.read(ctx)
	}
	return h.openErr
}

// read does open's work under the lock.
func (h *History) read(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "traj-history-*")
	if err != nil {
		return fmt.Errorf("open history: %w", err)
	}
	var readers []io.Reader
	for _, p := range h.paths {
		f, err := os.Open(p)
		if err != nil {
			os.RemoveAll(dir)
			return fmt.Errorf("read bundle: %w", err)
		}
		defer f.Close()
		readers = append(readers, f)
	}
	repo, err := gitstate.FromBundles(ctx, filepath.Join(dir, "repo.git"), readers...)
	if err != nil {
		os.RemoveAll(dir)
		return err
	}
	// Handles keep the packs open (they never change here): a lookup is
	// then a read, not an open, a read and a close of the pack. The first
	// one serves sequential callers (checkout-part, the tree lookups).
	first, err := gitstate.Open(ctx, repo.GitDir(), "", gitstate.Options{KeepPacksOpen: true})
	if err != nil {
		os.RemoveAll(dir)
		return fmt.Errorf("open history: %w", err)
	}
	refs := map[string]string{}
	iter, err := repo.Storage().IterReferences()
	if err != nil {
		first.Close()
		os.RemoveAll(dir)
		return fmt.Errorf("open history: %w", err)
	}
	_ = iter.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() == plumbing.HashReference {
			refs[ref.Name().String()] = ref.Hash().String()
		}
		return nil
	})
	if head, err := repo.Head(); err == nil {
		refs[plumbing.HEAD.String()] = head.String()
	}
	h.refs, h.dir, h.repo, h.free = refs, dir, repo, []*gitstate.Repo{first}
	return nil
}

// Trees returns the tree of each of commits, and why for those whose tree
// could not be read (a commit the bundles lack). It reads the commits at
// the head of each bundle's pack first (gitstate.BundleCommitTrees: each
// commit's id checked against its bytes, no index of the pack built) and
// opens the whole history only for commits not found there.
func (h *History) Trees(ctx context.Context, commits []string) (map[string]string, map[string]error) {
	trees := make(map[string]string, len(commits))
	var lead map[plumbing.Hash]plumbing.Hash
	for _, p := range h.paths {
		m, err := leadingCommits(p)
		if err != nil {
			lead = nil // the whole read says what is wrong
			break
		}
		if lead == nil {
			lead = m
		} else {
			maps.Copy(lead, m)
		}
	}
	errs := map[string]error{}
	for _, c := range commits {
		if _, done := trees[c]; done {
			continue
		}
		if plumbing.IsHash(c) {
			if t, ok := lead[plumbing.NewHash(c)]; ok {
				trees[c] = t.String()
				continue
			}
		}
		t, err := h.Tree(ctx, c)
		if err != nil {
			errs[c] = err
			continue
		}
		trees[c] = t
	}
	return trees, errs
}

// leadingCommits is gitstate.BundleCommitTrees of the bundle at path.
func leadingCommits(path string) (map[plumbing.Hash]plumbing.Hash, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return gitstate.BundleCommitTrees(f)
}

// Refs returns the bundles' references (name → commit); none when the
// bundles cannot be read.
func (h *History) Refs() map[string]string {
	if err := h.open(context.Background()); err != nil {
		return map[string]string{}
	}
	return h.refs
}

// commit reads commit under the lock.
func (h *History) commit(hash string) (*object.Commit, error) {
	if !plumbing.IsHash(hash) {
		return nil, fmt.Errorf("%q is not a commit hash", hash)
	}
	r, err := h.get(context.Background())
	if err != nil {
		return nil, err
	}
	defer h.put(r)
	return object.GetCommit(r.Storage(), plumbing.NewHash(hash))
}

// HasCommit implements replay.History.
func (h *History) HasCommit(_ context.Context, commit string) (bool, error) {
	if !plumbing.IsHash(commit) {
		return false, nil
	}
	_, err := h.commit(commit)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Tree implements replay.TreeResolver.
func (h *History) Tree(_ context.Context, commit string) (string, error) {
	c, err := h.commit(commit)
	if err != nil {
		return "", fmt.Errorf("commit %s: %w", commit, err)
	}
	return c.TreeHash.String(), nil
}

// Parents implements replay.ParentLister.
func (h *History) Parents(_ context.Context, commit string) ([]string, error) {
	c, err := h.commit(commit)
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", commit, err)
	}
	out := make([]string, len(c.ParentHashes))
	for i, p := range c.ParentHashes {
		out[i] = p.String()
	}
	return out, nil
}

// Checkout implements replay.History: dir (missing or empty) becomes a git
// repository with the bundles' objects and refs, HEAD at commit, and a
// clean status.
func (h *History) Checkout(ctx context.Context, commit, dir string) error {
	if ok, err := h.HasCommit(ctx, commit); err != nil || !ok {
		return fmt.Errorf("commit %s is not in the bundle: %w", commit, gitstate.ErrUnknownCommit)
	}
	r, err := h.get(ctx)
	if err != nil {
		return err
	}
	defer h.put(r)
	_, err = r.Clone(ctx, dir, commit)
	return err
}

// Export implements replay.History: commit's files are written into dir
// (missing or empty) without a .git.
func (h *History) Export(ctx context.Context, commit, dir string) error {
	r, err := h.get(ctx)
	if err != nil {
		return err
	}
	defer h.put(r)
	return r.Export(ctx, commit, dir)
}

// get returns a handle of the bare repository for one caller
// (gitstate.Repo is not safe for concurrent use, so each caller has its
// own).
func (h *History) get(ctx context.Context) (*gitstate.Repo, error) {
	if err := h.open(ctx); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.repo == nil {
		return nil, errors.New("history closed")
	}
	if n := len(h.free); n > 0 {
		r := h.free[n-1]
		h.free = h.free[:n-1]
		return r, nil
	}
	return gitstate.Open(ctx, h.repo.GitDir(), "", gitstate.Options{KeepPacksOpen: true})
}

func (h *History) put(r *gitstate.Repo) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.repo != nil {
		h.free = append(h.free, r)
		return
	}
	r.Close() // closed meanwhile
}

// Close removes the temp folder.
func (h *History) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for _, r := range h.free {
		r.Close()
	}
	h.repo, h.free = nil, nil
	h.diffMu.Lock()
	if h.diffPacks != nil {
		h.diffPacks.Close()
		h.diffPacks = nil
	}
	h.diffMu.Unlock()
	if h.dir == "" {
		return nil
	}
	err := os.RemoveAll(h.dir)
	h.dir = ""
	return err
}

// DiffStat counts what changed between two commits: files added, removed
// or modified, and text lines added and removed (binary and empty files
// count as changed files with no lines), the numbers `git diff --numstat
// --no-renames` gives (a renamed file is one removed and one added).
//
// The line diff is replay/linediff's, its work bounded: a file too large
// to diff within the budget (an agent's permutation of a 160,000-line
// file) counts the lines of a correct but not minimal diff, and TooLarge
// says so.
type DiffStat struct {
	Files, Added, Removed int
	TooLarge              bool
}

// Diff returns the DiffStat from commit from to commit to; from may be ""
// for the empty tree. It reads only the folders on the way to a change
// (rawdiff.go), and the trees it read are kept for the next Diff, whose
// "from" is usually this one's "to": diffing a trajectory's checkpoints in
// order reads each changed folder once.
func (h *History) Diff(ctx context.Context, from, to string) (DiffStat, error) {
	r, err := h.get(ctx)
	if err != nil {
		return DiffStat{}, err
	}
	defer h.put(r)
	h.diffMu.Lock()
	defer h.diffMu.Unlock()
	if h.diffPacks == nil {
		if h.diffPacks, err = openPackObjects(r.GitDir()); err != nil {
			return DiffStat{}, fmt.Errorf("diff %s..%s: %w", from, to, err)
		}
	}
	d := &rawDiff{ctx: ctx, st: r.Storage(), po: h.diffPacks, prev: h.diffTrees, seen: map[plumbing.Hash]*rawTree{},
		budget: linediff.DefaultBudget}
	st, err := d.diff(from, to)
	h.diffTrees = d.seen
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		h.diffTrees = nil
		return DiffStat{}, fmt.Errorf("diff %s..%s: %w", from, to, err)
	}
	return st, nil
}
