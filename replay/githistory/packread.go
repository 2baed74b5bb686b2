package githistory

import (
	"bufio"
	"compress/zlib"
	"container/list"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
)

// packObjects reads objects from the packs of a bare repository for
// Diff, resolving deltas against the bases it keeps (an LRU by pack and
// offset, packCacheBytes at most). go-git's object storage hashed every
// object it resolved from a delta to key its cache (SHA-1 of each
// version of a 135 KB folder tree, 18 % of a 100,000-part export) and
// kept 96 MB of them; here the pack's own offsets are the keys. Objects
// it does not find (loose objects: an incremental bundle's) are read by
// the caller through go-git.
type packObjects struct {
	packs []*packFile
	lru   *list.List // of *cachedObject, most recent first
	byKey map[objectKey]*list.Element
	held  int
	limit int // packCacheBytes
	zr    io.ReadCloser
	br    *bufio.Reader
}

type packFile struct {
	f   *os.File
	idx *idxfile.MemoryIndex
}

type objectKey struct {
	pack   int
	offset int64
}

type cachedObject struct {
	key  objectKey
	typ  plumbing.ObjectType
	data []byte
}

// packCacheBytes bounds the resolved objects packObjects keeps as delta
// bases; an object above packCacheObject is never kept (traj writes those
// whole, never as deltas).
const (
	packCacheBytes  = 16 << 20
	packCacheObject = 4 << 20
	// maxPackObject refuses an object whose declared size is absurd.
	maxPackObject = 1 << 30
)

// openPackObjects opens every pack of the bare repository at gitDir.
func openPackObjects(gitDir string) (*packObjects, error) {
	idxs, err := filepath.Glob(filepath.Join(gitDir, "objects", "pack", "*.idx"))
	if err != nil {
		return nil, err
	}
	po := &packObjects{lru: list.New(), byKey: map[objectKey]*list.Element{}, limit: packCacheBytes}
	for _, ip := range idxs {
		idx := idxfile.NewMemoryIndex()
		f, err := os.Open(ip)
		if err != nil {
			po.Close()
			return nil, err
		}
		err = idxfile.NewDecoder(bufio.NewReader(f)).Decode(idx)
		f.Close()
		if err != nil {
			po.Close()
			return nil, fmt.Errorf("read %s: %w", filepath.Base(ip), err)
		}
		pf, err := os.Open(ip[:len(ip)-len(".idx")] + ".pack")
		if err != nil {
			po.Close()
			return nil, err
		}
		po.packs = append(po.packs, &packFile{f: pf, idx: idx})
	}
	return po, nil
}

// Close closes the packs.
func (po *packObjects) Close() {
	for _, p := range po.packs {
		p.f.Close()
	}
	po.packs, po.byKey, po.held = nil, nil, 0
	po.lru.Init()
}

// read returns object h's type and bytes (not to be changed: they may be
// a cached delta base); found is false when no pack holds it.
func (po *packObjects) read(h plumbing.Hash) (typ plumbing.ObjectType, data []byte, found bool, err error) {
	for i, p := range po.packs {
		off, err := p.idx.FindOffset(h)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			continue
		}
		if err != nil {
			return 0, nil, false, err
		}
		typ, data, err := po.at(i, off, 0)
		return typ, data, true, err
	}
	return 0, nil, false, nil
}

// at resolves the object at offset off of pack i.
func (po *packObjects) at(i int, off int64, depth int) (plumbing.ObjectType, []byte, error) {
	key := objectKey{i, off}
	if e := po.byKey[key]; e != nil {
		po.lru.MoveToFront(e)
		c := e.Value.(*cachedObject)
		return c.typ, c.data, nil
	}
	if depth > 1000 {
		return 0, nil, fmt.Errorf("pack offset %d: delta chain too deep", off)
	}
	p := po.packs[i]
	var hdr [64]byte
	n, err := p.f.ReadAt(hdr[:], off)
	if n == 0 {
		return 0, nil, fmt.Errorf("pack offset %d: %w", off, err)
	}
	b := hdr[:n]
	typ := plumbing.ObjectType(b[0] >> 4 & 7)
	size := int64(b[0] & 15)
	pos, shift := 1, 4
	for c := b[0]; c&0x80 != 0; shift += 7 {
		if pos >= len(b) || shift > 56 {
			return 0, nil, fmt.Errorf("pack offset %d: bad entry header", off)
		}
		c = b[pos]
		pos++
		size |= int64(c&0x7f) << shift
	}
	if size > maxPackObject {
		return 0, nil, fmt.Errorf("pack offset %d: object of %d bytes", off, size)
	}
	var baseTyp plumbing.ObjectType
	var base []byte
	switch typ {
	case plumbing.OFSDeltaObject:
		if pos >= len(b) {
			return 0, nil, fmt.Errorf("pack offset %d: bad delta offset", off)
		}
		c := b[pos]
		pos++
		rel := int64(c & 0x7f)
		for c&0x80 != 0 {
			if pos >= len(b) || rel > 1<<55 {
				return 0, nil, fmt.Errorf("pack offset %d: bad delta offset", off)
			}
			c = b[pos]
			pos++
			rel = (rel+1)<<7 | int64(c&0x7f)
		}
		if rel <= 0 || rel > off {
			return 0, nil, fmt.Errorf("pack offset %d: delta base outside the pack", off)
		}
		if baseTyp, base, err = po.at(i, off-rel, depth+1); err != nil {
			return 0, nil, err
		}
	case plumbing.REFDeltaObject:
		if pos+20 > len(b) {
			return 0, nil, fmt.Errorf("pack offset %d: bad delta base", off)
		}
		var bh plumbing.Hash
		copy(bh[:], b[pos:pos+20])
		pos += 20
		boff, err := p.idx.FindOffset(bh)
		if err != nil {
			return 0, nil, fmt.Errorf("pack offset %d: delta base %s: %w", off, bh, err)
		}
		if baseTyp, base, err = po.at(i, boff, depth+1); err != nil {
			return 0, nil, err
		}
	case plumbing.CommitObject, plumbing.TreeObject, plumbing.BlobObject, plumbing.TagObject:
	default:
		return 0, nil, fmt.Errorf("pack offset %d: object type %d", off, typ)
	}
	raw, err := po.inflate(p.f, off+int64(pos), size)
	if err != nil {
		return 0, nil, fmt.Errorf("pack offset %d: %w", off, err)
	}
	data := raw
	if base != nil {
		if data, err = patchDelta(base, raw); err != nil {
			return 0, nil, fmt.Errorf("pack offset %d: %w", off, err)
		}
		typ = baseTyp
	}
	po.keep(&cachedObject{key: key, typ: typ, data: data})
	return typ, data, nil
}

// inflate reads size bytes of zlib data starting at off.
func (po *packObjects) inflate(f *os.File, off, size int64) ([]byte, error) {
	sr := io.NewSectionReader(f, off, 1<<62)
	if po.br == nil {
		po.br = bufio.NewReaderSize(sr, 32<<10)
	} else {
		po.br.Reset(sr)
	}
	var err error
	if po.zr == nil {
		po.zr, err = zlib.NewReader(po.br)
	} else {
		err = po.zr.(zlib.Resetter).Reset(po.br, nil)
	}
	if err != nil {
		return nil, err
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(po.zr, data); err != nil {
		return nil, err
	}
	return data, nil
}

// keep adds c to the cache, dropping the least recently used beyond
// its limit.
func (po *packObjects) keep(c *cachedObject) {
	if len(c.data) > packCacheObject {
		return
	}
	po.byKey[c.key] = po.lru.PushFront(c)
	po.held += len(c.data)
	for po.held > po.limit {
		e := po.lru.Back()
		old := e.Value.(*cachedObject)
		po.lru.Remove(e)
		delete(po.byKey, old.key)
		po.held -= len(old.data)
	}
}

// patchDelta applies a git delta to base into a slice of exactly the size
// the delta declares (go-git's PatchDelta grew a buffer, leaving up to
// twice the bytes behind each cached tree).
func patchDelta(base, delta []byte) ([]byte, error) {
	bad := errors.New("malformed delta")
	size := func() (int, bool) {
		n, shift := 0, 0
		for len(delta) > 0 && shift < 63 {
			c := delta[0]
			delta = delta[1:]
			n |= int(c&0x7f) << shift
			if c&0x80 == 0 {
				return n, true
			}
			shift += 7
		}
		return 0, false
	}
	srcSize, ok1 := size()
	dstSize, ok2 := size()
	if !ok1 || !ok2 || srcSize != len(base) || dstSize > maxPackObject {
		return nil, bad
	}
	out := make([]byte, 0, dstSize)
	for len(delta) > 0 {
		op := delta[0]
		delta = delta[1:]
		switch {
		case op&0x80 != 0:
			var off, n int
			for i := range 7 {
				if op&(1<<i) == 0 {
					continue
				}
				if len(delta) == 0 {
					return nil, bad
				}
				if i < 4 {
					off |= int(delta[0]) << (8 * i)
				} else {
					n |= int(delta[0]) << (8 * (i - 4))
				}
				delta = delta[1:]
			}
			if n == 0 {
				n = 0x10000
			}
			if off+n > len(base) || len(out)+n > dstSize {
				return nil, bad
			}
			out = append(out, base[off:off+n]...)
		case op != 0:
			n := int(op)
			if n > len(delta) || len(out)+n > dstSize {
				return nil, bad
			}
			out = append(out, delta[:n]...)
			delta = delta[n:]
		default:
			return nil, bad
		}
	}
	if len(out) != dstSize {
		return nil, bad
	}
	return out, nil
}
