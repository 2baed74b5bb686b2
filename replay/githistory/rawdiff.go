package githistory

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"unsafe"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/trajlab/traj/replay/linediff"
)

// The diff of two commits reads tree objects as bytes and walks both
// sides' entries in git's order, as git does: a folder whose tree hash is
// the same on both sides is skipped unread, so the work is the width of
// the folders on the way to a change, not the tree. go-git's
// DiffTree decoded each changed folder into an object per entry (a
// string per name) and walked it through merkletrie noders: at 100,000
// parts, ~5,000 files and 18,735 checkpoints, that was 95 % of a Parquet
// export's time.
//
// A History keeps the trees the last Diff read (diffTrees): the export
// diffs checkpoint after checkpoint, so the "from" side of one is the "to"
// side of the one before and is not read or parsed again.

// Git's file modes in a tree entry.
const (
	modeTree    = 0o40000
	modeGitlink = 0o160000
)

// rawTree is a tree object's bytes and the offsets of its entries.
type rawTree struct {
	data []byte
	ents []rawEntry
}

// rawEntry is one entry of a rawTree: data[name:hash-1] is its name,
// data[hash:hash+20] its object id.
type rawEntry struct {
	name, hash uint32
	mode       uint32
}

func (t *rawTree) name(e rawEntry) []byte { return t.data[e.name : e.hash-1] }

func (t *rawTree) id(e rawEntry) plumbing.Hash {
	var h plumbing.Hash
	copy(h[:], t.data[e.hash:e.hash+20])
	return h
}

// parseTree finds the entries of a tree object's bytes ("MODE NAME\0" and
// 20 bytes of id, repeated) without copying them.
func parseTree(data []byte) (*rawTree, error) {
	if len(data) >= 1<<32 {
		return nil, errors.New("tree object too large")
	}
	t := &rawTree{data: data, ents: make([]rawEntry, 0, len(data)/40)}
	for i := 0; i < len(data); {
		sp := bytes.IndexByte(data[i:], ' ')
		if sp <= 0 || sp > 7 {
			return nil, errors.New("malformed tree entry mode")
		}
		var mode uint32
		for _, c := range data[i : i+sp] {
			if c < '0' || c > '7' {
				return nil, errors.New("malformed tree entry mode")
			}
			mode = mode<<3 | uint32(c-'0')
		}
		name := i + sp + 1
		nul := bytes.IndexByte(data[name:], 0)
		if nul <= 0 || name+nul+21 > len(data) {
			return nil, errors.New("malformed tree entry")
		}
		hash := name + nul + 1
		t.ents = append(t.ents, rawEntry{name: uint32(name), hash: uint32(hash), mode: mode})
		i = hash + 20
	}
	return t, nil
}

// compareEntries orders two entries as git sorts a tree: by name, a
// folder's name compared as if it ended in '/'.
func compareEntries(a []byte, aDir bool, b []byte, bDir bool) int {
	n := min(len(a), len(b))
	if c := bytes.Compare(a[:n], b[:n]); c != 0 {
		return c
	}
	next := func(s []byte, dir bool) byte {
		if len(s) > n {
			return s[n]
		}
		if dir {
			return '/'
		}
		return 0
	}
	ca, cb := next(a, aDir), next(b, bDir)
	switch {
	case ca < cb:
		return -1
	case ca > cb:
		return 1
	}
	return 0
}

// rawDiff is one Diff's walk: its object reader, the trees it read (kept
// for the next Diff) and its tally.
type rawDiff struct {
	ctx    context.Context
	st     storer.EncodedObjectStorer
	po     *packObjects               // nil: every object through st
	prev   map[plumbing.Hash]*rawTree // the trees the last Diff read
	seen   map[plumbing.Hash]*rawTree // the trees this one read
	budget int
	tally  DiffStat
}

// readObject returns an object's bytes, not to be changed: from the packs
// (packObjects) when they hold it, else through go-git (loose objects).
func (d *rawDiff) readObject(typ plumbing.ObjectType, h plumbing.Hash) ([]byte, error) {
	if d.po != nil {
		t, data, found, err := d.po.read(h)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", typ, h, err)
		}
		if found {
			if t != typ {
				return nil, fmt.Errorf("%s %s: is a %s", typ, h, t)
			}
			return data, nil
		}
	}
	obj, err := d.st.EncodedObject(typ, h)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", typ, h, err)
	}
	rd, err := obj.Reader()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", typ, h, err)
	}
	defer rd.Close()
	buf := make([]byte, obj.Size())
	if _, err := io.ReadFull(rd, buf); err != nil {
		return nil, fmt.Errorf("%s %s: %w", typ, h, err)
	}
	return buf, nil
}

// tree returns the parsed tree h ("" hash: the empty tree).
func (d *rawDiff) tree(h plumbing.Hash) (*rawTree, error) {
	if h.IsZero() {
		return &rawTree{}, nil
	}
	if t := d.seen[h]; t != nil {
		return t, nil
	}
	t := d.prev[h]
	if t == nil {
		data, err := d.readObject(plumbing.TreeObject, h)
		if err != nil {
			return nil, err
		}
		if t, err = parseTree(data); err != nil {
			return nil, fmt.Errorf("tree %s: %w", h, err)
		}
	}
	d.seen[h] = t
	return t, nil
}

// commitTree returns the tree of a commit ("": the empty tree).
func (d *rawDiff) commitTree(commit string) (plumbing.Hash, error) {
	if commit == "" {
		return plumbing.ZeroHash, nil
	}
	if !plumbing.IsHash(commit) {
		return plumbing.ZeroHash, fmt.Errorf("%q is not a commit hash", commit)
	}
	data, err := d.readObject(plumbing.CommitObject, plumbing.NewHash(commit))
	if err != nil {
		return plumbing.ZeroHash, err
	}
	hex, ok := bytes.CutPrefix(data, []byte("tree "))
	if !ok || len(hex) < 40 || !plumbing.IsHash(string(hex[:40])) {
		return plumbing.ZeroHash, fmt.Errorf("commit %s: no tree", commit)
	}
	return plumbing.NewHash(string(hex[:40])), nil
}

// diff counts what changed from commit from to commit to.
func (d *rawDiff) diff(from, to string) (DiffStat, error) {
	a, err := d.commitTree(from)
	if err != nil {
		return DiffStat{}, err
	}
	b, err := d.commitTree(to)
	if err != nil {
		return DiffStat{}, err
	}
	if err := d.trees("", a, b); err != nil {
		return DiffStat{}, err
	}
	return d.tally, nil
}

// trees walks two trees side by side (either may be the zero hash for
// "absent") and counts the files that differ beneath path.
func (d *rawDiff) trees(path string, a, b plumbing.Hash) error {
	if a == b {
		return nil
	}
	if err := d.ctx.Err(); err != nil {
		return err
	}
	ta, err := d.tree(a)
	if err != nil {
		return err
	}
	tb, err := d.tree(b)
	if err != nil {
		return err
	}
	i, j := 0, 0
	for i < len(ta.ents) || j < len(tb.ents) {
		var c int
		switch {
		case i == len(ta.ents):
			c = 1
		case j == len(tb.ents):
			c = -1
		default:
			ea, eb := ta.ents[i], tb.ents[j]
			c = compareEntries(ta.name(ea), ea.mode == modeTree, tb.name(eb), eb.mode == modeTree)
		}
		switch {
		case c < 0:
			err = d.entry(path, ta, ta.ents[i], nil, rawEntry{})
			i++
		case c > 0:
			err = d.entry(path, nil, rawEntry{}, tb, tb.ents[j])
			j++
		default:
			ea, eb := ta.ents[i], tb.ents[j]
			if ea.mode != eb.mode || !bytes.Equal(ta.data[ea.hash:ea.hash+20], tb.data[eb.hash:eb.hash+20]) {
				err = d.entry(path, ta, ea, tb, eb)
			}
			i, j = i+1, j+1
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// entry counts one entry that differs: a (from ta) removed, b (from tb)
// added, or both (a modified file or folder). A folder on one side is
// walked against nothing.
func (d *rawDiff) entry(path string, ta *rawTree, a rawEntry, tb *rawTree, b rawEntry) error {
	var name []byte
	var ha, hb plumbing.Hash
	var aBlob, bBlob bool
	if ta != nil {
		name, ha, aBlob = ta.name(a), ta.id(a), a.mode != modeTree && a.mode != modeGitlink
	}
	if tb != nil {
		name, hb, bBlob = tb.name(b), tb.id(b), b.mode != modeTree && b.mode != modeGitlink
	}
	if ta != nil && a.mode == modeTree || tb != nil && b.mode == modeTree {
		sub := path + string(name) + "/"
		var fa, fb plumbing.Hash
		if ta != nil && a.mode == modeTree {
			fa = ha
		}
		if tb != nil && b.mode == modeTree {
			fb = hb
		}
		return d.trees(sub, fa, fb)
	}
	d.tally.Files++
	if ha == hb {
		return nil // the mode alone changed
	}
	var text [2]string
	for i, blob := range []struct {
		is bool
		h  plumbing.Hash
	}{{aBlob, ha}, {bBlob, hb}} {
		if !blob.is {
			continue
		}
		data, err := d.readObject(plumbing.BlobObject, blob.h)
		if err != nil {
			return fmt.Errorf("%s%s: %w", path, name, err)
		}
		if isBinary(data) {
			return nil // binary files count no lines
		}
		text[i] = unsafe.String(unsafe.SliceData(data), len(data))
	}
	r := linediff.Lines(d.ctx, text[0], text[1], d.budget)
	d.budget = max(d.budget-r.Work, linediff.DefaultBudget/50)
	d.tally.Added += r.Added
	d.tally.Removed += r.Removed
	d.tally.TooLarge = d.tally.TooLarge || r.TooLarge
	return nil
}

// isBinary is go-git's (and git's) rule: a NUL byte in the first 8,000.
func isBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0
}
