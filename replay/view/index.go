package view

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"time"

	"github.com/trajlab/traj/replay/report"
	"github.com/trajlab/traj/sandbox/agent"
	"github.com/trajlab/traj/sandbox/harness"
	"github.com/trajlab/traj/trace"
)

// PartLoc is where one part sits in the trace file, and the few facts the
// timeline and the curves need without reading it again.
type PartLoc struct {
	Off  int64 // byte offset of the part's '{'
	Len  int32 // bytes up to and including its '}'
	Part int32
	Turn int32 // index of its turn in the turns array
	// Session is an index into Index.Sessions.
	Session int32
	// Time is the part's timestamp in Unix milliseconds (0: unknown).
	Time      int64
	Committed bool
}

// Session is one agent session seen in the trace: the root or a sub-agent.
type Session struct {
	ID     string `json:"id"`
	Parent string `json:"parent,omitempty"`
	Title  string `json:"title,omitempty"`
	Depth  int    `json:"depth"`
	// First and Last are the session's first and last part numbers.
	First int `json:"first_part,omitempty"`
	Last  int `json:"last_part,omitempty"`
}

// TurnInfo is a turn's own fields.
type TurnInfo struct {
	Turn      int    `json:"turn"`
	Timestamp string `json:"timestamp,omitempty"`
	PartStart *int   `json:"part_start"`
	PartEnd   *int   `json:"part_end"`
	EndedAt   string `json:"ended_at,omitempty"`
}

// CallPoint is one run_tests result recorded in the trace.
type CallPoint struct {
	Part   int
	Suite  string
	Passed int
	Total  int
}

// Index locates every part of one trace file by byte offset, so a page of
// parts is a few ReadAt calls, and keeps what the store page and the
// curves need. It is built by one streaming pass and extended by reading
// only the bytes appended since (a trace grows by rewriting a short tail
// after its last part; everything before that tail never changes).
type Index struct {
	Header   trace.Header
	Parts    []PartLoc
	Turns    []TurnInfo
	Sessions []Session
	// Calls are the trace's run_tests results, in part order.
	Calls []CallPoint
	// Ground are the parts' ground-truth results, in the order they
	// landed (session_end's are in End).
	Ground []trace.GroundTruth
	// End is session_end; nil while the trajectory is being recorded.
	End       *trace.SessionEnd
	Artifacts map[string]string
	// PartTokens and PartCost sum the parts' usage; Usage gives the
	// trajectory's totals (session_end's win).
	PartTokens *trace.Tokens
	PartCost   *float64
	// LastCommit is the git_commit of the last part.
	LastCommit string

	// Size is the file size the index was built from.
	Size int64
	// FullScans and ResumedScans count how the index was built (tests and
	// the benchmark check that growth is read incrementally).
	FullScans, ResumedScans int
	// FromCache says the index was read from the cache folder, not built.
	FromCache bool

	// LastSum is the CRC of the last part's bytes: resuming requires them
	// unchanged at the same offset.
	LastSum uint32

	sessionIdx map[string]int32
}

// reader reads the trace's harness objects (sandbox/harness, by the
// trace's "agent").
func (ix *Index) reader() agent.Reader { return harness.Reader(ix.Header.Agent) }

// Usage returns the trajectory's token and cost totals.
func (ix *Index) Usage() (*trace.Tokens, *float64) {
	var u trace.Usage
	u.AddPart(&trace.Part{Tokens: ix.PartTokens, Cost: ix.PartCost})
	u.End(ix.End)
	return u.Tokens(), u.Cost()
}

// Update brings ix up to date with the trace in f (size bytes): it reads
// only what follows the last indexed part when those bytes are unchanged,
// else the whole file again. On error ix is left as it was.
func (ix *Index) Update(f io.ReaderAt, size int64) error {
	if size == ix.Size && ix.Size > 0 {
		return nil
	}
	if n := len(ix.Parts); n > 0 && size > ix.Size {
		last := ix.Parts[n-1]
		buf := make([]byte, last.Len)
		if _, err := f.ReadAt(buf, last.Off); err == nil && crc32.ChecksumIEEE(buf) == ix.LastSum {
			resumed := ix.clone()
			if err := resumed.scan(f, size, true); err == nil {
				*ix = *resumed
				ix.ResumedScans++
				return nil
			}
		}
	}
	fresh := &Index{FullScans: ix.FullScans + 1, ResumedScans: ix.ResumedScans}
	if err := fresh.scan(f, size, false); err != nil {
		return err
	}
	*ix = *fresh
	return nil
}

// clone copies ix so that a resumed scan leaves ix as it was. Parts, Calls
// and Ground only grow: the clone shares their arrays and appends past ix's
// length, which ix never reads. Turns and sessions are changed in place,
// so they are copied (they are few).
func (ix *Index) clone() *Index {
	c := *ix
	if ix.PartTokens != nil {
		t := *ix.PartTokens
		c.PartTokens = &t
	}
	if ix.PartCost != nil {
		v := *ix.PartCost
		c.PartCost = &v
	}
	c.Turns = append([]TurnInfo(nil), ix.Turns...)
	c.Sessions = append([]Session(nil), ix.Sessions...)
	c.sessionIdx = nil // rebuilt from Sessions by scan
	return &c
}

// readChunk is the read size of a scan.
const readChunk = 1 << 20

// stream reads a trace through a window that grows to hold the value
// being read, so memory is bounded by the largest part, not the trace.
type stream struct {
	f    io.ReaderAt
	size int64
	buf  []byte
	base int64 // file offset of buf[0]
	pos  int   // read position in buf
}

// fill reads more of the file into the window, dropping what lies before
// keep (an index into buf); it reports false at the end of the file.
func (s *stream) fill(keep int) (bool, error) {
	next := s.base + int64(len(s.buf))
	if next >= s.size {
		return false, nil
	}
	if keep > 0 {
		n := copy(s.buf, s.buf[keep:])
		s.buf = s.buf[:n]
		s.base += int64(keep)
		s.pos -= keep
	}
	want := int(min(int64(max(readChunk, len(s.buf))), s.size-next))
	if cap(s.buf)-len(s.buf) < want {
		nb := make([]byte, len(s.buf), len(s.buf)+want)
		copy(nb, s.buf)
		s.buf = nb
	}
	n, err := s.f.ReadAt(s.buf[len(s.buf):len(s.buf)+want], next)
	s.buf = s.buf[:len(s.buf)+n]
	if err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	return n > 0, nil
}

// peek skips white space and returns the next byte.
func (s *stream) peek() (byte, error) {
	for {
		s.pos = skipSpace(s.buf, s.pos)
		if s.pos < len(s.buf) {
			return s.buf[s.pos], nil
		}
		more, err := s.fill(s.pos)
		if err != nil {
			return 0, err
		}
		if !more {
			return 0, fmt.Errorf("at byte %d: %w", s.base+int64(s.pos), io.ErrUnexpectedEOF)
		}
	}
}

func (s *stream) expect(c byte) error {
	got, err := s.peek()
	if err != nil {
		return err
	}
	if got != c {
		return fmt.Errorf("at byte %d: want %q, got %q: %w", s.base+int64(s.pos), c, got, errSyntax)
	}
	s.pos++
	return nil
}

// value returns the next JSON value's bytes (valid until the next read)
// and its file offset.
func (s *stream) value() ([]byte, int64, error) {
	if _, err := s.peek(); err != nil {
		return nil, 0, err
	}
	for {
		end, err := skipValue(s.buf, s.pos)
		if err == nil && (end < len(s.buf) || s.base+int64(end) >= s.size) {
			v, off := s.buf[s.pos:end], s.base+int64(s.pos)
			s.pos = end
			return v, off, nil
		}
		if err != nil && !errors.Is(err, errShort) {
			return nil, 0, fmt.Errorf("at byte %d: %w", s.base+int64(s.pos), err)
		}
		// A value cut by the window's end (or a number that may go on):
		// read more and look again.
		more, ferr := s.fill(s.pos)
		if ferr != nil {
			return nil, 0, ferr
		}
		if !more {
			if err == nil {
				v, off := s.buf[s.pos:end], s.base+int64(s.pos)
				s.pos = end
				return v, off, nil
			}
			return nil, 0, fmt.Errorf("at byte %d: %w", s.base+int64(s.pos), io.ErrUnexpectedEOF)
		}
	}
}

// key reads an object key and its colon.
func (s *stream) key() (string, error) {
	v, off, err := s.value()
	if err != nil {
		return "", err
	}
	var k string
	if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &k) != nil {
		return "", fmt.Errorf("at byte %d: want an object key: %w", off, errSyntax)
	}
	return k, s.expect(':')
}

// more reads the separator after an element of an object or array: true
// if another element follows, false at close.
func (s *stream) more(close byte, first *bool) (bool, error) {
	c, err := s.peek()
	if err != nil {
		return false, err
	}
	if c == close {
		s.pos++
		return false, nil
	}
	if *first {
		*first = false
		return true, nil
	}
	if c != ',' {
		return false, fmt.Errorf("at byte %d: want ',' or %q, got %q: %w", s.base+int64(s.pos), close, c, errSyntax)
	}
	s.pos++
	return true, nil
}

// scanner walks a trace: the top-level object, its turns, their parts.
type scanner struct {
	ix *Index
	s  *stream
}

func (ix *Index) scan(f io.ReaderAt, size int64, resume bool) error {
	if ix.sessionIdx == nil {
		ix.sessionIdx = make(map[string]int32, len(ix.Sessions))
		for i, s := range ix.Sessions {
			ix.sessionIdx[s.ID] = int32(i)
		}
	}
	st := &stream{f: f, size: size}
	if resume {
		last := ix.Parts[len(ix.Parts)-1]
		st.base = last.Off + int64(last.Len)
	}
	sc := &scanner{ix: ix, s: st}
	if err := sc.doc(resume); err != nil {
		return err
	}
	ix.Size = size
	if n := len(ix.Parts); n > 0 {
		last := ix.Parts[n-1]
		buf := make([]byte, last.Len)
		if _, err := f.ReadAt(buf, last.Off); err != nil {
			return fmt.Errorf("read part %d: %w", last.Part, err)
		}
		ix.LastSum = crc32.ChecksumIEEE(buf)
	}
	return nil
}

// doc walks the top-level object. Resuming, the stream starts inside the
// last turn's parts array, right after its last indexed part.
func (sc *scanner) doc(resume bool) error {
	var top bytes.Buffer
	top.WriteByte('{')
	add := func(k string, raw []byte) {
		if top.Len() > 1 {
			top.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		top.Write(kb)
		top.WriteByte(':')
		top.Write(raw)
	}
	first := true
	if resume {
		ti := len(sc.ix.Turns) - 1
		if err := sc.parts(ti, false); err != nil {
			return err
		}
		if err := sc.turnRest(ti, false); err != nil {
			return err
		}
		if err := sc.turnList(false); err != nil {
			return err
		}
		first = false
	} else if err := sc.s.expect('{'); err != nil {
		return err
	}
	for {
		ok, err := sc.s.more('}', &first)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		k, err := sc.s.key()
		if err != nil {
			return err
		}
		if k == "turns" {
			c, err := sc.s.peek()
			if err != nil {
				return err
			}
			if c != '[' {
				if _, _, err := sc.s.value(); err != nil { // null
					return err
				}
				continue
			}
			sc.s.pos++
			if err := sc.turnList(true); err != nil {
				return err
			}
			continue
		}
		raw, _, err := sc.s.value()
		if err != nil {
			return err
		}
		if k == "agent" {
			// Known before the turns: the parts' session objects are read
			// by the harness it names.
			_ = json.Unmarshal(raw, &sc.ix.Header.Agent)
		}
		add(k, raw)
	}
	top.WriteByte('}')
	var t trace.Trace
	if err := json.Unmarshal(top.Bytes(), &t); err != nil {
		return fmt.Errorf("trace fields: %w", err)
	}
	if h := t.Header(); h.TrajectoryID != "" || h.Agent != "" || h.StartedAt != "" {
		sc.ix.Header = h
	}
	sc.ix.End, sc.ix.Artifacts = t.SessionEnd, t.Artifacts
	return nil
}

// turnList reads turns up to the end of the turns array.
func (sc *scanner) turnList(first bool) error {
	for {
		ok, err := sc.s.more(']', &first)
		if err != nil || !ok {
			return err
		}
		if err := sc.s.expect('{'); err != nil {
			return err
		}
		sc.ix.Turns = append(sc.ix.Turns, TurnInfo{})
		if err := sc.turnRest(len(sc.ix.Turns)-1, true); err != nil {
			return err
		}
	}
}

// turnRest reads a turn's remaining keys up to its closing brace.
func (sc *scanner) turnRest(ti int, first bool) error {
	for {
		ok, err := sc.s.more('}', &first)
		if err != nil || !ok {
			return err
		}
		k, err := sc.s.key()
		if err != nil {
			return err
		}
		if k == "parts" {
			c, err := sc.s.peek()
			if err != nil {
				return err
			}
			if c != '[' {
				if _, _, err := sc.s.value(); err != nil { // null
					return err
				}
				continue
			}
			sc.s.pos++
			if err := sc.parts(ti, true); err != nil {
				return err
			}
			continue
		}
		raw, _, err := sc.s.value()
		if err != nil {
			return err
		}
		t := &sc.ix.Turns[ti]
		switch k {
		case "turn":
			_ = json.Unmarshal(raw, &t.Turn)
		case "timestamp":
			_ = json.Unmarshal(raw, &t.Timestamp)
		case "part_start":
			t.PartStart = nil
			_ = json.Unmarshal(raw, &t.PartStart)
		case "part_end":
			t.PartEnd = nil
			_ = json.Unmarshal(raw, &t.PartEnd)
		case "ended_at":
			_ = json.Unmarshal(raw, &t.EndedAt)
		}
	}
}

// parts reads parts up to the end of a parts array.
func (sc *scanner) parts(ti int, first bool) error {
	for {
		ok, err := sc.s.more(']', &first)
		if err != nil || !ok {
			return err
		}
		raw, off, err := sc.s.value()
		if err != nil {
			return err
		}
		if err := sc.ix.addPart(ti, off, raw); err != nil {
			return err
		}
	}
}

// indexedPart is what indexing decodes of a part: everything but its
// content, which is read again only when the part is shown.
type indexedPart struct {
	Part           int                   `json:"part"`
	Timestamp      string                `json:"timestamp"`
	Sessions       []json.RawMessage     `json:"sessions"`
	SessionIDs     []string              `json:"session_ids"`
	SessionID      string                `json:"session_id"`
	EnvoiCalls     []trace.EnvoiCall     `json:"envoi_calls"`
	RepoCheckpoint *trace.RepoCheckpoint `json:"repo_checkpoint"`
	GitCommit      string                `json:"git_commit"`
	Tokens         *trace.Tokens         `json:"tokens"`
	Cost           *float64              `json:"cost"`
	GroundTruth    []trace.GroundTruth   `json:"ground_truth"`
}

// indexedKeys are the part fields indexing decodes.
var indexedKeys = map[string]bool{"part": true, "timestamp": true, "sessions": true, "session_ids": true, "session_id": true,
	"envoi_calls": true, "repo_checkpoint": true, "git_commit": true, "tokens": true, "cost": true, "ground_truth": true}

// decodeIndexed decodes the indexed fields of a part, skipping the rest
// (content, other parts, messages) without decoding it.
func decodeIndexed(raw []byte) (indexedPart, error) {
	var p indexedPart
	buf := make([]byte, 0, 1024)
	buf = append(buf, '{')
	err := objectFields(raw, func(key, val []byte) error {
		if !indexedKeys[string(key)] {
			return nil
		}
		if len(buf) > 1 {
			buf = append(buf, ',')
		}
		buf = append(buf, '"')
		buf = append(buf, key...)
		buf = append(buf, '"', ':')
		buf = append(buf, val...)
		return nil
	})
	if err != nil {
		return p, err
	}
	buf = append(buf, '}')
	err = json.Unmarshal(buf, &p)
	return p, err
}

func (ix *Index) addPart(turn int, off int64, raw []byte) error {
	p, err := decodeIndexed(raw)
	if err != nil {
		return fmt.Errorf("part at byte %d: %w", off, err)
	}
	r := ix.reader()
	for _, rs := range p.Sessions {
		if si, ok := r.Session(rs); ok && si.ID != "" {
			ix.session(si.ID, si.ParentID, si.Title)
		}
	}
	sid := p.SessionID
	if sid == "" && len(p.SessionIDs) > 0 {
		sid = p.SessionIDs[0]
	}
	loc := PartLoc{Off: off, Len: int32(len(raw)), Part: int32(p.Part), Turn: int32(turn), Session: ix.session(sid, "", "")}
	if ts, err := time.Parse(time.RFC3339Nano, p.Timestamp); err == nil {
		loc.Time = ts.UnixMilli()
	}
	if p.RepoCheckpoint != nil && p.RepoCheckpoint.Committed {
		loc.Committed = true
	}
	if p.GitCommit != "" {
		ix.LastCommit = p.GitCommit
	}
	ix.Parts = append(ix.Parts, loc)
	if se := &ix.Sessions[loc.Session]; se.First == 0 || p.Part < se.First {
		se.First = p.Part
	}
	if se := &ix.Sessions[loc.Session]; p.Part > se.Last {
		se.Last = p.Part
	}
	if p.Tokens != nil {
		if ix.PartTokens == nil {
			ix.PartTokens = &trace.Tokens{}
		}
		ix.PartTokens.Add(*p.Tokens)
	}
	if p.Cost != nil {
		if ix.PartCost == nil {
			ix.PartCost = new(float64)
		}
		*ix.PartCost += *p.Cost
	}
	ix.Ground = append(ix.Ground, p.GroundTruth...)
	for _, c := range p.EnvoiCalls {
		if s, ok := report.ParseCall(c); ok {
			ix.Calls = append(ix.Calls, CallPoint{Part: p.Part, Suite: s.Suite, Passed: s.Passed, Total: s.Total})
		}
	}
	return nil
}

// session returns the index of session id, adding it (and its parent link
// and title, when first known) as needed. Depth follows the parent chain.
func (ix *Index) session(id, parent, title string) int32 {
	if i, ok := ix.sessionIdx[id]; ok {
		s := &ix.Sessions[i]
		if s.Parent == "" && parent != "" && parent != id {
			s.Parent = parent
			s.Depth = ix.depth(parent) + 1
		}
		if s.Title == "" {
			s.Title = title
		}
		return i
	}
	s := Session{ID: id, Parent: parent, Title: title}
	if parent != "" && parent != id {
		s.Depth = ix.depth(parent) + 1
	}
	ix.Sessions = append(ix.Sessions, s)
	i := int32(len(ix.Sessions) - 1)
	ix.sessionIdx[id] = i
	return i
}

func (ix *Index) depth(id string) int {
	if i, ok := ix.sessionIdx[id]; ok {
		return ix.Sessions[i].Depth
	}
	return 0
}

// Find returns the position in Parts of part number n.
func (ix *Index) Find(n int) (int, bool) {
	// Parts are 1..N without gaps in a valid trace; fall back to a search
	// for anything else.
	if n >= 1 && n <= len(ix.Parts) && int(ix.Parts[n-1].Part) == n {
		return n - 1, true
	}
	for i, p := range ix.Parts {
		if int(p.Part) == n {
			return i, true
		}
	}
	return 0, false
}

// ReadPart reads the raw bytes of the part at position i.
func (ix *Index) ReadPart(f io.ReaderAt, i int) ([]byte, error) {
	loc := ix.Parts[i]
	buf := make([]byte, loc.Len)
	if _, err := f.ReadAt(buf, loc.Off); err != nil {
		return nil, fmt.Errorf("read part %d: %w", loc.Part, err)
	}
	return buf, nil
}
