package gitstate

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
)

// maxLeadingCommit bounds one commit object BundleCommitTrees reads: a
// commit is a few hundred bytes; a larger one ends the scan.
const maxLeadingCommit = 1 << 20

// BundleCommitTrees reads the commits at the head of a bundle's pack —
// git (`pack-objects`) and WriteBundle write every commit before the
// trees and blobs — and returns each one's tree, keyed by commit. A
// commit's id is the SHA-1 of the bytes read, as git computes it, so the
// answer is the bundle's own, never a record that could be stale. The
// scan stops at the first object that is not a whole commit (a tree, a
// blob, a tag, a delta): what it did not reach, the caller looks up in the
// history opened whole. It reads only the commits' bytes, a small part of
// the bundle: what a cached evaluate needs, without indexing the pack.
func BundleCommitTrees(rd io.Reader) (map[plumbing.Hash]plumbing.Hash, error) {
	cr := &countingReader{r: rd}
	br := bufio.NewReaderSize(cr, 64<<10)
	if _, err := ReadBundleHeader(br); err != nil {
		return nil, err
	}
	offset := func() int64 { return cr.n - int64(br.Buffered()) }
	start := offset()
	var hdr [12]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return nil, corruptf("pack header: %v", err)
	}
	if string(hdr[:4]) != "PACK" {
		return nil, corruptf("pack signature %q", hdr[:4])
	}
	if v := binary.BigEndian.Uint32(hdr[4:]); v != 2 && v != 3 {
		return nil, corruptf("pack version %d", v)
	}
	n := binary.BigEndian.Uint32(hdr[8:])
	// A pack of n objects holds fewer than n commits (each has a tree).
	out := make(map[plumbing.Hash]plumbing.Hash, min(n/2, 1<<20))
	// git stores some commits as deltas against others: the commits read
	// so far, by pack offset and by id, are their bases.
	byOffset := map[int64][]byte{}
	byHash := map[plumbing.Hash][]byte{}
	var zr io.ReadCloser
	for range n {
		at := offset() - start
		c, err := br.ReadByte()
		if err != nil {
			return nil, corruptf("object at offset %d: %v", at, err)
		}
		typ := plumbing.ObjectType((c >> 4) & 7)
		size := int64(c & 0x0f)
		for shift := 4; c&0x80 != 0; shift += 7 {
			if c, err = br.ReadByte(); err != nil || shift > 56 {
				return nil, corruptf("object at offset %d: bad size", at)
			}
			size |= int64(c&0x7f) << shift
		}
		var base []byte
		switch typ {
		case plumbing.CommitObject:
		case plumbing.OFSDeltaObject:
			c, err := br.ReadByte()
			if err != nil {
				return nil, corruptf("object at offset %d: bad delta offset", at)
			}
			dist := int64(c & 0x7f)
			for c&0x80 != 0 {
				if c, err = br.ReadByte(); err != nil || dist >= 1<<55 {
					return nil, corruptf("object at offset %d: bad delta offset", at)
				}
				dist = (dist+1)<<7 | int64(c&0x7f)
			}
			base = byOffset[at-dist]
		case plumbing.REFDeltaObject:
			var h plumbing.Hash
			if _, err := io.ReadFull(br, h[:]); err != nil {
				return nil, corruptf("object at offset %d: bad delta base", at)
			}
			base = byHash[h]
		}
		if (typ != plumbing.CommitObject && base == nil) || size > maxLeadingCommit {
			break // past the commits
		}
		// bufio.Reader is an io.ByteReader: zlib reads exactly the
		// object's stream and leaves br at the next object.
		if zr == nil {
			if zr, err = zlib.NewReader(br); err != nil {
				return nil, corruptf("object at offset %d: %v", at, err)
			}
		} else if err := zr.(zlib.Resetter).Reset(br, nil); err != nil {
			return nil, corruptf("object at offset %d: %v", at, err)
		}
		var buf bytes.Buffer
		buf.Grow(int(size))
		if err := copyExactly(&buf, zr, size); err != nil {
			return nil, corruptf("object at offset %d: %v", at, err)
		}
		data := buf.Bytes()
		if base != nil {
			if data, err = packfile.PatchDelta(base, data); err != nil || int64(len(data)) > maxLeadingCommit {
				return nil, corruptf("commit delta at offset %d: %v", at, err)
			}
		}
		h := plumbing.NewHasher(plumbing.CommitObject, int64(len(data)))
		h.Write(data)
		id := h.Sum()
		tree, ok := commitTree(data)
		if !ok {
			return nil, fmt.Errorf("%w: commit %s has no tree line", ErrCorruptBundle, id)
		}
		out[id] = tree
		byOffset[at], byHash[id] = data, data
	}
	return out, nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// commitTree reads the tree a commit object's first line names.
func commitTree(data []byte) (plumbing.Hash, bool) {
	const prefix = "tree "
	if len(data) < len(prefix)+40+1 || string(data[:len(prefix)]) != prefix || data[len(prefix)+40] != '\n' {
		return plumbing.ZeroHash, false
	}
	var h plumbing.Hash
	if _, err := hex.Decode(h[:], data[len(prefix):len(prefix)+40]); err != nil {
		return plumbing.ZeroHash, false
	}
	return h, true
}
