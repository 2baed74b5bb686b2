package trace

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
)

// PartIndexDigest returns a digest of the parts of the trace at tracePath,
// and how many there are, as its stored part index describes them (each
// part's number, turn, place, bytes' CRC and commit) and of the trace's
// size. It streams the index, checks it against the trace as
// LoadPartIndex does (every record whole and in order, sampled parts'
// bytes, nothing after its last part) and hashes it, without decoding a
// commit or holding the records: a reader that keeps something derived
// from the parts' commits (an evaluation report) can tell from this
// digest alone that they have not changed. An index that is missing,
// torn, stale or lacks the trace's last parts is an error wrapping
// ErrStaleIndex: there is no digest to trust, and the caller reads the
// parts instead.
func PartIndexDigest(tracePath string) (string, int, error) {
	fail := func(err error) (string, int, error) {
		return "", 0, fmt.Errorf("part index digest of %s: %w", tracePath, err)
	}
	stale := func(why string) (string, int, error) {
		return fail(fmt.Errorf("%w (%s)", ErrStaleIndex, why))
	}
	f, err := os.Open(tracePath)
	if err != nil {
		return fail(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fail(err)
	}
	size := fi.Size()
	ix, err := os.Open(PartIndexPath(tracePath))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return stale("no index")
	case err != nil:
		return fail(err)
	}
	defer ix.Close()
	ixi, err := ix.Stat()
	if err != nil {
		return fail(err)
	}
	body := ixi.Size() - int64(len(partIndexMagic))
	if body <= 0 || body%partRecordSize != 0 {
		return stale("not whole records")
	}
	n := int(body / partRecordSize)
	samples := sampleIndexes(n)
	sampled := make([]PartEntry, 0, len(samples))
	h := sha256.New()
	r := io.TeeReader(bufio.NewReaderSize(ix, 64<<10), h)
	var rec [partRecordSize]byte
	if _, err := io.ReadFull(r, rec[:len(partIndexMagic)]); err != nil {
		return fail(err)
	}
	if !bytes.Equal(rec[:len(partIndexMagic)], []byte(partIndexMagic)) {
		return stale("no magic")
	}
	var prev PartEntry
	for i := range n {
		if _, err := io.ReadFull(r, rec[:]); err != nil {
			return stale("cut while read")
		}
		e, ok := decodePartPlace(rec[:])
		if !ok {
			return stale("a torn record")
		}
		if !placeFollows(e, prev, i, size) {
			return stale("a part out of place")
		}
		if slices.Contains(samples, i) {
			sampled = append(sampled, e)
		}
		prev = e
	}
	for _, e := range sampled {
		if !partBytesMatch(f, e) {
			return stale("sampled parts differ")
		}
	}
	more := errors.New("a part after the index's last")
	err = ScanOffsets(f, size, ScanFrom{After: prev.Off + int64(prev.Len), Turn: prev.Turn}, OffsetVisitor{
		Part: func(int, int64, []byte) error { return more },
	})
	switch {
	case errors.Is(err, more):
		return stale("the trace has parts the index lacks")
	case err != nil:
		return fail(err)
	}
	h.Write([]byte("\nsize " + strconv.FormatInt(size, 10) + "\n"))
	return hex.EncodeToString(h.Sum(nil)), n, nil
}
