package gitstate

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"
)

// What `git index-pack` does, in memory that does not grow with the
// objects' sizes and grows by under 100 bytes an object with their number
// (an entry, and a child link for each delta). go-git's packfile.Parser
// took ~560 bytes an object, its delta results and a second index in
// idxfile.Writer: 140 MB of heap for the 250,000 objects of a 50,000-part
// trajectory (checkout-part at 236 MB RSS; 70 MB with this). Here:
//
//  1. scan reads the pack once in order: each entry's offset, CRC-32 and
//     declared size, the SHA-1 of every whole object (streamed, so a blob
//     of any size costs a buffer), and which entries are deltas against
//     which base (by offset or by hash);
//  2. resolve visits each base's delta children depth first, holding a
//     base only while some child still needs it, and hashes each result;
//  3. writeIdx writes a version 2 .idx from the entries sorted by hash.
//
// A delta is built in memory, so its result, its base and the delta itself
// are each refused above maxDeltaObject before anything is allocated, with
// an error naming the object and the size it declares: traj writes objects
// above largeObject whole (never as deltas), so its bundles never come
// near it, while a compression bomb dressed up as a delta cannot exhaust
// memory.
const (
	// maxDeltaObject bounds a delta's result, its base and its instructions.
	maxDeltaObject = 64 << 20
	// heldBudget bounds the delta bases kept while their children are
	// resolved (a base with many delta children, several levels deep);
	// beyond it the oldest are dropped and rebuilt from their chain when
	// needed again.
	heldBudget = 64 << 20
)

// packEntry is one object of the pack being indexed.
type packEntry struct {
	hash    plumbing.Hash // known for whole objects after scan, for deltas after resolve
	offset  int64
	size    int64 // declared inflated size (of the instructions, for a delta)
	crc     uint32
	hdrLen  uint8 // bytes from offset to the zlib stream
	typ     plumbing.ObjectType
	isDelta bool
	done    bool // hash known
}

// ofsKid is an OFS_DELTA entry (kid) and the offset of its base.
type ofsKid struct {
	base int64
	kid  int32
}

// refKid is a REF_DELTA entry (kid) and the hash of its base.
type refKid struct {
	base plumbing.Hash
	kid  int32
}

// packIndex is a pack on disk being indexed.
type packIndex struct {
	ctx     context.Context
	f       *os.File
	size    int64 // file size, trailer included
	entries []packEntry
	ofsKids []ofsKid
	refKids []refKid
	// external returns a base the pack leaves out (a thin pack's); nil for
	// a pack that must be self-contained.
	external func(plumbing.Hash) (plumbing.ObjectType, []byte, error)
	// budget is heldBudget (tests lower it to exercise rebuilding).
	budget int
	// loose, when set, receives every object as a loose object (a thin
	// pack's objects are stored so, not kept as a pack).
	loose *dotgit.DotGit

	zr  io.ReadCloser // reused zlib reader
	buf *bufio.Reader // reused for random reads
}

func newPackIndex(ctx context.Context, f *os.File) (*packIndex, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return &packIndex{ctx: ctx, f: f, size: fi.Size(), budget: heldBudget}, nil
}

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorruptBundle, fmt.Sprintf(format, args...))
}

// scan reads the whole pack in order (pass 1).
func (p *packIndex) scan() error {
	if _, err := p.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	pr := &packReader{r: p.f, buf: make([]byte, 64<<10)}
	var hdr [12]byte
	if _, err := io.ReadFull(pr, hdr[:]); err != nil {
		return corruptf("pack header: %v", err)
	}
	if string(hdr[:4]) != "PACK" {
		return corruptf("pack signature %q", hdr[:4])
	}
	if v := binary.BigEndian.Uint32(hdr[4:]); v != 2 && v != 3 {
		return corruptf("pack version %d", v)
	}
	n := int64(binary.BigEndian.Uint32(hdr[8:]))
	// The count is the pack's word: allocate for it only as far as the
	// file could hold that many entries (each takes at least 8 bytes).
	p.entries = make([]packEntry, 0, min(n, p.size/8))
	for i := int64(0); i < n; i++ {
		if i%1024 == 0 {
			if err := p.ctx.Err(); err != nil {
				return err
			}
		}
		if err := p.scanEntry(pr, int32(i)); err != nil {
			return err
		}
	}
	if end := pr.offset(); end != p.size-sha1.Size {
		return corruptf("%d bytes between the last of %d objects and the checksum", p.size-sha1.Size-end, n)
	}
	return nil
}

func (p *packIndex) scanEntry(pr *packReader, idx int32) error {
	e := packEntry{offset: pr.offset()}
	what := "" // names a delta in errors
	pr.startCRC()
	c, err := pr.ReadByte()
	if err != nil {
		return corruptf("object %d at offset %d: %v", idx+1, e.offset, err)
	}
	e.typ = plumbing.ObjectType((c >> 4) & 7)
	e.size = int64(c & 0x0f)
	for shift := 4; c&0x80 != 0; shift += 7 {
		if c, err = pr.ReadByte(); err != nil || shift > 56 {
			return corruptf("object at offset %d: bad size", e.offset)
		}
		e.size |= int64(c&0x7f) << shift
	}
	switch e.typ {
	case plumbing.CommitObject, plumbing.TreeObject, plumbing.BlobObject, plumbing.TagObject:
	case plumbing.OFSDeltaObject:
		c, err := pr.ReadByte()
		if err != nil {
			return corruptf("object at offset %d: bad delta offset", e.offset)
		}
		dist := int64(c & 0x7f)
		for c&0x80 != 0 {
			if c, err = pr.ReadByte(); err != nil || dist >= 1<<55 {
				return corruptf("object at offset %d: bad delta offset", e.offset)
			}
			dist = (dist+1)<<7 | int64(c&0x7f)
		}
		if dist <= 0 || dist > e.offset {
			return corruptf("object at offset %d: delta base offset %d outside the pack", e.offset, e.offset-dist)
		}
		p.ofsKids = append(p.ofsKids, ofsKid{base: e.offset - dist, kid: idx})
		what = fmt.Sprintf("delta at offset %d (base at offset %d)", e.offset, e.offset-dist)
		e.isDelta = true
	case plumbing.REFDeltaObject:
		var h plumbing.Hash
		if _, err := io.ReadFull(pr, h[:]); err != nil {
			return corruptf("object at offset %d: bad delta base", e.offset)
		}
		p.refKids = append(p.refKids, refKid{base: h, kid: idx})
		what = fmt.Sprintf("delta at offset %d (base %s)", e.offset, h)
		e.isDelta = true
	default:
		return corruptf("object at offset %d: type %d", e.offset, e.typ)
	}
	e.hdrLen = uint8(pr.offset() - e.offset)
	if err := p.resetZlib(pr); err != nil {
		return corruptf("object at offset %d: %v", e.offset, err)
	}
	if e.isDelta {
		if e.size > maxDeltaObject {
			return fmt.Errorf("%w: %s: %d bytes of instructions, above the %d MiB limit for delta objects", ErrCorruptBundle, what, e.size, maxDeltaObject>>20)
		}
		// The instructions start with the base's and the result's sizes:
		// refuse a huge result before anyone builds it.
		var head [20]byte
		got, err := io.ReadFull(p.zr, head[:min(e.size, int64(len(head)))])
		if err != nil {
			return corruptf("delta at offset %d: %v", e.offset, err)
		}
		baseSize, rest, ok := leb128(head[:got])
		resultSize, _, ok2 := leb128(rest)
		if !ok || !ok2 {
			return corruptf("delta at offset %d: bad size header", e.offset)
		}
		if baseSize > maxDeltaObject || resultSize > maxDeltaObject {
			return fmt.Errorf("%w: %s declares a %d-byte result from a %d-byte base, above the %d MiB limit for delta objects", ErrCorruptBundle, what, resultSize, baseSize, maxDeltaObject>>20)
		}
		if err := discardExactly(p.zr, e.size-int64(got)); err != nil {
			return corruptf("delta at offset %d: %v", e.offset, err)
		}
	} else {
		h := plumbing.NewHasher(e.typ, e.size)
		var w io.Writer = &h
		var ow *dotgit.ObjectWriter
		if p.loose != nil {
			var err error
			if ow, err = p.loose.NewObject(); err != nil {
				return err
			}
			defer func() {
				if ow != nil {
					ow.Close()
				}
			}()
			if err := ow.WriteHeader(e.typ, e.size); err != nil {
				return err
			}
			w = io.MultiWriter(&h, ow)
		}
		if err := copyExactly(w, p.zr, e.size); err != nil {
			return corruptf("object at offset %d: %v", e.offset, err)
		}
		e.hash, e.done = h.Sum(), true
		if ow != nil {
			err := ow.Close()
			ow = nil
			if err != nil {
				return fmt.Errorf("store %s: %w", e.hash, err)
			}
		}
	}
	e.crc = pr.sumCRC()
	p.entries = append(p.entries, e)
	return nil
}

func (p *packIndex) resetZlib(r io.Reader) error {
	if p.zr == nil {
		zr, err := zlib.NewReader(r)
		p.zr = zr
		return err
	}
	return p.zr.(zlib.Resetter).Reset(r, nil)
}

// copyExactly copies the n bytes of zr's stream into w and checks that the
// stream ends there (so the data after it starts where the pack says).
func copyExactly(w io.Writer, zr io.Reader, n int64) error {
	got, err := io.CopyN(w, zr, n)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%d bytes, its header says %d", got, n)
		}
		return err
	}
	var one [1]byte
	m, err := zr.Read(one[:])
	for m == 0 && err == nil {
		m, err = zr.Read(one[:])
	}
	switch {
	case m > 0:
		return fmt.Errorf("more than the %d bytes its header says", n)
	case errors.Is(err, io.EOF):
		return nil
	default:
		return err
	}
}

func discardExactly(zr io.Reader, n int64) error { return copyExactly(io.Discard, zr, n) }

// leb128 decodes a delta header's size.
func leb128(b []byte) (int64, []byte, bool) {
	var v int64
	for i, shift := 0, 0; i < len(b) && shift <= 56; i, shift = i+1, shift+7 {
		v |= int64(b[i]&0x7f) << shift
		if b[i]&0x80 == 0 {
			return v, b[i+1:], true
		}
	}
	return 0, nil, false
}

// read inflates entry i whole; it is at most maxDeltaObject (a delta, or a
// whole object that is a delta's base).
func (p *packIndex) read(i int32) ([]byte, error) {
	e := &p.entries[i]
	if e.size > maxDeltaObject {
		return nil, fmt.Errorf("%w: object %s (%d bytes) is a delta base, above the %d MiB limit for delta objects", ErrCorruptBundle, e.hash, e.size, maxDeltaObject>>20)
	}
	sr := io.NewSectionReader(p.f, e.offset+int64(e.hdrLen), p.size-e.offset-int64(e.hdrLen))
	if p.buf == nil {
		p.buf = bufio.NewReaderSize(sr, 32<<10)
	} else {
		p.buf.Reset(sr)
	}
	if err := p.resetZlib(p.buf); err != nil {
		return nil, corruptf("object at offset %d: %v", e.offset, err)
	}
	var out bytes.Buffer
	out.Grow(int(e.size))
	if err := copyExactly(&out, p.zr, e.size); err != nil {
		return nil, corruptf("object at offset %d: %v", e.offset, err)
	}
	return out.Bytes(), nil
}

// frame is one object on the path from a base to the delta being
// resolved: frame k+1 is a delta whose base is frame k.
type frame struct {
	entry int32 // -1: a base from outside the pack
	hash  plumbing.Hash
	data  []byte // nil once dropped (rebuilt from the chain when needed)
	kids  []int32
	next  int
}

// resolve hashes every delta (pass 2): depth first from each whole object
// (and, for a thin pack, each external base) through its delta children.
func (p *packIndex) resolve() error {
	slices.SortFunc(p.ofsKids, func(a, b ofsKid) int { return cmpInt64(a.base, b.base) })
	slices.SortFunc(p.refKids, func(a, b refKid) int { return bytes.Compare(a.base[:], b.base[:]) })
	for i := range p.entries {
		e := &p.entries[i]
		if e.isDelta {
			continue
		}
		if err := p.walk(int32(i), e.hash, e.typ, nil); err != nil {
			return err
		}
	}
	// Bases outside the pack, each once.
	for i := 0; i < len(p.refKids); {
		base := p.refKids[i].base
		j := i
		for j < len(p.refKids) && p.refKids[j].base == base {
			j++
		}
		pending := false
		for _, k := range p.refKids[i:j] {
			pending = pending || !p.entries[k.kid].done
		}
		// A base resolved in the pack has had its children visited: a
		// child still pending means a base from outside (or none).
		if pending {
			if p.external == nil {
				return fmt.Errorf("%w: delta base %s is not in the pack", ErrCorruptBundle, base)
			}
			typ, data, err := p.external(base)
			if err != nil {
				return err
			}
			if err := p.walk(-1, base, typ, data); err != nil {
				return err
			}
		}
		i = j
	}
	for i := range p.entries {
		if e := &p.entries[i]; !e.done {
			return corruptf("delta at offset %d: its base is not in the pack (or the deltas form a loop)", e.offset)
		}
	}
	return nil
}

// kids returns the deltas whose base is the object at offset (-1: none)
// or with hash h.
func (p *packIndex) kids(offset int64, h plumbing.Hash) []int32 {
	var out []int32
	if offset >= 0 {
		i, _ := slices.BinarySearchFunc(p.ofsKids, offset, func(k ofsKid, o int64) int { return cmpInt64(k.base, o) })
		for ; i < len(p.ofsKids) && p.ofsKids[i].base == offset; i++ {
			out = append(out, p.ofsKids[i].kid)
		}
	}
	i, _ := slices.BinarySearchFunc(p.refKids, h, func(k refKid, t plumbing.Hash) int { return bytes.Compare(k.base[:], t[:]) })
	for ; i < len(p.refKids) && p.refKids[i].base == h; i++ {
		if !p.entries[p.refKids[i].kid].done {
			out = append(out, p.refKids[i].kid)
		}
	}
	return out
}

// walk resolves every delta below the base (entry root, or an external
// base when root is -1 and data is given), typ being its object type.
func (p *packIndex) walk(root int32, h plumbing.Hash, typ plumbing.ObjectType, data []byte) error {
	offset := int64(-1)
	if root >= 0 {
		offset = p.entries[root].offset
	}
	kids := p.kids(offset, h)
	if len(kids) == 0 {
		return nil
	}
	stack := []frame{{entry: root, hash: h, data: data, kids: kids}}
	held := len(data)
	for len(stack) > 0 {
		top := len(stack) - 1
		if stack[top].next == len(stack[top].kids) {
			held -= len(stack[top].data)
			stack = stack[:top]
			continue
		}
		if err := p.ctx.Err(); err != nil {
			return err
		}
		kid := stack[top].kids[stack[top].next]
		stack[top].next++
		base, err := p.dataOf(stack, top, &held)
		if err != nil {
			return err
		}
		result, err := p.apply(base, kid)
		if err != nil {
			return err
		}
		if stack[top].next == len(stack[top].kids) && stack[top].entry >= 0 {
			// No other child needs this base. (An external base is kept:
			// rebuilding a dropped frame above it may need it again.)
			held -= len(stack[top].data)
			stack[top].data = nil
		}
		e := &p.entries[kid]
		e.typ, e.hash, e.done = typ, plumbing.ComputeHash(typ, result), true
		if p.loose != nil {
			if err := writeLoose(p.loose, typ, result); err != nil {
				return fmt.Errorf("store %s: %w", e.hash, err)
			}
		}
		if next := p.kids(e.offset, e.hash); len(next) > 0 {
			stack = append(stack, frame{entry: kid, hash: e.hash, data: result, kids: next})
			held += len(result)
			held = dropOldest(stack, held, p.budget)
		}
	}
	return nil
}

// apply builds delta entry kid's result from base.
func (p *packIndex) apply(base []byte, kid int32) ([]byte, error) {
	delta, err := p.read(kid)
	if err != nil {
		return nil, err
	}
	result, err := packfile.PatchDelta(base, delta)
	if err != nil {
		return nil, corruptf("delta at offset %d: %v", p.entries[kid].offset, err)
	}
	return result, nil
}

// dataOf returns frame k's content, rebuilding it when it was dropped:
// from the nearest frame below that still has its content (or by reading
// the root again), applying each delta up to k.
func (p *packIndex) dataOf(stack []frame, k int, held *int) ([]byte, error) {
	if stack[k].data != nil {
		return stack[k].data, nil
	}
	j := k
	for j >= 0 && stack[j].data == nil {
		j--
	}
	if j < 0 {
		if stack[0].entry < 0 {
			return nil, fmt.Errorf("%w: external delta base %s dropped", ErrCorruptBundle, stack[0].hash)
		}
		data, err := p.read(stack[0].entry)
		if err != nil {
			return nil, err
		}
		if k == 0 {
			stack[0].data = data
			*held += len(data)
			*held = dropOldest(stack[:1], *held, p.budget)
			return data, nil
		}
		j = 0
		stack[0].data = data // only while rebuilding
		defer func() { stack[0].data = nil }()
	}
	cur := stack[j].data
	for m := j + 1; m <= k; m++ {
		next, err := p.apply(cur, stack[m].entry)
		if err != nil {
			return nil, err
		}
		cur = next
	}
	stack[k].data = cur
	*held += len(cur)
	*held = dropOldest(stack[:k+1], *held, p.budget)
	return cur, nil
}

// dropOldest drops contents from the bottom of the stack (never the top
// frame's) until at most budget bytes are held, and returns what is.
func dropOldest(stack []frame, held, budget int) int {
	for i := 0; held > budget && i < len(stack)-1; i++ {
		if stack[i].entry < 0 {
			continue // an external base cannot be read again from the pack
		}
		held -= len(stack[i].data)
		stack[i].data = nil
	}
	return held
}

func writeLoose(d *dotgit.DotGit, typ plumbing.ObjectType, data []byte) error {
	w, err := d.NewObject()
	if err != nil {
		return err
	}
	err = w.WriteHeader(typ, int64(len(data)))
	if err == nil {
		_, err = w.Write(data)
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// writeIdx writes the version 2 index of the resolved pack whose checksum
// is sum (pass 3). It sorts the entries by hash.
func (p *packIndex) writeIdx(w io.Writer, sum plumbing.Hash) error {
	es := p.entries
	slices.SortFunc(es, func(a, b packEntry) int { return bytes.Compare(a.hash[:], b.hash[:]) })
	h := sha1.New()
	bw := bufio.NewWriterSize(io.MultiWriter(w, h), 64<<10)
	var b4 [4]byte
	u32 := func(v uint32) {
		binary.BigEndian.PutUint32(b4[:], v)
		bw.Write(b4[:])
	}
	bw.Write([]byte{0xff, 't', 'O', 'c'})
	u32(2)
	var fan [256]uint32
	for _, e := range es {
		fan[e.hash[0]]++
	}
	total := uint32(0)
	for _, c := range fan {
		total += c
		u32(total)
	}
	for _, e := range es {
		bw.Write(e.hash[:])
	}
	for _, e := range es {
		u32(e.crc)
	}
	var large []int64
	for _, e := range es {
		if e.offset < 1<<31 {
			u32(uint32(e.offset))
			continue
		}
		u32(1<<31 | uint32(len(large)))
		large = append(large, e.offset)
	}
	var b8 [8]byte
	for _, o := range large {
		binary.BigEndian.PutUint64(b8[:], uint64(o))
		bw.Write(b8[:])
	}
	bw.Write(sum[:])
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err := w.Write(h.Sum(nil))
	return err
}

// packReader reads a pack in order, counting its offset and keeping the
// CRC-32 of the bytes read since startCRC. It is an io.ByteReader, so
// zlib reads exactly a compressed stream and no further.
type packReader struct {
	r        io.Reader
	buf      []byte
	pos, end int
	off      int64 // pack offset of buf[0]
	crc      uint32
	crcFrom  int // buf position from which the CRC is not yet updated
}

func (p *packReader) fill() error {
	p.crc = crc32.Update(p.crc, crc32.IEEETable, p.buf[p.crcFrom:p.end])
	p.off += int64(p.end)
	p.pos, p.end, p.crcFrom = 0, 0, 0
	for {
		n, err := p.r.Read(p.buf)
		p.end = n
		if n > 0 {
			return nil
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return io.ErrUnexpectedEOF
			}
			return err
		}
	}
}

func (p *packReader) ReadByte() (byte, error) {
	if p.pos == p.end {
		if err := p.fill(); err != nil {
			return 0, err
		}
	}
	c := p.buf[p.pos]
	p.pos++
	return c, nil
}

func (p *packReader) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	if p.pos == p.end {
		if err := p.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(b, p.buf[p.pos:p.end])
	p.pos += n
	return n, nil
}

func (p *packReader) offset() int64 { return p.off + int64(p.pos) }

func (p *packReader) startCRC() { p.crc, p.crcFrom = 0, p.pos }

func (p *packReader) sumCRC() uint32 {
	p.crc = crc32.Update(p.crc, crc32.IEEETable, p.buf[p.crcFrom:p.pos])
	p.crcFrom = p.pos
	return p.crc
}
