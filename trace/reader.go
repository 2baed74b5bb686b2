package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Header holds the top-level fields of a trace that come before its turns:
// everything but turns, artifacts and session_end.
type Header struct {
	SchemaVersion string           `json:"schema_version,omitempty"`
	TrajectoryID  string           `json:"trajectory_id"`
	SessionID     string           `json:"session_id"`
	Agent         string           `json:"agent"`
	AgentModel    string           `json:"agent_model"`
	StartedAt     string           `json:"started_at"`
	Task          string           `json:"task,omitempty"`
	Environment   *EnvironmentInfo `json:"environment,omitempty"`
	Capture       *CaptureRules    `json:"capture,omitempty"`
	RerunOf       *Lineage         `json:"rerun_of,omitempty"`
	ForkedFrom    *Lineage         `json:"forked_from,omitempty"`
}

// Header returns the header fields of t.
func (t *Trace) Header() Header {
	return Header{
		SchemaVersion: t.SchemaVersion, TrajectoryID: t.TrajectoryID, SessionID: t.SessionID,
		Agent: t.Agent, AgentModel: t.AgentModel, StartedAt: t.StartedAt,
		Task: t.Task, Environment: t.Environment, Capture: t.Capture, RerunOf: t.RerunOf, ForkedFrom: t.ForkedFrom,
	}
}

// Visitor receives a trace as Scan walks it. Any callback may be nil.
// Returning an error stops the walk; Scan returns that error unchanged.
type Visitor struct {
	// OnHeader is called once, when the turns begin (or at the end of a
	// trace without turns). Header fields that appear after "turns" in a
	// foreign trace are only in the Trace passed to OnEnd.
	OnHeader func(h *Header) error
	// OnPart is called for each part, in document order; turn is the index
	// of its turn in the turns array (0-based).
	OnPart func(turn int, p *Part) error
	// OnTurn is called after each turn's closing brace with the turn's own
	// fields; t.Parts is empty (the parts went to OnPart).
	OnTurn func(index int, t *Turn) error
	// OnEnd is called once at the end with every top-level field; Turns is
	// empty.
	OnEnd func(t *Trace) error
}

// ScanError is a malformed trace: bad JSON syntax (Path is "$" or the
// innermost known container, Offset the byte offset) or a value of the
// wrong type at Path.
type ScanError struct {
	Path   string // JSON path, e.g. $.turns[2].parts[0].part
	Offset int64  // byte offset in the input where reading stopped
	Err    error
}

func (e *ScanError) Error() string {
	return fmt.Sprintf("%s (byte offset %d): %v", e.Path, e.Offset, e.Err)
}

func (e *ScanError) Unwrap() error { return e.Err }

// Scan walks a trace from r with bounded memory: one part at a time is
// held, never the whole document. It accepts traces written by traj and by
// the original recorder (any key order, traj additions optional).
func Scan(r io.Reader, v Visitor) error {
	return walk(r, walkHooks{
		header: v.OnHeader,
		part: func(loc partLoc) error {
			if v.OnPart == nil {
				return nil
			}
			var p Part
			if err := json.Unmarshal(loc.raw, &p); err != nil {
				return loc.decodeError(err)
			}
			return v.OnPart(loc.turn, &p)
		},
		turn: func(loc turnLoc) error {
			if v.OnTurn == nil {
				return nil
			}
			var t Turn
			if err := json.Unmarshal(loc.raw, &t); err != nil {
				return loc.decodeError(err)
			}
			return v.OnTurn(loc.index, &t)
		},
		end: func(loc docLoc) error {
			// The top-level fields are decoded even with no OnEnd (they
			// are small: turns stand as []), so a field of the wrong type
			// is an error for every reader, as it is for Read.
			var t Trace
			if err := json.Unmarshal(loc.raw, &t); err != nil {
				return decodeError("$", loc.end, err)
			}
			if v.OnEnd == nil {
				return nil
			}
			return v.OnEnd(&t)
		},
	})
}

// Read loads a whole trace. It decodes the input once, part by part.
func Read(r io.Reader) (*Trace, error) {
	var tr Trace
	var parts []Part
	err := Scan(r, Visitor{
		OnPart: func(_ int, p *Part) error { parts = append(parts, *p); return nil },
		OnTurn: func(_ int, t *Turn) error {
			t.Parts = parts
			if t.Parts == nil {
				t.Parts = []Part{}
			}
			parts = nil
			tr.Turns = append(tr.Turns, *t)
			return nil
		},
		OnEnd: func(t *Trace) error {
			turns := tr.Turns
			tr = *t
			tr.Turns = turns
			if tr.Turns == nil {
				tr.Turns = []Turn{}
			}
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	return &tr, nil
}

// walkHooks are the internal callbacks of walk; they see raw bytes and
// byte offsets, which the writer needs to resume and the validator needs
// for schema checks.
type walkHooks struct {
	header func(h *Header) error
	part   func(loc partLoc) error
	turn   func(loc turnLoc) error
	end    func(loc docLoc) error
}

type partLoc struct {
	turn, index int
	raw         json.RawMessage // valid only during the callback
	end         int64           // offset just after the part
}

func (l partLoc) path() string {
	return "$.turns[" + strconv.Itoa(l.turn) + "].parts[" + strconv.Itoa(l.index) + "]"
}

func (l partLoc) decodeError(err error) error { return decodeError(l.path(), l.end, err) }

type turnLoc struct {
	index      int
	raw        json.RawMessage // the turn with "parts":[]
	nparts     int
	partsOpen  int64 // offset just after the parts array's '['
	partsEnd   int64 // offset just after the last part, or partsOpen
	end        int64 // offset just after the turn's '}'
	keysBefore []string
	keysAfter  []string // keys after "parts"
	hasParts   bool
}

func (l turnLoc) path() string { return "$.turns[" + strconv.Itoa(l.index) + "]" }

func (l turnLoc) decodeError(err error) error { return decodeError(l.path(), l.end, err) }

type docLoc struct {
	raw        json.RawMessage // the top-level object with "turns":[]
	turnsOpen  int64
	turnsEnd   int64 // offset just after the last turn, or turnsOpen
	nturns     int
	keysBefore []string
	keysAfter  []string // keys after "turns"
	hasTurns   bool
	turnsNull  bool // "turns": null
	end        int64
}

func decodeError(path string, off int64, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		path += "." + te.Field
		err = fmt.Errorf("%s is a JSON %s, want %s", te.Field, te.Value, te.Type)
	}
	return &ScanError{Path: path, Offset: off, Err: err}
}

// countingReader counts bytes read so an unexpected EOF reports where the
// input stopped.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

type walker struct {
	cr  *countingReader
	dec *json.Decoder
	h   walkHooks
}

// ObjectBuilder reassembles an object from its fields, in order: how
// Scan (and a byte walk that stands in for it, the export's) decodes a
// turn's or the trace's own fields without their parts.
type ObjectBuilder struct{ buf bytes.Buffer }

// Reset empties it for another object.
func (b *ObjectBuilder) Reset() { b.buf.Reset() }

// Add appends the field key with its raw JSON value.
func (b *ObjectBuilder) Add(key string, raw []byte) {
	if b.buf.Len() == 0 {
		b.buf.WriteByte('{')
	} else {
		b.buf.WriteByte(',')
	}
	k, _ := json.Marshal(key)
	b.buf.Write(k)
	b.buf.WriteByte(':')
	b.buf.Write(raw)
}

// Bytes returns the object (a copy).
func (b *ObjectBuilder) Bytes() []byte {
	if b.buf.Len() == 0 {
		return []byte("{}")
	}
	out := append([]byte(nil), b.buf.Bytes()...)
	return append(out, '}')
}

func walk(r io.Reader, h walkHooks) error {
	w := &walker{cr: &countingReader{r: r}, h: h}
	w.dec = json.NewDecoder(w.cr)
	return w.doc()
}

// syntax turns a decoder error into a ScanError at path.
func (w *walker) syntax(path string, err error) error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return &ScanError{Path: path, Offset: se.Offset, Err: fmt.Errorf("invalid JSON: %w", err)}
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return &ScanError{Path: path, Offset: w.cr.n, Err: fmt.Errorf("truncated JSON: input ends at byte %d inside the document", w.cr.n)}
	}
	var ute *json.UnmarshalTypeError
	if errors.As(err, &ute) {
		return &ScanError{Path: path, Offset: w.dec.InputOffset(), Err: err}
	}
	return &ScanError{Path: path, Offset: w.dec.InputOffset(), Err: err}
}

func (w *walker) token(path string) (json.Token, error) {
	tok, err := w.dec.Token()
	if err != nil {
		return nil, w.syntax(path, err)
	}
	return tok, nil
}

func (w *walker) expectDelim(path string, d json.Delim, what string) error {
	tok, err := w.token(path)
	if err != nil {
		return err
	}
	if got, ok := tok.(json.Delim); !ok || got != d {
		return &ScanError{Path: path, Offset: w.dec.InputOffset(), Err: fmt.Errorf("%s: want %q, got %s", what, string(d), describe(tok))}
	}
	return nil
}

func describe(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		return strconv.Quote(string(v))
	case string:
		return "string " + strconv.Quote(v)
	case nil:
		return "null"
	default:
		return fmt.Sprintf("%T %v", v, v)
	}
}

func (w *walker) key(path string) (string, error) {
	tok, err := w.token(path)
	if err != nil {
		return "", err
	}
	k, ok := tok.(string)
	if !ok {
		return "", &ScanError{Path: path, Offset: w.dec.InputOffset(), Err: fmt.Errorf("want an object key, got %s", describe(tok))}
	}
	return k, nil
}

func (w *walker) raw(path string) (json.RawMessage, error) {
	var raw json.RawMessage
	if err := w.dec.Decode(&raw); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			// Decode reports offsets relative to its internal buffer;
			// rescan the unread value from its start to place the error.
			start := w.dec.InputOffset()
			var again json.RawMessage
			if err2 := json.NewDecoder(w.dec.Buffered()).Decode(&again); errors.As(err2, &se) {
				return nil, &ScanError{Path: path, Offset: start + se.Offset - 1, Err: fmt.Errorf("invalid JSON: %w", err2)}
			}
		}
		return nil, w.syntax(path, err)
	}
	return raw, nil
}

func (w *walker) doc() error {
	if err := w.expectDelim("$", '{', "a trace is a JSON object"); err != nil {
		return err
	}
	var top ObjectBuilder
	loc := docLoc{}
	headerDone := false
	emitHeader := func() error {
		if headerDone {
			return nil
		}
		headerDone = true
		if w.h.header == nil {
			return nil
		}
		var hd Header
		if err := json.Unmarshal(top.Bytes(), &hd); err != nil {
			return decodeError("$", w.dec.InputOffset(), err)
		}
		return w.h.header(&hd)
	}
	for w.dec.More() {
		k, err := w.key("$")
		if err != nil {
			return err
		}
		if k != "turns" {
			raw, err := w.raw("$." + k)
			if err != nil {
				return err
			}
			top.Add(k, raw)
			if loc.hasTurns {
				loc.keysAfter = append(loc.keysAfter, k)
			} else {
				loc.keysBefore = append(loc.keysBefore, k)
			}
			continue
		}
		if err := emitHeader(); err != nil {
			return err
		}
		if err := w.turns(&loc); err != nil {
			return err
		}
		top.Add("turns", []byte("[]"))
	}
	if err := w.expectDelim("$", '}', "end of the trace object"); err != nil {
		return err
	}
	loc.end = w.dec.InputOffset()
	if tok, err := w.dec.Token(); err != io.EOF {
		if err != nil {
			serr := w.syntax("$", err).(*ScanError)
			serr.Err = fmt.Errorf("unexpected data after the trace object: %w", serr.Err)
			return serr
		}
		return &ScanError{Path: "$", Offset: w.dec.InputOffset(), Err: fmt.Errorf("unexpected %s after the trace object", describe(tok))}
	}
	if err := emitHeader(); err != nil {
		return err
	}
	loc.raw = top.Bytes()
	if w.h.end != nil {
		return w.h.end(loc)
	}
	return nil
}

func (w *walker) turns(loc *docLoc) error {
	tok, err := w.token("$.turns")
	if err != nil {
		return err
	}
	loc.hasTurns = true
	if tok == nil { // "turns": null
		loc.turnsNull = true
		loc.turnsOpen = w.dec.InputOffset()
		loc.turnsEnd = loc.turnsOpen
		return nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return &ScanError{Path: "$.turns", Offset: w.dec.InputOffset(), Err: fmt.Errorf("turns: want an array, got %s", describe(tok))}
	}
	loc.turnsOpen = w.dec.InputOffset()
	loc.turnsEnd = loc.turnsOpen
	for i := 0; w.dec.More(); i++ {
		end, err := w.turn(i)
		if err != nil {
			return err
		}
		loc.turnsEnd = end
		loc.nturns++
	}
	return w.expectDelim("$.turns", ']', "end of turns")
}

func (w *walker) turn(i int) (int64, error) {
	loc := turnLoc{index: i}
	path := loc.path()
	if err := w.expectDelim(path, '{', "a turn is a JSON object"); err != nil {
		return 0, err
	}
	var obj ObjectBuilder
	for w.dec.More() {
		k, err := w.key(path)
		if err != nil {
			return 0, err
		}
		if k != "parts" {
			raw, err := w.raw(path + "." + k)
			if err != nil {
				return 0, err
			}
			obj.Add(k, raw)
			if loc.hasParts {
				loc.keysAfter = append(loc.keysAfter, k)
			} else {
				loc.keysBefore = append(loc.keysBefore, k)
			}
			continue
		}
		loc.hasParts = true
		if err := w.parts(&loc); err != nil {
			return 0, err
		}
		obj.Add("parts", []byte("[]"))
	}
	if err := w.expectDelim(path, '}', "end of turn"); err != nil {
		return 0, err
	}
	loc.end = w.dec.InputOffset()
	loc.raw = obj.Bytes()
	if w.h.turn != nil {
		if err := w.h.turn(loc); err != nil {
			return 0, err
		}
	}
	return loc.end, nil
}

func (w *walker) parts(loc *turnLoc) error {
	path := loc.path() + ".parts"
	tok, err := w.token(path)
	if err != nil {
		return err
	}
	if tok == nil {
		loc.partsOpen = w.dec.InputOffset()
		loc.partsEnd = loc.partsOpen
		return nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return &ScanError{Path: path, Offset: w.dec.InputOffset(), Err: fmt.Errorf("parts: want an array, got %s", describe(tok))}
	}
	loc.partsOpen = w.dec.InputOffset()
	loc.partsEnd = loc.partsOpen
	for j := 0; w.dec.More(); j++ {
		pl := partLoc{turn: loc.index, index: j}
		raw, err := w.raw(pl.path())
		if err != nil {
			return err
		}
		pl.raw = raw
		pl.end = w.dec.InputOffset()
		loc.partsEnd = pl.end
		loc.nparts++
		if w.h.part != nil {
			if err := w.h.part(pl); err != nil {
				return err
			}
		}
	}
	return w.expectDelim(path, ']', "end of parts")
}
