package gitstate

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// packItem is an object to pack and, for incremental bundles, the object
// at the same path in the prerequisite's tree: a good delta base the
// reader already has.
type packItem struct {
	hash plumbing.Hash
	base plumbing.Hash
	// path is where a tree or blob sits in its commit's tree ("" for the
	// root tree); tree says the item is a tree or blob at all.
	path string
	tree bool
	// commit says the item is a commit: packs put commits first, as git
	// does, so BundleCommitTrees reads them without the rest.
	commit bool
}

// packOrder is the order items are written in: the commits first (newest
// first, as listed), then the other objects, in order or, with reversed,
// oldest first.
func packOrder(items []packItem, reversed bool) []int {
	order := make([]int, 0, len(items))
	for i, it := range items {
		if it.commit {
			order = append(order, i)
		}
	}
	for k := range items {
		i := k
		if reversed {
			i = len(items) - 1 - k
		}
		if !items[i].commit {
			order = append(order, i)
		}
	}
	return order
}

// writeThinPack writes a pack in which an object with a base becomes a
// REF_DELTA against it when that is at most half its size. Bases are left
// out of the pack (a "thin" pack, as `git bundle create` writes for
// incremental bundles): git's index-pack --fix-thin and our reader resolve
// them from the objects the reader already has. go-git's encoder only
// deltifies against objects inside the pack, which would store every edited
// file whole in every incremental bundle.
func writeThinPack(ctx context.Context, st storer.EncodedObjectStorer, w io.Writer, items []packItem) error {
	h := sha1.New()
	mw := io.MultiWriter(w, h)
	if err := writePackHeader(mw, len(items)); err != nil {
		return err
	}
	zw := zlib.NewWriter(nil)
	for _, i := range packOrder(items, false) {
		it := items[i]
		// A large object is streamed whole, as in full packs: never a
		// delta, so readers never build one this large (maxDeltaObject).
		typ, data, streamed, err := packObject(ctx, st, mw, zw, it.hash)
		if err != nil {
			return err
		}
		if streamed {
			continue
		}
		if delta := thinDelta(st, it, typ, data); delta != nil {
			if err := writeEntryHeader(mw, plumbing.REFDeltaObject, len(delta)); err != nil {
				return err
			}
			if _, err := mw.Write(it.base[:]); err != nil {
				return err
			}
			typ, data = plumbing.REFDeltaObject, delta
		} else if err := writeEntryHeader(mw, typ, len(data)); err != nil {
			return err
		}
		zw.Reset(mw)
		if _, err := zw.Write(data); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
	}
	_, err := w.Write(h.Sum(nil))
	return err
}

// thinDelta returns the delta of data against the item's base, or nil when
// there is no usable base or the delta does not pay.
func thinDelta(st storer.EncodedObjectStorer, it packItem, typ plumbing.ObjectType, data []byte) []byte {
	if it.base.IsZero() || it.base == it.hash || len(data) < 64 {
		return nil
	}
	base, err := st.EncodedObject(typ, it.base)
	if err != nil || base.Size() > largeObject {
		return nil
	}
	src, err := objectBytes(base)
	if err != nil {
		return nil
	}
	delta := packfile.DiffDelta(src, data)
	if len(delta) > len(data)/2 {
		return nil
	}
	// A wrong delta would corrupt history silently: check it applies.
	if got, err := packfile.PatchDelta(src, delta); err != nil || !bytes.Equal(got, data) {
		return nil
	}
	return delta
}

func objectBytes(obj plumbing.EncodedObject) ([]byte, error) {
	rd, err := obj.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(rd)
}

// writeEntryHeader writes a pack entry's type and size varint.
func writeEntryHeader(w io.Writer, t plumbing.ObjectType, size int) error {
	var buf [16]byte
	b := byte(t)<<4 | byte(size&0x0f)
	size >>= 4
	n := 0
	for size > 0 {
		buf[n] = b | 0x80
		n++
		b = byte(size & 0x7f)
		size >>= 7
	}
	buf[n] = b
	_, err := w.Write(buf[:n+1])
	return err
}

// maxDeltaDepth bounds delta chains in full packs, as git's default
// pack.depth does, so reading a version never resolves long chains.
const maxDeltaDepth = 50

// writeFullPack writes a self-contained pack of items (newest commit
// first, as bundleObjects lists them). The commits come first; the other
// objects are written oldest first and each tree or blob is stored as an OFS_DELTA against the previous
// version at the same path when that pays: the way git groups deltas by
// path, which go-git's encoder (sorting by type and size only) cannot, and
// why its packs were ~2.5x git's.
func writeFullPack(ctx context.Context, st storer.EncodedObjectStorer, w io.Writer, items []packItem) error {
	h := sha1.New()
	cw := &countWriter{w: io.MultiWriter(w, h)}
	if err := writePackHeader(cw, len(items)); err != nil {
		return err
	}
	// The previous version's bytes are read again when needed, not kept:
	// memory stays flat however large the workspace.
	type version struct {
		offset int64
		depth  int
		hash   plumbing.Hash
	}
	last := map[string]*version{} // path -> the version written last
	zw := zlib.NewWriter(nil)
	for _, i := range packOrder(items, true) {
		it := items[i]
		offset := cw.n
		// A large object is streamed whole, never held: a delta would
		// need both versions in memory.
		typ, data, streamed, err := packObject(ctx, st, cw, zw, it.hash)
		if err != nil {
			return err
		}
		if streamed {
			continue
		}
		depth := 0
		key := typ.String() + "\x00" + it.path
		payload := data
		prev := last[key]
		if it.tree && prev != nil && prev.depth < maxDeltaDepth && len(data) >= 64 && len(data) <= largeObject {
			base, err := st.EncodedObject(typ, prev.hash)
			if err != nil {
				return fmt.Errorf("read %s: %w", prev.hash, err)
			}
			src, err := objectBytes(base)
			if err != nil {
				return fmt.Errorf("read %s: %w", prev.hash, err)
			}
			if delta := packfile.DiffDelta(src, data); len(delta) <= len(data)/2 {
				if err := writeEntryHeader(cw, plumbing.OFSDeltaObject, len(delta)); err != nil {
					return err
				}
				if _, err := cw.Write(ofsDeltaOffset(offset - prev.offset)); err != nil {
					return err
				}
				payload, depth = delta, prev.depth+1
			}
		}
		if depth == 0 {
			if err := writeEntryHeader(cw, typ, len(data)); err != nil {
				return err
			}
		}
		zw.Reset(cw)
		if _, err := zw.Write(payload); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		if it.tree && len(data) <= largeObject {
			last[key] = &version{offset: offset, depth: depth, hash: it.hash}
		}
	}
	_, err := w.Write(h.Sum(nil))
	return err
}

// writePackHeader writes a version 2 pack header for n objects.
func writePackHeader(w io.Writer, n int) error {
	var hdr [12]byte
	copy(hdr[:], "PACK")
	binary.BigEndian.PutUint32(hdr[4:], 2)
	binary.BigEndian.PutUint32(hdr[8:], uint32(n))
	_, err := w.Write(hdr[:])
	return err
}

// packObject reads object h for a pack: one above largeObject is written
// to w as a whole entry right away (streamed, never held; streamed is
// true), any other is returned with its content for the caller to write,
// whole or as a delta.
func packObject(ctx context.Context, st storer.EncodedObjectStorer, w io.Writer, zw *zlib.Writer, h plumbing.Hash) (typ plumbing.ObjectType, data []byte, streamed bool, err error) {
	if err := ctx.Err(); err != nil {
		return 0, nil, false, err
	}
	obj, err := st.EncodedObject(plumbing.AnyObject, h)
	if err != nil {
		return 0, nil, false, fmt.Errorf("read %s: %w", h, err)
	}
	if obj.Size() > largeObject {
		if err := streamEntry(w, zw, obj); err != nil {
			return 0, nil, false, fmt.Errorf("write %s: %w", h, err)
		}
		return obj.Type(), nil, true, nil
	}
	data, err = objectBytes(obj)
	if err != nil {
		return 0, nil, false, fmt.Errorf("read %s: %w", h, err)
	}
	return obj.Type(), data, false, nil
}

// streamEntry writes obj as a whole pack entry, copying its content
// through zlib without holding it.
func streamEntry(w io.Writer, zw *zlib.Writer, obj plumbing.EncodedObject) error {
	if err := writeEntryHeader(w, obj.Type(), int(obj.Size())); err != nil {
		return err
	}
	rd, err := obj.Reader()
	if err != nil {
		return err
	}
	defer rd.Close()
	zw.Reset(w)
	n, err := io.Copy(zw, rd)
	if err != nil {
		return err
	}
	if n != obj.Size() {
		return fmt.Errorf("%d bytes, its header says %d", n, obj.Size())
	}
	return zw.Close()
}

// ofsDeltaOffset encodes the distance back to an OFS_DELTA's base as git
// does (a big-endian base-128 number where each continuation adds one).
func ofsDeltaOffset(n int64) []byte {
	var buf [16]byte
	i := len(buf) - 1
	buf[i] = byte(n & 0x7f)
	for n >>= 7; n > 0; n >>= 7 {
		n--
		i--
		buf[i] = 0x80 | byte(n&0x7f)
	}
	return buf[i:]
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
