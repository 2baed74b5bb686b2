package view

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"time"

	"github.com/trajlab/traj/replay/report"
	"github.com/trajlab/traj/sandbox/agent"
	"github.com/trajlab/traj/sandbox/harness/recorded"
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
	// Cost is the trajectory's cost up to and including this part (US
	// dollars, the parts' own costs), for curves by cost.
	Cost float64
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
	// Tools counts the parts per tool name (the trace's "tool" field),
	// for the timeline's tool filter.
	Tools map[string]int

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
func (ix *Index) reader() agent.Reader { return recorded.Reader(ix.Header.Agent) }

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
	c.Tools = maps.Clone(ix.Tools)
	c.Sessions = append([]Session(nil), ix.Sessions...)
	c.sessionIdx = nil // rebuilt from Sessions by scan
	return &c
}

func (ix *Index) scan(f io.ReaderAt, size int64, resume bool) error {
	if ix.sessionIdx == nil {
		ix.sessionIdx = make(map[string]int32, len(ix.Sessions))
		for i, s := range ix.Sessions {
			ix.sessionIdx[s.ID] = int32(i)
		}
	}
	var from trace.ScanFrom
	if resume {
		last := ix.Parts[len(ix.Parts)-1]
		from = trace.ScanFrom{After: last.Off + int64(last.Len), Turn: len(ix.Turns) - 1}
	}
	// The top-level fields are gathered and decoded once at the end.
	var top bytes.Buffer
	top.WriteByte('{')
	err := trace.ScanOffsets(f, size, from, trace.OffsetVisitor{
		Field: func(k string, raw []byte) error {
			if k == "agent" {
				// Known before the turns: the parts' session objects are
				// read by the harness it names.
				_ = json.Unmarshal(raw, &ix.Header.Agent)
			}
			if top.Len() > 1 {
				top.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			top.Write(kb)
			top.WriteByte(':')
			top.Write(raw)
			return nil
		},
		TurnBegin: func(int) error {
			ix.Turns = append(ix.Turns, TurnInfo{})
			return nil
		},
		TurnField: func(ti int, k string, raw []byte) error {
			t := &ix.Turns[ti]
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
			return nil
		},
		Part: func(ti int, off int64, raw []byte) error { return ix.addPart(ti, off, raw) },
	})
	if err != nil {
		return err
	}
	top.WriteByte('}')
	var t trace.Trace
	if err := json.Unmarshal(top.Bytes(), &t); err != nil {
		return fmt.Errorf("trace fields: %w", err)
	}
	if h := t.Header(); h.TrajectoryID != "" || h.Agent != "" || h.StartedAt != "" {
		ix.Header = h
	}
	ix.End, ix.Artifacts = t.SessionEnd, t.Artifacts
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
	Tool           string                `json:"tool"`
}

// indexedKeys are the part fields indexing decodes.
var indexedKeys = map[string]bool{"part": true, "timestamp": true, "sessions": true, "session_ids": true, "session_id": true,
	"envoi_calls": true, "repo_checkpoint": true, "git_commit": true, "tokens": true, "cost": true, "ground_truth": true, "tool": true}

// decodeIndexed decodes the indexed fields of a part, skipping the rest
// (content, other parts, messages) without decoding it.
func decodeIndexed(raw []byte) (indexedPart, error) {
	var p indexedPart
	buf := make([]byte, 0, 1024)
	buf = append(buf, '{')
	err := trace.ObjectFields(raw, func(key, val []byte) error {
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
	if p.Tool != "" {
		if ix.Tools == nil {
			ix.Tools = map[string]int{}
		}
		ix.Tools[p.Tool]++
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
	if ix.PartCost != nil {
		ix.Parts[len(ix.Parts)-1].Cost = *ix.PartCost
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
