package trace

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/trajlab/traj/trace/atomicfile"
)

// The part index: where each part of a trace sits (part → turn, byte
// offset and length in agent_trace.json, its commit), so readers that need
// one part, or only the parts' commits, read a few bytes instead of the
// whole trace. The writer appends one record per part as the run goes;
// LoadPartIndex checks an index against its trace before any use and
// rebuilds it from the trace when it is missing, torn or stale. It is a
// cache of the trace, never the record: a wrong index can cost a rebuild,
// never a wrong answer.
//
// File format (little-endian): the 16-byte magic partIndexMagic, then one
// 64-byte record per part, in trace order:
//
//	0  part u32        4  turn u32 (position in the turns array)
//	8  offset u64     16  length u32 (the part's '{' … '}')
//	20 crc32c u32 of the part's bytes
//	24 commit length u8, 25 commit [32] (binary; hex in the trace)
//	57 flags u8 (1: the part's checkpoint committed)
//	60 crc32c u32 of bytes 0..59
const (
	partIndexMagic = "traj-partidx-v1\n"
	partRecordSize = 64
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// PartIndexPath is the part index of the trace at tracePath: beside it,
// agent_trace.index for agent_trace.json (the store names the same
// object: store.PartIndexName).
func PartIndexPath(tracePath string) string {
	return strings.TrimSuffix(tracePath, ".json") + ".index"
}

// PartEntry is one part's place in the trace.
type PartEntry struct {
	Part int
	Turn int // position of its turn in the turns array, from 0
	Off  int64
	Len  int
	// Sum is the CRC-32C of the part's bytes: reading a part through the
	// index checks it, so a stale index never answers.
	Sum uint32
	// Commit is the part's effective commit: git_commit, else
	// repo_checkpoint.commit_after ("" when it has neither).
	Commit    string
	Committed bool
	// CommitInPart says the commit was not hex of at most 32 bytes and is
	// not in the index: PartIndex.Commit reads it from the part.
	CommitInPart bool
}

// PartIndex locates the parts of one trace file.
type PartIndex struct {
	Entries []PartEntry
	// TraceSize is the trace's size when the index was checked.
	TraceSize int64
	// Rebuilt says the whole trace was scanned (no usable index); Added
	// counts parts read from the trace's tail that the stored index
	// lacked.
	Rebuilt bool
	Added   int
}

// Find returns part n's entry.
func (ix *PartIndex) Find(n int) (PartEntry, bool) {
	if n >= 1 && n <= len(ix.Entries) && ix.Entries[n-1].Part == n {
		return ix.Entries[n-1], true
	}
	for _, e := range ix.Entries {
		if e.Part == n {
			return e, true
		}
	}
	return PartEntry{}, false
}

// ReadPart reads e's bytes from the trace in f and checks them against
// the index (ErrStaleIndex when they differ).
func (ix *PartIndex) ReadPart(f io.ReaderAt, e PartEntry) ([]byte, error) {
	buf := make([]byte, e.Len)
	if _, err := f.ReadAt(buf, e.Off); err != nil {
		return nil, fmt.Errorf("read part %d: %w", e.Part, err)
	}
	if crc32.Checksum(buf, castagnoli) != e.Sum {
		return nil, fmt.Errorf("read part %d at byte %d: %w", e.Part, e.Off, ErrStaleIndex)
	}
	return buf, nil
}

// ErrStaleIndex says a part index does not describe its trace.
var ErrStaleIndex = errors.New("part index does not match the trace")

// LoadPartIndex returns the part index of the trace at tracePath: the
// stored one (PartIndexPath) after checking it against the trace — the
// first, the last and a spread of sampled parts must have the recorded
// bytes — completed with any parts appended after its last one (read from
// that part's end: the trace's tail only); else one built by scanning the
// whole trace. It writes nothing (readers change no file; the trace's
// writer keeps the index, repairing it when it reopens the trace). Only an
// unreadable or malformed trace is an error.
func LoadPartIndex(tracePath string) (*PartIndex, error) {
	f, err := os.Open(tracePath)
	if err != nil {
		return nil, fmt.Errorf("part index of %s: %w", tracePath, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("part index of %s: %w", tracePath, err)
	}
	ix, err := loadPartIndex(f, fi.Size(), PartIndexPath(tracePath))
	if err != nil {
		return nil, fmt.Errorf("part index of %s: %w", tracePath, err)
	}
	return ix, nil
}

func loadPartIndex(f io.ReaderAt, size int64, indexPath string) (*PartIndex, error) {
	ix := &PartIndex{TraceSize: size}
	if stored, err := readPartRecords(indexPath); err == nil && len(stored) > 0 && verifySample(f, size, stored) {
		ix.Entries = stored
		last := stored[len(stored)-1]
		n := len(ix.Entries)
		if err := ix.scan(f, size, ScanFrom{After: last.Off + int64(last.Len), Turn: last.Turn}); err == nil {
			ix.Added = len(ix.Entries) - n
			return ix, nil
		}
		ix.Entries = nil
	}
	ix.Rebuilt = true
	if err := ix.scan(f, size, ScanFrom{}); err != nil {
		return nil, err
	}
	return ix, nil
}

// verifySample checks the stored entries against the trace: in order,
// inside the file, and the bytes of the first, the last and up to 14
// parts between them unchanged (sampleIndexes).
func verifySample(f io.ReaderAt, size int64, es []PartEntry) bool {
	for i, e := range es {
		if !placeFollows(e, es[max(i-1, 0)], i, size) {
			return false
		}
	}
	for _, i := range sampleIndexes(len(es)) {
		if !partBytesMatch(f, es[i]) {
			return false
		}
	}
	return true
}

// placeFollows reports whether entry i, e, lies inside a file of size
// bytes and after prev (entry i-1).
func placeFollows(e, prev PartEntry, i int, size int64) bool {
	return e.Off >= 0 && e.Len > 0 && e.Off+int64(e.Len) <= size && (i == 0 || e.Off >= prev.Off+int64(prev.Len))
}

// sampleIndexes are the entries of n whose bytes verifySample checks:
// the first, the last and up to 14 spread between them.
func sampleIndexes(n int) []int {
	const between = 14
	if n == 0 {
		return nil
	}
	out := []int{0}
	for k := 1; k <= between && n > 2; k++ {
		out = append(out, k*(n-1)/(between+1))
	}
	if n > 1 {
		out = append(out, n-1)
	}
	return out
}

// partBytesMatch reports whether the trace in f holds e's bytes.
func partBytesMatch(f io.ReaderAt, e PartEntry) bool {
	buf := make([]byte, e.Len)
	_, err := f.ReadAt(buf, e.Off)
	return err == nil && crc32.Checksum(buf, castagnoli) == e.Sum
}

// scan adds the parts found from from to the end of the trace.
func (ix *PartIndex) scan(f io.ReaderAt, size int64, from ScanFrom) error {
	return ScanOffsets(f, size, from, OffsetVisitor{Part: func(ti int, off int64, raw []byte) error {
		e, err := NewPartEntry(ti, off, raw)
		if err != nil {
			return err
		}
		ix.Entries = append(ix.Entries, e)
		return nil
	}})
}

// NewPartEntry describes the part raw, found at byte off in turn ti.
func NewPartEntry(ti int, off int64, raw []byte) (PartEntry, error) {
	e := PartEntry{Turn: ti, Off: off, Len: len(raw), Sum: crc32.Checksum(raw, castagnoli)}
	var after string
	err := ObjectFields(raw, func(key, val []byte) error {
		switch string(key) {
		case "part":
			return json.Unmarshal(val, &e.Part)
		case "git_commit":
			if !bytes.Equal(val, []byte("null")) {
				return json.Unmarshal(val, &e.Commit)
			}
		case "repo_checkpoint":
			var rc struct {
				CommitAfter string `json:"commit_after"`
				Committed   bool   `json:"committed"`
			}
			if !bytes.Equal(val, []byte("null")) {
				if err := json.Unmarshal(val, &rc); err != nil {
					return err
				}
			}
			after, e.Committed = rc.CommitAfter, rc.Committed
		}
		return nil
	})
	if err != nil {
		return e, fmt.Errorf("part at byte %d: %w", off, err)
	}
	if e.Commit == "" {
		e.Commit = after
	}
	return e, nil
}

// readPartRecords reads the records of the index file at path up to the
// first torn or corrupt one (a writer killed mid-record).
func readPartRecords(path string) ([]PartEntry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(data, []byte(partIndexMagic)) {
		return nil, ErrStaleIndex
	}
	data = data[len(partIndexMagic):]
	out := make([]PartEntry, 0, len(data)/partRecordSize)
	for len(data) >= partRecordSize {
		e, ok := decodePartRecord(data[:partRecordSize])
		if !ok {
			break
		}
		out = append(out, e)
		data = data[partRecordSize:]
	}
	return out, nil
}

func decodePartRecord(r []byte) (PartEntry, bool) {
	e, ok := decodePartPlace(r)
	if ok {
		e.Commit = hex.EncodeToString(r[25 : 25+int(r[24])])
	}
	return e, ok
}

// decodePartPlace is decodePartRecord without the commit (its hex is
// most of the decoding's cost, and checking an index needs only where the
// parts are).
func decodePartPlace(r []byte) (PartEntry, bool) {
	le := binary.LittleEndian
	if crc32.Checksum(r[:60], castagnoli) != le.Uint32(r[60:]) || r[24] > 32 {
		return PartEntry{}, false
	}
	return PartEntry{
		Part: int(le.Uint32(r[0:])), Turn: int(le.Uint32(r[4:])), Off: int64(le.Uint64(r[8:])),
		Len: int(le.Uint32(r[16:])), Sum: le.Uint32(r[20:]),
		Committed: r[57]&1 != 0, CommitInPart: r[57]&2 != 0,
	}, true
}

// appendPartRecord appends e's record to b. A commit that is not hex of
// at most 32 bytes is recorded as none: the reader then takes it from the
// part itself.
func appendPartRecord(b []byte, e PartEntry) []byte {
	var r [partRecordSize]byte
	le := binary.LittleEndian
	le.PutUint32(r[0:], uint32(e.Part))
	le.PutUint32(r[4:], uint32(e.Turn))
	le.PutUint64(r[8:], uint64(e.Off))
	le.PutUint32(r[16:], uint32(e.Len))
	le.PutUint32(r[20:], e.Sum)
	if c, err := hex.DecodeString(e.Commit); err == nil && len(c) <= 32 && hex.EncodeToString(c) == e.Commit {
		r[24] = byte(copy(r[25:57], c))
	} else {
		r[57] |= 2
	}
	if e.Committed {
		r[57] |= 1
	}
	le.PutUint32(r[60:], crc32.Checksum(r[:60], castagnoli))
	return append(b, r[:]...)
}

// Commit returns part n's effective commit, reading the part from the
// trace in f only when the index could not hold it.
func (ix *PartIndex) Commit(f io.ReaderAt, n int) (string, bool, error) {
	e, ok := ix.Find(n)
	if !ok {
		return "", false, nil
	}
	if !e.CommitInPart {
		return e.Commit, true, nil
	}
	raw, err := ix.ReadPart(f, e)
	if err != nil {
		return "", true, err
	}
	full, err := NewPartEntry(e.Turn, e.Off, raw)
	return full.Commit, true, err
}

// save writes the whole index to path atomically.
func (ix *PartIndex) save(path string) error {
	b := make([]byte, 0, len(partIndexMagic)+partRecordSize*len(ix.Entries))
	b = append(b, partIndexMagic...)
	for _, e := range ix.Entries {
		b = appendPartRecord(b, e)
	}
	return atomicfile.WriteBytes(path, b)
}

// partIndexAppender is the writer's side: one record per part, appended
// after the part is in the trace, so the index never runs ahead of it.
// Failures are reported once and end the appending (readers complete or
// rebuild the index from the trace).
type partIndexAppender struct {
	f   *os.File
	buf []byte
}

// createPartIndex starts an empty index at path.
func createPartIndex(path string) (*partIndexAppender, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	if _, err := f.Write([]byte(partIndexMagic)); err != nil {
		f.Close()
		return nil, err
	}
	return &partIndexAppender{f: f}, nil
}

// openPartIndex brings the index of the trace at tracePath up to date
// (LoadPartIndex) and opens it for appending.
func openPartIndex(tracePath string) (*partIndexAppender, error) {
	ix, err := LoadPartIndex(tracePath)
	if err != nil {
		return nil, err
	}
	path := PartIndexPath(tracePath)
	if ix.Rebuilt || ix.Added > 0 {
		if err := ix.save(path); err != nil {
			return nil, err
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if errors.Is(err, fs.ErrNotExist) {
		if err := ix.save(path); err != nil {
			return nil, err
		}
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	}
	if err != nil {
		return nil, err
	}
	// Records are whole from here: cut a torn one a kill left.
	if fi, err := f.Stat(); err == nil {
		want := int64(len(partIndexMagic) + partRecordSize*len(ix.Entries))
		if fi.Size() != want {
			if err := f.Truncate(want); err != nil {
				f.Close()
				return nil, err
			}
		}
	}
	return &partIndexAppender{f: f}, nil
}

func (a *partIndexAppender) append(e PartEntry) error {
	a.buf = appendPartRecord(a.buf[:0], e)
	_, err := a.f.Write(a.buf)
	return err
}

func (a *partIndexAppender) close() error { return a.f.Close() }
