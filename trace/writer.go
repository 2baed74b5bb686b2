package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// ErrFinished is returned when a turn or part is added to a trace whose
// session_end is already written.
var ErrFinished = errors.New("trace is finished (session_end written)")

// ErrLocked is returned when another Writer (in this or another process)
// holds the trace open.
var ErrLocked = errors.New("trace is open by another writer")

// WriterOptions tune a Writer. The zero value is valid.
type WriterOptions struct {
	// Sync makes every mutation fdatasync the new document before it
	// becomes canonical, so the trace survives power loss, not only a
	// killed process. It costs one disk flush per part.
	Sync bool
	// OnChunk, when set, is called after each mutation is on disk (in
	// the canonical file) with the bytes that mutation added. Chunks are
	// valid only during the call; they let an uploader ship per-part
	// pieces without reading the file back. The recorder asks Written
	// after each call instead, and hands the chunk on itself.
	OnChunk func(c Chunk)
	// Logger receives warnings (the RENAME_EXCHANGE fallback). Default:
	// slog.Default().
	Logger *slog.Logger

	// noExchange makes the exchange report "unsupported" (tests of the
	// fallback).
	noExchange bool
	// injectFault, when set, is called before each disk operation of a
	// mutation (see the fault* constants); a non-nil result is returned
	// as that operation's error. Fault injection for tests only.
	injectFault func(op faultOp) error
}

// faultOp names the disk operations of one mutation, in order.
type faultOp int

const (
	faultWriteShadow faultOp = iota // the new bytes into the shadow inode
	faultSyncShadow                 // fdatasync of the shadow (Sync only)
	faultSyncDir                    // fsync of the folder after the first exchange
	faultWriteOther                 // the same bytes into the former canonical inode
)

func (w *Writer) fault(op faultOp) error {
	if w.opts.injectFault == nil {
		return nil
	}
	return w.opts.injectFault(op)
}

// ChunkKind says what a mutation did.
type ChunkKind int

// Chunk kinds, in the order a trace is written.
const (
	ChunkHeader    ChunkKind = iota // the document start, through "turns":[
	ChunkTurnStart                  // a turn's fixed fields, through "parts":[
	ChunkPart                       // one part record
	ChunkTurnEnd                    // a turn's closing fields
	ChunkTail                       // only the tail changed (trailing parts, finish)
)

// Chunk is one durable mutation of the document. The document on disk is
// always the concatenation of every chunk's Data (from offset 0, or from
// Writer.Offset at the time OpenForAppend returned) followed by the latest
// chunk's Tail.
type Chunk struct {
	Kind   ChunkKind
	Part   int    // the part index, for ChunkPart
	Offset int64  // where Data starts in the document
	Data   []byte // bytes that are now fixed: they never change again
	Tail   []byte // the closing bytes after Data, rewritten by the next mutation
}

// TurnStart opens a turn.
type TurnStart struct {
	// Turn is the turn number; 0 means "the next one" (previous + 1).
	Turn      int    `json:"turn"`
	Timestamp string `json:"timestamp"`
	Prompt    string `json:"prompt"`
	SessionID string `json:"session_id,omitempty"`
}

// TurnEnd closes a turn.
type TurnEnd struct {
	EndedAt string
	// TrailingParts, when non-nil, replaces those set by SetTrailingParts.
	TrailingParts []json.RawMessage
}

// Writer appends to agent_trace.json so that after every call returns the
// file is a complete, valid trace holding everything written so far, even
// if the process is killed at any instant. See the package documentation
// for the layout and the two-file exchange that makes this safe. A Writer
// is not safe for concurrent use. Only one Writer may own a trace: both
// files are locked (flock) while it is open, and Create or OpenForAppend
// of a trace that is open elsewhere fails with ErrLocked.
type Writer struct {
	path, shadowPath, dir string
	opts                  WriterOptions

	files     [2]*os.File
	canon     int   // files[canon] is the inode at path
	stableEnd int64 // bytes [0, stableEnd) never change again
	size      int64 // current length of both files

	exchange    bool // RENAME_EXCHANGE works here
	dirSynced   bool
	shadowStale bool  // the shadow's bytes are unknown: rebuild before writing
	err         error // sticky: a failed write leaves the shadow unknown
	finished    bool
	header      Header
	turns       int // turns written (open or closed)
	lastTurn    int // number of the last turn
	turnOpen    bool
	turnParts   int // parts in the open turn
	partStart   int // first part of the open turn
	lastPart    int
	lastCommit  string
	trailing    []json.RawMessage
	artifacts   map[string]string
	sessionEnd  *SessionEnd
	enc         *json.Encoder
	encBuf      bytes.Buffer
	buf, tail   []byte
	// index gets one record per part appended (partindex.go); nil after
	// a failed index write.
	index *partIndexAppender
	// written is the chunk of the last mutation that succeeded (Written).
	written Chunk
	// stamps and pathStamp are the files as the last write left them
	// (tamper.go).
	stamps    [2]fileStamp
	pathStamp fileStamp
}

// ShadowPath is the hidden twin of the trace at path that the writer
// swaps with it on every mutation.
func ShadowPath(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".shadow")
}

// Create starts a new trace at path, which must not exist. The schema
// version is set to SchemaVersion when h leaves it empty.
func Create(path string, h Header, opts WriterOptions) (*Writer, error) {
	if h.SchemaVersion == "" {
		h.SchemaVersion = SchemaVersion
	}
	w := newWriter(path, opts)
	w.header = h
	if _, err := os.Lstat(path); err == nil {
		return nil, fmt.Errorf("create trace %s: file exists", path)
	}
	hb, err := w.encode(h)
	if err != nil {
		return nil, fmt.Errorf("create trace %s: encode header: %w", path, err)
	}
	// {"schema_version":…,"environment":{…}  +  ,"turns":[
	head := append(hb[:len(hb)-1:len(hb)-1], `,"turns":[`...)
	doc := append(head, w.buildTail()...)
	w.stableEnd = int64(len(head))
	w.size = int64(len(doc))

	shadow, err := os.OpenFile(w.shadowPath, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create trace shadow: %w", err)
	}
	tmp := w.shadowPath + ".new"
	canon, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		shadow.Close()
		return nil, fmt.Errorf("create trace %s: %w", path, err)
	}
	w.files = [2]*os.File{canon, shadow}
	w.canon = 0
	for _, f := range w.files {
		if err := lockFile(f); err != nil {
			w.closeFiles()
			os.Remove(tmp)
			return nil, fmt.Errorf("create trace %s: %w", path, err)
		}
		if _, err := f.WriteAt(doc, 0); err != nil {
			w.closeFiles()
			return nil, fmt.Errorf("create trace %s: write: %w", path, err)
		}
		if opts.Sync {
			if err := f.Sync(); err != nil {
				w.closeFiles()
				return nil, fmt.Errorf("create trace %s: sync: %w", path, err)
			}
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		w.closeFiles()
		os.Remove(tmp)
		return nil, fmt.Errorf("create trace %s: %w", path, err)
	}
	if opts.Sync {
		if err := syncDir(w.dir); err != nil {
			w.closeFiles()
			return nil, fmt.Errorf("create trace %s: %w", path, err)
		}
	}
	if err := w.stampFiles(); err != nil {
		w.closeFiles()
		return nil, fmt.Errorf("create trace %s: %w", path, err)
	}
	w.startIndex(createPartIndex(PartIndexPath(path)))
	w.emit(ChunkHeader, 0, 0, head)
	return w, nil
}

// startIndex keeps the part index appender, or warns that there is none
// (readers then rebuild the index from the trace).
func (w *Writer) startIndex(a *partIndexAppender, err error) {
	if err != nil {
		w.opts.Logger.Warn("part index not written; readers rebuild it from the trace", "path", PartIndexPath(w.path), "err", err)
		return
	}
	w.index = a
}

// indexPart appends the record of part p, whose bytes pb now sit at off
// in turn ti. A failure stops the index, never the trace.
func (w *Writer) indexPart(ti int, off int64, p *Part, pb []byte) {
	if w.index == nil {
		return
	}
	e := PartEntry{Part: p.Part, Turn: ti, Off: off, Len: len(pb), Sum: crc32.Checksum(pb, castagnoli), Commit: p.GitCommit}
	if rc := p.RepoCheckpoint; rc != nil {
		e.Committed = rc.Committed
		if e.Commit == "" {
			e.Commit = rc.CommitAfter
		}
	}
	if err := w.index.append(e); err != nil {
		w.opts.Logger.Warn("part index not written; readers rebuild it from the trace", "path", PartIndexPath(w.path), "err", err)
		w.index.close()
		w.index = nil
	}
}

func newWriter(path string, opts WriterOptions) *Writer {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	w := &Writer{
		path: path, shadowPath: ShadowPath(path), dir: filepath.Dir(path),
		opts: opts, exchange: true, artifacts: map[string]string{},
	}
	w.enc = json.NewEncoder(&w.encBuf)
	w.enc.SetEscapeHTML(false)
	return w
}

// OpenForAppend reopens an unfinished trace (for example after the
// recording process died) so more turns and parts can be added, or the run
// finalized with Finish. It reads the file once, keeps every byte before
// the closing tail, and rebuilds the shadow from it. A finished trace opens
// too, but only Finish may be called on it. Traces written by the original
// recorder may use a field order that cannot be continued in place; they
// are refused with an error that says so.
func OpenForAppend(path string, opts WriterOptions) (*Writer, error) {
	w := newWriter(path, opts)
	canon, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("open trace for append: %w", err)
	}
	if err := lockFile(canon); err != nil {
		canon.Close()
		return nil, fmt.Errorf("open trace %s for append: %w", path, err)
	}
	st, err := canon.Stat()
	if err != nil {
		canon.Close()
		return nil, fmt.Errorf("open trace for append: %w", err)
	}
	if err := w.resumeState(io.NewSectionReader(canon, 0, st.Size())); err != nil {
		canon.Close()
		return nil, fmt.Errorf("open trace %s for append: %w", path, err)
	}
	w.size = st.Size()
	shadow, err := os.OpenFile(w.shadowPath, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		canon.Close()
		return nil, fmt.Errorf("open trace for append: shadow: %w", err)
	}
	w.files = [2]*os.File{canon, shadow}
	w.canon = 0
	if err := lockFile(shadow); err != nil {
		w.closeFiles()
		return nil, fmt.Errorf("open trace %s for append: %w", path, err)
	}
	if err := shadow.Truncate(0); err != nil {
		w.closeFiles()
		return nil, fmt.Errorf("open trace for append: shadow: %w", err)
	}
	if _, err := io.Copy(shadow, io.NewSectionReader(canon, 0, st.Size())); err != nil {
		w.closeFiles()
		return nil, fmt.Errorf("open trace for append: copy to shadow: %w", err)
	}
	if err := w.stampFiles(); err != nil {
		w.closeFiles()
		return nil, fmt.Errorf("open trace %s for append: %w", path, err)
	}
	w.startIndex(openPartIndex(path))
	return w, nil
}

// resumeState finds where the fixed bytes end and what the tail must say.
func (w *Writer) resumeState(r io.Reader) error {
	var last turnLoc
	var lastTurn Turn
	var doc docLoc
	firstPartOfLast := 0
	err := walk(r, walkHooks{
		header: func(h *Header) error { w.header = *h; return nil },
		part: func(loc partLoc) error {
			var p struct {
				Part      int    `json:"part"`
				GitCommit string `json:"git_commit"`
			}
			if err := json.Unmarshal(loc.raw, &p); err != nil {
				return loc.decodeError(err)
			}
			if p.Part != w.lastPart+1 {
				return fmt.Errorf("%s: part %d follows part %d; indices must be contiguous", loc.path(), p.Part, w.lastPart)
			}
			if loc.index == 0 {
				firstPartOfLast = p.Part
			}
			w.lastPart, w.lastCommit = p.Part, p.GitCommit
			return nil
		},
		turn: func(loc turnLoc) error {
			lastTurn = Turn{}
			if err := json.Unmarshal(loc.raw, &lastTurn); err != nil {
				return loc.decodeError(err)
			}
			if loc.nparts == 0 {
				firstPartOfLast = 0
			}
			last = loc
			last.raw = nil
			return nil
		},
		end: func(loc docLoc) error {
			var t Trace
			if err := json.Unmarshal(loc.raw, &t); err != nil {
				return decodeError("$", loc.end, err)
			}
			doc = loc
			doc.raw = nil
			if t.Artifacts != nil {
				w.artifacts = t.Artifacts
			}
			w.sessionEnd = t.SessionEnd
			return nil
		},
	})
	if err != nil {
		return err
	}
	if !doc.hasTurns || doc.turnsNull {
		return errors.New(`no "turns" array to continue`)
	}
	for _, k := range doc.keysBefore {
		if k == "artifacts" || k == "session_end" {
			return fmt.Errorf("%q comes before \"turns\"; this layout cannot be continued in place", k)
		}
	}
	for _, k := range doc.keysAfter {
		if k != "artifacts" && k != "session_end" {
			return fmt.Errorf("%q comes after \"turns\"; this layout cannot be continued in place", k)
		}
	}
	w.turns = doc.nturns
	w.finished = w.sessionEnd != nil
	w.stableEnd = doc.turnsEnd
	if doc.nturns == 0 {
		return nil
	}
	w.lastTurn = lastTurn.Turn
	if w.finished || lastTurn.EndedAt != "" {
		return nil
	}
	// The last turn is still open: continue inside its parts array.
	if !last.hasParts {
		return fmt.Errorf("open turn %d has no parts array", lastTurn.Turn)
	}
	for _, k := range last.keysBefore {
		switch k {
		case "part_start", "part_end", "trailing_parts", "ended_at":
			return fmt.Errorf("turn %d: %q comes before \"parts\"; this layout cannot be continued in place", lastTurn.Turn, k)
		}
	}
	for _, k := range last.keysAfter {
		switch k {
		case "part_start", "part_end", "trailing_parts", "ended_at":
		default:
			return fmt.Errorf("turn %d: %q comes after \"parts\"; this layout cannot be continued in place", lastTurn.Turn, k)
		}
	}
	w.turnOpen = true
	w.turnParts = last.nparts
	w.partStart = firstPartOfLast
	w.trailing = lastTurn.TrailingParts
	w.stableEnd = last.partsEnd
	return nil
}

// Header returns the trace's header fields.
func (w *Writer) Header() Header { return w.header }

// LastPart is the index of the last part written (0 for none); the next
// AppendPart must carry LastPart()+1.
func (w *Writer) LastPart() int { return w.lastPart }

// Turns is the number of turns begun.
func (w *Writer) Turns() int { return w.turns }

// TurnOpen reports whether a turn is begun and not ended.
func (w *Writer) TurnOpen() bool { return w.turnOpen }

// Finished reports whether session_end is written.
func (w *Writer) Finished() bool { return w.finished }

// LastCommit is the git_commit of the last part written ("" for none).
func (w *Writer) LastCommit() string { return w.lastCommit }

// Offset is the length of the fixed part of the document: bytes before it
// never change.
func (w *Writer) Offset() int64 { return w.stableEnd }

// BeginTurn opens a turn. A turn that is still open is ended first.
func (w *Writer) BeginTurn(t TurnStart) error {
	if err := w.usable(); err != nil {
		return fmt.Errorf("begin turn %d: %w", t.Turn, err)
	}
	if t.Turn == 0 {
		t.Turn = w.lastTurn + 1
	}
	if t.Turn <= w.lastTurn {
		return fmt.Errorf("begin turn %d: turn numbers must increase (last was %d)", t.Turn, w.lastTurn)
	}
	w.buf = w.buf[:0]
	if w.turnOpen {
		w.buf = w.appendTurnClose(w.buf, "")
	}
	if w.turns > 0 {
		w.buf = append(w.buf, ',')
	}
	w.buf = append(w.buf, '\n')
	hb, err := w.encode(t)
	if err != nil {
		return fmt.Errorf("begin turn %d: %w", t.Turn, err)
	}
	w.buf = append(w.buf, hb[:len(hb)-1]...)
	w.buf = append(w.buf, `,"parts":[`...)
	prev := w.saveTurnState()
	w.turns++
	w.lastTurn = t.Turn
	w.turnOpen, w.turnParts, w.partStart, w.trailing = true, 0, 0, nil
	if err := w.commit(ChunkTurnStart, 0); err != nil {
		w.restoreTurnState(prev)
		return fmt.Errorf("begin turn %d: %w", t.Turn, err)
	}
	return nil
}

// AppendPart adds p to the open turn. p.Part must be LastPart()+1. When it
// returns nil, the canonical file holds p.
func (w *Writer) AppendPart(p *Part) error {
	if err := w.usable(); err != nil {
		return fmt.Errorf("append part %d: %w", p.Part, err)
	}
	if !w.turnOpen {
		return fmt.Errorf("append part %d: no open turn (call BeginTurn first)", p.Part)
	}
	if p.Part != w.lastPart+1 {
		return fmt.Errorf("append part %d: parts must be contiguous, the next part is %d", p.Part, w.lastPart+1)
	}
	pb, err := w.encode(p)
	if err != nil {
		return fmt.Errorf("append part %d: encode: %w", p.Part, err)
	}
	w.buf = w.buf[:0]
	if w.turnParts > 0 {
		w.buf = append(w.buf, ',')
	}
	w.buf = append(w.buf, '\n')
	w.buf = append(w.buf, pb...)
	prevLast, prevCommit, prevStart := w.lastPart, w.lastCommit, w.partStart
	w.lastPart, w.lastCommit = p.Part, p.GitCommit
	if w.turnParts == 0 {
		w.partStart = p.Part
	}
	w.turnParts++
	partOff := w.stableEnd + int64(len(w.buf)-len(pb))
	if err := w.commit(ChunkPart, p.Part); err != nil {
		w.lastPart, w.lastCommit, w.partStart = prevLast, prevCommit, prevStart
		w.turnParts--
		return fmt.Errorf("append part %d: %w", p.Part, err)
	}
	w.indexPart(w.turns-1, partOff, p, pb)
	return nil
}

// SetTrailingParts records the open turn's uncounted trailing parts
// (verbatim server parts after the last counted one). They live in the
// tail, so each call rewrites them; keep them few.
func (w *Writer) SetTrailingParts(parts []json.RawMessage) error {
	if err := w.usable(); err != nil {
		return fmt.Errorf("set trailing parts: %w", err)
	}
	if !w.turnOpen {
		return errors.New("set trailing parts: no open turn")
	}
	prev := w.trailing
	w.trailing = slices.Clone(parts)
	w.buf = w.buf[:0]
	if err := w.commit(ChunkTail, 0); err != nil {
		w.trailing = prev
		return fmt.Errorf("set trailing parts: %w", err)
	}
	return nil
}

// EndTurn closes the open turn.
func (w *Writer) EndTurn(end TurnEnd) error {
	if err := w.usable(); err != nil {
		return fmt.Errorf("end turn %d: %w", w.lastTurn, err)
	}
	if !w.turnOpen {
		return errors.New("end turn: no open turn")
	}
	prev := w.saveTurnState()
	if end.TrailingParts != nil {
		w.trailing = end.TrailingParts
	}
	w.buf = w.appendTurnClose(w.buf[:0], end.EndedAt)
	w.turnOpen = false
	if err := w.commit(ChunkTurnEnd, 0); err != nil {
		w.restoreTurnState(prev)
		return fmt.Errorf("end turn %d: %w", w.lastTurn, err)
	}
	return nil
}

// Finish writes session_end and the artifacts map, ending an open turn
// at end.EndedAt. The writer sets TotalParts and TotalTurns from what it
// wrote, and FinalGitCommit to the last part's commit when empty. Finish
// may be called again (for example once the artifact URIs are known); it
// only rewrites the tail.
func (w *Writer) Finish(end SessionEnd, artifacts map[string]string) error {
	w.written = Chunk{}
	if w.err == nil {
		w.err = w.checkIntact()
	}
	if w.err != nil {
		return fmt.Errorf("finish: %w", w.err)
	}
	end.TotalParts, end.TotalTurns = w.lastPart, w.turns
	if end.FinalGitCommit == "" {
		end.FinalGitCommit = w.lastCommit
	}
	prev := w.saveTurnState()
	prevEnd, prevArt, prevFinished := w.sessionEnd, w.artifacts, w.finished
	w.buf = w.buf[:0]
	kind := ChunkTail
	if w.turnOpen {
		w.buf = w.appendTurnClose(w.buf, end.EndedAt)
		w.turnOpen = false
		kind = ChunkTurnEnd
	}
	w.sessionEnd = &end
	if artifacts != nil {
		w.artifacts = artifacts
	}
	w.finished = true
	if err := w.commit(kind, 0); err != nil {
		w.restoreTurnState(prev)
		w.sessionEnd, w.artifacts, w.finished = prevEnd, prevArt, prevFinished
		return fmt.Errorf("finish: %w", err)
	}
	return nil
}

// Close releases the files. The trace stays as last written; the shadow
// file stays beside it (it is rebuilt on OpenForAppend).
func (w *Writer) Close() error {
	return w.closeFiles()
}

// RemoveShadow closes the writer and deletes the shadow file, for a
// trajectory folder that is complete.
func (w *Writer) RemoveShadow() error {
	err := w.closeFiles()
	if rerr := os.Remove(w.shadowPath); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		return errors.Join(err, fmt.Errorf("remove trace shadow: %w", rerr))
	}
	return err
}

func (w *Writer) closeFiles() error {
	var errs []error
	if w.index != nil {
		if err := w.index.close(); err != nil {
			errs = append(errs, fmt.Errorf("close part index: %w", err))
		}
		w.index = nil
	}
	for i, f := range w.files {
		if f != nil {
			if err := f.Close(); err != nil {
				errs = append(errs, err)
			}
			w.files[i] = nil
		}
	}
	if w.err == nil {
		w.err = errors.New("writer is closed")
	}
	return errors.Join(errs...)
}

func (w *Writer) usable() error {
	w.written = Chunk{}
	if w.err != nil {
		return w.err
	}
	if err := w.checkIntact(); err != nil {
		w.err = err
		return err
	}
	if w.finished {
		return ErrFinished
	}
	return nil
}

type turnState struct {
	turns, lastTurn, turnParts, partStart int
	turnOpen                              bool
	trailing                              []json.RawMessage
}

func (w *Writer) saveTurnState() turnState {
	return turnState{w.turns, w.lastTurn, w.turnParts, w.partStart, w.turnOpen, w.trailing}
}

func (w *Writer) restoreTurnState(s turnState) {
	w.turns, w.lastTurn, w.turnParts, w.partStart, w.turnOpen, w.trailing =
		s.turns, s.lastTurn, s.turnParts, s.partStart, s.turnOpen, s.trailing
}

// encode marshals v without HTML escaping and without the trailing
// newline; the result is valid until the next encode.
func (w *Writer) encode(v any) ([]byte, error) {
	w.encBuf.Reset()
	if err := w.enc.Encode(v); err != nil {
		return nil, err
	}
	b := w.encBuf.Bytes()
	return b[:len(b)-1], nil
}

// appendTurnClose appends the fields after a turn's parts array and its
// closing brace.
func (w *Writer) appendTurnClose(b []byte, endedAt string) []byte {
	b = w.appendTurnFields(b)
	if endedAt != "" {
		b = append(b, `,"ended_at":`...)
		b = strconv.AppendQuote(b, endedAt)
	}
	return append(b, '}')
}

// appendTurnFields appends `],"trailing_parts":[…],"part_start":S,"part_end":E`.
func (w *Writer) appendTurnFields(b []byte) []byte {
	b = append(b, ']')
	if len(w.trailing) > 0 {
		b = append(b, `,"trailing_parts":[`...)
		for i, p := range w.trailing {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, p...)
		}
		b = append(b, ']')
	}
	if w.turnParts == 0 {
		return append(b, `,"part_start":null,"part_end":null`...)
	}
	b = append(b, `,"part_start":`...)
	b = strconv.AppendInt(b, int64(w.partStart), 10)
	b = append(b, `,"part_end":`...)
	return strconv.AppendInt(b, int64(w.lastPart), 10)
}

// buildTail returns the closing bytes for the current state into w.tail.
func (w *Writer) buildTail() []byte {
	t := w.tail[:0]
	if w.turnOpen {
		t = w.appendTurnFields(t)
		t = append(t, '}')
	}
	t = append(t, "\n],\"artifacts\":"...)
	ab, err := json.Marshal(w.artifacts)
	if err != nil { // a map[string]string always marshals
		ab = []byte("{}")
	}
	t = append(t, ab...)
	t = append(t, `,"session_end":`...)
	if w.sessionEnd == nil {
		t = append(t, "null"...)
	} else {
		sb, err := json.Marshal(w.sessionEnd)
		if err != nil {
			sb = []byte("null")
		}
		t = append(t, sb...)
	}
	t = append(t, "}\n"...)
	w.tail = t
	return t
}

// commit makes w.buf (new fixed bytes at stableEnd) plus the new tail the
// canonical document. The write goes to the shadow inode, which is then
// exchanged with the canonical name, then repeated on the other inode so
// both hold the same bytes again. A kill at any instant leaves the
// canonical name on a complete document: the old one before the exchange,
// the new one after it.
//
// The exchange is the point of no return: before it, an error leaves the
// canonical file as it was and the mutation is refused; after it, the
// canonical file holds the mutation, so commit succeeds whatever fails
// next (the caller, the writer and the file must agree). A shadow whose
// bytes are unknown (a failed write on either side of the exchange) is
// marked stale and rebuilt from the canonical file by the next mutation.
func (w *Writer) commit(kind ChunkKind, part int) error {
	w.written = Chunk{}
	if w.shadowStale {
		if err := w.rebuildShadow(); err != nil {
			return err
		}
	}
	fixed := len(w.buf)
	tail := w.buildTail()
	w.buf = append(w.buf, tail...)
	off := w.stableEnd
	newSize := off + int64(len(w.buf))

	shadow := w.files[1-w.canon]
	if err := w.writeShadow(shadow, off, newSize); err != nil {
		return err
	}
	if w.exchange {
		err := errExchangeUnsupported
		if !w.opts.noExchange {
			err = exchange(w.shadowPath, w.path)
		}
		switch {
		case err == nil:
			w.canon = 1 - w.canon
			w.afterExchange(off, newSize)
		case errors.Is(err, errExchangeUnsupported):
			w.opts.Logger.Warn("renameat2(RENAME_EXCHANGE) unsupported here; each trace write now copies the whole file (temp file + rename)",
				"path", w.path, "err", err)
			w.exchange = false
			w.shadowStale = false
			// From now on the shadow is the only working copy.
			if f := w.files[w.canon]; f != nil {
				f.Close()
			}
			w.files[w.canon] = nil
		default:
			w.err = fmt.Errorf("exchange trace files: %w", err)
			return w.err
		}
	}
	if !w.exchange {
		if err := w.copyRename(shadow, newSize); err != nil {
			w.err = err
			return err
		}
	}
	w.stableEnd += int64(fixed)
	w.size = newSize
	if err := w.stampFiles(); err != nil {
		w.err = err
		return err
	}
	w.emit(kind, part, off, w.buf[:fixed])
	return nil
}

// writeShadow writes the mutation into the shadow inode (and syncs it
// with Sync). On failure the canonical file is untouched: the shadow is
// marked stale (with RENAME_EXCHANGE) or the writer stops (without it,
// the shadow is the only working copy).
func (w *Writer) writeShadow(shadow *os.File, off, size int64) error {
	err := w.fault(faultWriteShadow)
	if err == nil {
		err = w.writeAt(shadow, off, size)
	}
	if err == nil && w.opts.Sync {
		if err = w.fault(faultSyncShadow); err == nil {
			err = fdatasync(shadow)
		}
		if err != nil {
			err = fmt.Errorf("sync trace shadow: %w", err)
		}
	}
	if err == nil {
		return nil
	}
	if w.exchange {
		w.shadowStale = true
	} else {
		w.err = err
	}
	return err
}

// afterExchange brings the former canonical inode (now the shadow) up to
// date. The mutation is already in the canonical file, so failures here
// are logged and repaired later, never returned.
func (w *Writer) afterExchange(off, size int64) {
	if !w.dirSynced {
		err := w.fault(faultSyncDir)
		if err == nil {
			err = syncDir(w.dir)
		}
		if err != nil {
			// Retried after the next exchange.
			w.opts.Logger.Warn("trace folder not synced; the trace holds the part but a power loss could lose the rename", "path", w.path, "err", err)
		} else {
			w.dirSynced = true
		}
	}
	err := w.fault(faultWriteOther)
	if err == nil {
		err = w.writeAt(w.files[1-w.canon], off, size)
	}
	if err != nil {
		w.opts.Logger.Warn("trace shadow not updated; it is rebuilt before the next write", "path", w.shadowPath, "err", err)
		w.shadowStale = true
	}
}

// rebuildShadow copies the canonical document over the shadow inode, whose
// bytes are unknown after a failed write. O(trace), once per fault.
func (w *Writer) rebuildShadow() error {
	shadow, canon := w.files[1-w.canon], w.files[w.canon]
	err := shadow.Truncate(0)
	if err == nil {
		_, err = io.Copy(io.NewOffsetWriter(shadow, 0), io.NewSectionReader(canon, 0, w.size))
	}
	if err != nil {
		return fmt.Errorf("rebuild trace shadow: %w", err)
	}
	w.shadowStale = false
	return nil
}

func (w *Writer) emit(kind ChunkKind, part int, off int64, data []byte) {
	w.written = Chunk{Kind: kind, Part: part, Offset: off, Data: data, Tail: w.tail}
	if w.opts.OnChunk != nil {
		w.opts.OnChunk(w.written)
	}
}

// Written returns what the last successful mutation (Create, BeginTurn,
// AppendPart, SetTrailingParts, EndTurn, Finish, a Reopen that changed
// the tail) made durable: its fixed bytes and the tail after them. Ask it
// right after that call returned: the chunk's buffers are the writer's
// and are reused by the next mutation. A call that failed or changed
// nothing leaves the zero Chunk (no Tail).
func (w *Writer) Written() Chunk { return w.written }

// writeAt writes w.buf at off and trims f to size.
func (w *Writer) writeAt(f *os.File, off, size int64) error {
	if _, err := f.WriteAt(w.buf, off); err != nil {
		return fmt.Errorf("write trace: %w", err)
	}
	if size < w.size {
		if err := f.Truncate(size); err != nil {
			return fmt.Errorf("truncate trace: %w", err)
		}
	}
	return nil
}

// copyRename is the fallback without RENAME_EXCHANGE: copy the whole
// working copy to a temp file and rename it over the trace. O(trace size).
func (w *Writer) copyRename(src *os.File, size int64) error {
	tmp, err := os.CreateTemp(w.dir, "."+filepath.Base(w.path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write trace copy: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, io.NewSectionReader(src, 0, size)); err != nil {
		tmp.Close()
		return fmt.Errorf("write trace copy: %w", err)
	}
	if w.opts.Sync {
		if err := tmp.Sync(); err != nil {
			tmp.Close()
			return fmt.Errorf("sync trace copy: %w", err)
		}
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write trace copy: %w", err)
	}
	if err := os.Rename(tmp.Name(), w.path); err != nil {
		return fmt.Errorf("replace trace: %w", err)
	}
	if w.opts.Sync {
		return syncDir(w.dir)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync folder %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync folder %s: %w", dir, err)
	}
	return nil
}
