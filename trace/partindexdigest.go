package trace

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
)

// PartIndexDigest returns a digest of the parts of the trace at tracePath
// as its stored part index describes them (each part's number, turn,
// place, bytes' CRC and commit) and of the trace's size. It reads the
// index, checks it against the trace as LoadPartIndex does (sampled
// parts' bytes, nothing after its last part) and hashes it, without
// decoding a commit: a reader that keeps something derived from the
// parts' commits (an evaluation report) can tell from this digest alone
// that they have not changed. An index that is missing, torn, stale or
// lacks the trace's last parts is an error (ErrStaleIndex): there is no
// digest to trust, and the caller reads the parts instead.
func PartIndexDigest(tracePath string) (string, error) {
	f, err := os.Open(tracePath)
	if err != nil {
		return "", fmt.Errorf("part index digest of %s: %w", tracePath, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("part index digest of %s: %w", tracePath, err)
	}
	stale := func(why string) (string, error) {
		return "", fmt.Errorf("part index digest of %s: %w (%s)", tracePath, ErrStaleIndex, why)
	}
	data, err := os.ReadFile(PartIndexPath(tracePath))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return stale("no index")
	case err != nil:
		return "", fmt.Errorf("part index digest of %s: %w", tracePath, err)
	}
	body, ok := bytes.CutPrefix(data, []byte(partIndexMagic))
	if !ok || len(body) == 0 || len(body)%partRecordSize != 0 {
		return stale("not whole records")
	}
	es := make([]PartEntry, 0, len(body)/partRecordSize)
	for r := body; len(r) > 0; r = r[partRecordSize:] {
		e, ok := decodePartPlace(r[:partRecordSize])
		if !ok {
			return stale("a torn record")
		}
		es = append(es, e)
	}
	size := fi.Size()
	if !verifySample(f, size, es) {
		return stale("sampled parts differ")
	}
	last := es[len(es)-1]
	more := errors.New("a part after the index's last")
	err = ScanOffsets(f, size, ScanFrom{After: last.Off + int64(last.Len), Turn: last.Turn}, OffsetVisitor{
		Part: func(int, int64, []byte) error { return more },
	})
	switch {
	case errors.Is(err, more):
		return stale("the trace has parts the index lacks")
	case err != nil:
		return "", fmt.Errorf("part index digest of %s: %w", tracePath, err)
	}
	h := sha256.New()
	h.Write(data)
	h.Write([]byte("\nsize " + strconv.FormatInt(size, 10) + "\n"))
	return hex.EncodeToString(h.Sum(nil)), nil
}
