package gitstate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/trajlab/traj/trace"
	"golang.org/x/sys/unix"
)

// Checkpoint commits the workspace as "part N checkpoint" when anything
// changed since HEAD. With no change it makes no commit and returns
// Committed false and CommitAfter equal to CommitBefore. ChangedFiles are
// sorted; a rename shows as its old and new path.
func (r *Repo) Checkpoint(ctx context.Context, part int) (trace.RepoCheckpoint, error) {
	cp, err := r.checkpoint(ctx, part)
	if err != nil {
		return trace.RepoCheckpoint{}, fmt.Errorf("checkpoint part %d: %w", part, err)
	}
	return cp, nil
}

// Snapshot stores the workspace's files as Checkpoint would (the same
// capture rules, stubs and stat cache) and returns their tree hash,
// without a commit: HEAD, the index and the trace's checkpoints are left
// as they are. The tool gateway evaluates this tree when the agent runs
// the tests between two checkpoints.
func (r *Repo) Snapshot(ctx context.Context) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("snapshot workspace: %w", err)
	}
	s, err := r.scan(ctx)
	if err != nil {
		return "", fmt.Errorf("snapshot workspace: %w", err)
	}
	// flush writes the trees diff visited: diff against HEAD's tree, so
	// every tree of the snapshot that the history lacks is stored (without
	// it a file written since the last checkpoint left its folders' trees
	// unwritten and the export of the snapshot failed).
	var base plumbing.Hash
	if head, err := r.Head(); err == nil {
		c, err := object.GetCommit(r.st, head)
		if err != nil {
			return "", fmt.Errorf("snapshot workspace: read commit %s: %w", head, err)
		}
		base = c.TreeHash
	}
	if base == s.root {
		return s.root.String(), nil
	}
	if _, err := s.tb.diff("", base, s.root); err != nil {
		return "", fmt.Errorf("snapshot workspace: diff trees: %w", err)
	}
	if err := s.tb.flush(); err != nil {
		return "", fmt.Errorf("snapshot workspace: write trees: %w", err)
	}
	return s.root.String(), nil
}

// scanned is the workspace as a tree: built, not yet flushed.
type scanned struct {
	tb         *treeBuilder
	root       plumbing.Hash
	entries    []*index.Entry
	stubs      []trace.StubbedFile
	indexDirty bool
}

// scan walks the workspace under the capture rules, hashing the files the
// index's stat data does not vouch for, and builds the root tree.
func (r *Repo) scan(ctx context.Context) (scanned, error) {
	r.hashed = 0
	li := r.readIndex()
	var entries []*index.Entry
	var stubs []trace.StubbedFile
	indexDirty, seen := false, 0
	ws, err := openWorkspace(r.dir)
	if err != nil {
		return scanned{}, fmt.Errorf("scan workspace: %w", err)
	}
	defer ws.Close()
	err = r.walk(ctx, ws, func(f walkFile) error {
		mode, _ := modeOf(f.stat)
		old := li.entries[f.path]
		if old != nil {
			seen++
			if li.statClean(old, f.stat, mode) {
				entries = append(entries, old)
				return nil
			}
		}
		indexDirty = true
		r.hashed++
		h, stub, err := r.hashFile(ws, f.path, mode, f.stat.size)
		if err != nil {
			if os.IsNotExist(err) || errors.Is(err, errMoved) {
				return nil // removed or swapped for a symlink while we walked
			}
			return err
		}
		if stub != nil {
			stubs = append(stubs, *stub)
		}
		e := &index.Entry{Name: f.path, Hash: h}
		statEntry(e, f.stat, mode)
		entries = append(entries, e)
		return nil
	})
	if err != nil {
		return scanned{}, fmt.Errorf("scan workspace: %w", err)
	}
	if seen < len(li.entries) {
		indexDirty = true // files deleted since the index was written
	}
	if err := ctx.Err(); err != nil {
		return scanned{}, err
	}
	tb := newTreeBuilder(r.st, r.trees)
	root, err := tb.build(entries)
	if err != nil {
		return scanned{}, fmt.Errorf("build tree: %w", err)
	}
	r.trees = tb.next
	return scanned{tb: tb, root: root, entries: entries, stubs: stubs, indexDirty: indexDirty}, nil
}

func (r *Repo) checkpoint(ctx context.Context, part int) (trace.RepoCheckpoint, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return trace.RepoCheckpoint{}, err
	}
	target, err := r.headTarget()
	if err != nil {
		return trace.RepoCheckpoint{}, err
	}
	before, err := r.Head()
	if err != nil {
		return trace.RepoCheckpoint{}, err
	}
	beforeCommit, err := object.GetCommit(r.st, before)
	if err != nil {
		return trace.RepoCheckpoint{}, fmt.Errorf("read commit %s: %w", before, err)
	}
	sc, err := r.scan(ctx)
	if err != nil {
		return trace.RepoCheckpoint{}, err
	}
	tb, root, entries, stubs, indexDirty := sc.tb, sc.root, sc.entries, sc.stubs, sc.indexDirty
	cp := trace.RepoCheckpoint{CommitBefore: before.String(), CommitAfter: before.String(), ChangedFiles: []string{},
		AgentGitHead: agentHead(r.dir)}
	if root == beforeCommit.TreeHash {
		if indexDirty {
			if err := r.writeIndex(entries); err != nil {
				return trace.RepoCheckpoint{}, fmt.Errorf("write index: %w", err)
			}
		}
		return cp, nil
	}
	changed, err := tb.diff("", beforeCommit.TreeHash, root)
	if err != nil {
		return trace.RepoCheckpoint{}, fmt.Errorf("diff trees: %w", err)
	}
	sort.Strings(changed)
	if err := tb.flush(); err != nil {
		return trace.RepoCheckpoint{}, fmt.Errorf("write trees: %w", err)
	}
	sig := r.signature()
	after, err := writeObject(r.st, &object.Commit{
		Author: sig, Committer: sig,
		Message:      fmt.Sprintf("part %d checkpoint\n", part),
		TreeHash:     root,
		ParentHashes: []plumbing.Hash{before},
	})
	if err != nil {
		return trace.RepoCheckpoint{}, fmt.Errorf("write commit: %w", err)
	}
	// Objects are stored; only now move the ref, then the index.
	if err := ctx.Err(); err != nil {
		return trace.RepoCheckpoint{}, err
	}
	if err := r.setRef(target, after); err != nil {
		return trace.RepoCheckpoint{}, err
	}
	if err := r.writeIndex(entries); err != nil {
		return trace.RepoCheckpoint{}, fmt.Errorf("write index: %w", err)
	}
	cp.CommitAfter = after.String()
	cp.Committed = true
	cp.ChangedFiles = changed
	for _, s := range stubs {
		if _, found := slices.BinarySearch(changed, s.Path); found {
			cp.StubbedFiles = append(cp.StubbedFiles, s)
		}
	}
	return cp, nil
}

// hashFile stores the file's content (or a symlink's target) as a blob
// unless present and returns its hash. A regular file above the capture
// cap is stored as a stub (see stubText) and reported in stub. Large files
// are streamed, never held in memory.
func (r *Repo) hashFile(ws *workspace, rel string, mode filemode.FileMode, size int64) (h plumbing.Hash, stub *trace.StubbedFile, err error) {
	if mode == filemode.Symlink {
		t, err := ws.readLink(rel)
		if err != nil {
			return plumbing.ZeroHash, nil, err
		}
		h, err := r.storeBlob([]byte(filepath.ToSlash(t)))
		return h, nil, err
	}
	f, err := ws.open(rel, unix.O_RDONLY)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	defer f.Close()
	if max := r.opts.Capture.MaxFileBytes; max > 0 && size > max {
		sum := sha256.New()
		n, err := io.Copy(sum, f)
		if err != nil {
			return plumbing.ZeroHash, nil, err
		}
		stub = &trace.StubbedFile{Path: rel, Size: n, SHA256: hex.EncodeToString(sum.Sum(nil))}
		h, err := r.storeBlob([]byte(stubText(*stub, max)))
		return h, stub, err
	}
	if size <= largeObject {
		data, err := io.ReadAll(io.LimitReader(f, largeObject+1))
		if err != nil {
			return plumbing.ZeroHash, nil, err
		}
		if int64(len(data)) <= largeObject {
			h, err := r.storeBlob(data)
			return h, nil, err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return plumbing.ZeroHash, nil, err
		}
		size = largeObject + 1 // grew since the walk: stream it
	}
	h, err = r.streamBlob(f, size)
	return h, nil, err
}

// stubText is what a checkpoint records instead of a file above the cap.
func stubText(s trace.StubbedFile, max int64) string {
	return fmt.Sprintf("traj: this file was not recorded: %d bytes, above the capture cap of %d bytes\nsha256 %s\n", s.Size, max, s.SHA256)
}

// storeBlob stores data as a blob unless present.
func (r *Repo) storeBlob(data []byte) (plumbing.Hash, error) {
	h := plumbing.ComputeHash(plumbing.BlobObject, data)
	if r.st.HasEncodedObject(h) == nil {
		return h, nil
	}
	obj := r.st.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	obj.SetSize(int64(len(data)))
	w, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(data); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return r.st.SetEncodedObject(obj)
}

// streamBlob writes the first size bytes of f as a loose blob, hashing as
// it goes; a file that shrank since its stat is an error the caller retries
// with the next checkpoint.
func (r *Repo) streamBlob(f io.Reader, size int64) (plumbing.Hash, error) {
	w, header, err := r.st.ObjectStorage.LazyWriter()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if err := header(plumbing.BlobObject, size); err != nil {
		w.Close()
		return plumbing.ZeroHash, err
	}
	if _, err := io.CopyN(w, f, size); err != nil {
		w.Close()
		return plumbing.ZeroHash, fmt.Errorf("file changed while read: %w", err)
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	hw, ok := w.(interface{ Hash() plumbing.Hash })
	if !ok {
		return plumbing.ZeroHash, fmt.Errorf("object writer %T has no hash", w)
	}
	return hw.Hash(), nil
}

// treeBuilder turns sorted index entries into tree objects, kept in memory
// (decoded for diff, encoded for flush) until flush so an unchanged
// workspace writes nothing.
type treeBuilder struct {
	st    objectStore
	trees map[plumbing.Hash]*object.Tree
	objs  map[plumbing.Hash]plumbing.EncodedObject
	// changed are the new trees diff visited: every other new tree equals
	// a subtree of the parent commit and is stored already.
	changed []plumbing.Hash
	// prev is the last scan's trees by folder; next this scan's (for the
	// next one).
	prev, next map[string]cachedTree
	// encoded counts the trees built, not taken from prev (tests).
	encoded int
}

func newTreeBuilder(st objectStore, cache map[string]cachedTree) *treeBuilder {
	return &treeBuilder{st: st, trees: map[plumbing.Hash]*object.Tree{}, objs: map[plumbing.Hash]plumbing.EncodedObject{},
		prev: cache, next: make(map[string]cachedTree, len(cache))}
}

// cachedTree is a folder's tree as the last scan built it, with the index
// entries it was built from: git's cache-tree, kept in memory. Entries
// are never changed once made and a file whose stat data is clean keeps
// its entry, so the same entries (pointers) mean the same tree, and a
// scan re-encodes only the folders on the way to what changed.
type cachedTree struct {
	entries []*index.Entry // the folder's whole subtree, in index order
	subs    []string       // its folders' prefixes, cached too
	hash    plumbing.Hash
	tree    *object.Tree
	obj     plumbing.EncodedObject
}

// build returns the root tree hash of entries (in index order, so every
// folder's entries are contiguous).
func (tb *treeBuilder) build(entries []*index.Entry) (plumbing.Hash, error) {
	return tb.folder("", entries)
}

// folder builds the tree of the folder prefix ("" or "a/b/") from its
// entries, reusing the last scan's tree when they are the same.
func (tb *treeBuilder) folder(prefix string, entries []*index.Entry) (plumbing.Hash, error) {
	if c, ok := tb.prev[prefix]; ok && slices.Equal(c.entries, entries) {
		tb.reuse(prefix, c)
		return c.hash, nil
	}
	var ents []object.TreeEntry
	var subs []string
	for i := 0; i < len(entries); {
		e := entries[i]
		rest := e.Name[len(prefix):]
		slash := strings.IndexByte(rest, '/')
		if slash < 0 {
			ents = append(ents, object.TreeEntry{Name: rest, Mode: e.Mode, Hash: e.Hash})
			i++
			continue
		}
		sub := e.Name[:len(prefix)+slash+1]
		j := i + 1
		for j < len(entries) && strings.HasPrefix(entries[j].Name, sub) {
			j++
		}
		h, err := tb.folder(sub, entries[i:j])
		if err != nil {
			return plumbing.ZeroHash, err
		}
		ents = append(ents, object.TreeEntry{Name: rest[:slash], Mode: filemode.Dir, Hash: h})
		subs = append(subs, sub)
		i = j
	}
	sortTreeEntries(ents)
	tb.encoded++
	t := &object.Tree{Entries: ents}
	obj := tb.st.NewEncodedObject()
	if err := t.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	h := obj.Hash()
	tb.trees[h], tb.objs[h] = t, obj
	tb.next[prefix] = cachedTree{entries: entries, subs: subs, hash: h, tree: t, obj: obj}
	return h, nil
}

// reuse keeps the cached tree of prefix and of every folder beneath it
// for this scan (diff may descend into them, flush may store them) and
// the next.
func (tb *treeBuilder) reuse(prefix string, c cachedTree) {
	tb.trees[c.hash], tb.objs[c.hash] = c.tree, c.obj
	tb.next[prefix] = c
	for _, sub := range c.subs {
		tb.reuse(sub, tb.prev[sub])
	}
}

// sortTreeEntries orders entries as git does: a folder sorts as "name/".
func sortTreeEntries(ents []object.TreeEntry) {
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(ents, func(i, j int) bool { return key(ents[i]) < key(ents[j]) })
}

// flush stores the changed trees that the repository does not have yet.
// It needs diff to have run.
func (tb *treeBuilder) flush() error {
	for _, h := range tb.changed {
		if tb.st.HasEncodedObject(h) == nil {
			continue
		}
		if _, err := tb.st.SetEncodedObject(tb.objs[h]); err != nil {
			return err
		}
	}
	return nil
}

func (tb *treeBuilder) tree(h plumbing.Hash) (*object.Tree, error) {
	if t, ok := tb.trees[h]; ok {
		return t, nil
	}
	return object.GetTree(tb.st, h)
}

// diff lists the file paths that differ between trees a and b, descending
// only into folders whose hashes differ.
func (tb *treeBuilder) diff(prefix string, a, b plumbing.Hash) ([]string, error) {
	var out []string
	var ta, tbb []object.TreeEntry
	if !a.IsZero() {
		t, err := tb.tree(a)
		if err != nil {
			return nil, err
		}
		ta = t.Entries
	}
	if !b.IsZero() {
		tb.changed = append(tb.changed, b)
		t, err := tb.tree(b)
		if err != nil {
			return nil, err
		}
		tbb = t.Entries
	}
	byName := func(ents []object.TreeEntry) map[string]object.TreeEntry {
		m := make(map[string]object.TreeEntry, len(ents))
		for _, e := range ents {
			m[e.Name] = e
		}
		return m
	}
	ma, mb := byName(ta), byName(tbb)
	side := func(e object.TreeEntry, ok bool) (file, dir plumbing.Hash) {
		if !ok {
			return
		}
		if e.Mode == filemode.Dir {
			return plumbing.ZeroHash, e.Hash
		}
		return e.Hash, plumbing.ZeroHash
	}
	names := map[string]bool{}
	for n := range ma {
		names[n] = true
	}
	for n := range mb {
		names[n] = true
	}
	for name := range names {
		ea, okA := ma[name]
		eb, okB := mb[name]
		if okA && okB && ea.Hash == eb.Hash && ea.Mode == eb.Mode {
			continue
		}
		p := path.Join(prefix, name)
		fa, da := side(ea, okA)
		fb, db := side(eb, okB)
		if okA && okB && ea.Mode != filemode.Dir && eb.Mode != filemode.Dir {
			out = append(out, p) // content or mode changed
			continue
		}
		if !fa.IsZero() || !fb.IsZero() {
			out = append(out, p) // a file added or removed (maybe replaced by a folder)
		}
		if !da.IsZero() || !db.IsZero() {
			sub, err := tb.diff(p, da, db)
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
		}
	}
	return out, nil
}
