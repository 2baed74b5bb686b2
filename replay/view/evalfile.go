package view

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/trajlab/traj/replay"
)

// evalReport is the part of a stored evaluate report the pages read:
// part_evaluations and test_attribution. It decodes itself from the
// report's bytes (ref.LoadEvaluation hands an io.ReaderFrom the stream),
// walking the top-level object and passing over every other key without
// decoding it. commit_evaluations repeats every case of every commit, so
// it is nearly all of a long trajectory's report (10,000 parts, 3,058
// cases, a commit every 140 parts: 31 of 34 MB); decoding the whole
// replay.Output took 0.7–0.9 s and held it all in memory. The parts of
// one commit carry the same part evaluation, decoded once and shared, as
// replay.Evaluate shares it.
type evalReport struct {
	out replay.Output
}

// ReadFrom decodes the report from r.
func (e *evalReport) ReadFrom(r io.Reader) (int64, error) {
	s := &jsonScan{r: r, buf: make([]byte, 0, 256<<10)}
	err := e.read(s)
	if err != nil {
		err = fmt.Errorf("decode evaluation at byte %d: %w", s.off+int64(s.pos), err)
	}
	return s.off + int64(s.pos), err
}

func (e *evalReport) read(s *jsonScan) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	return s.members(func(key string) (err error) {
		// Keys match as encoding/json matches them: case folded.
		switch {
		case strings.EqualFold(key, "part_evaluations"):
			err = e.readParts(s)
		case strings.EqualFold(key, "labels"):
			var raw []byte
			if raw, err = s.value(true); err == nil {
				e.out.Labels = append(json.RawMessage(nil), raw...)
			}
		case strings.EqualFold(key, "test_attribution"):
			var raw []byte
			if raw, err = s.value(true); err == nil {
				err = json.Unmarshal(raw, &e.out.TestAttribution)
			}
		default:
			_, err = s.value(false)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		return nil
	})
}

// readParts decodes part_evaluations one part at a time, each distinct
// value once.
func (e *evalReport) readParts(s *jsonScan) error {
	if c, err := s.peek(); err != nil || c != '{' { // null, or not an object: the plain decoder says which
		raw, err := s.value(true)
		if err != nil {
			return err
		}
		return json.Unmarshal(raw, &e.out.PartEvaluations)
	}
	s.pos++
	e.out.PartEvaluations = replay.PartMap[*replay.PartEvaluation]{}
	seen := map[string]*replay.PartEvaluation{}
	return s.members(func(key string) error {
		part, err := strconv.Atoi(key)
		if err != nil {
			return fmt.Errorf("part %q: not a number", key)
		}
		raw, err := s.value(true)
		if err != nil {
			return err
		}
		pe, ok := seen[string(raw)]
		if !ok {
			if err := json.Unmarshal(raw, &pe); err != nil {
				return fmt.Errorf("part %d: %w", part, err)
			}
			seen[string(raw)] = pe
		}
		e.out.PartEvaluations[part] = pe
		return nil
	})
}

// members calls fn with each member's key of the object whose '{' was
// read, the scan at the member's value, up to its '}'.
func (s *jsonScan) members(fn func(key string) error) error {
	for first := true; ; first = false {
		c, err := s.peek()
		if err != nil {
			return err
		}
		if c == '}' {
			s.pos++
			return nil
		}
		if !first {
			if err := s.expect(','); err != nil {
				return err
			}
		}
		key, err := s.key()
		if err != nil {
			return err
		}
		if err := fn(key); err != nil {
			return err
		}
	}
}

// jsonScan walks JSON text from a reader a buffer at a time, finding
// where values end without decoding them.
type jsonScan struct {
	r   io.Reader
	buf []byte
	pos int
	off int64 // offset of buf[0] in the stream
	eof bool
	// kept collects a captured value's bytes across buffer refills.
	kept []byte
}

var errTruncated = errors.New("unexpected end of the report")

// plain are the bytes that neither open nor close anything outside a
// string at the top (letters, digits, colons), inner those inside a
// container (white space and commas too: most of an indented report);
// stringSpecial are the bytes that matter inside a string.
var plain, inner, stringSpecial = func() (p, in, q [256]bool) {
	for c := range 256 {
		p[c], in[c] = true, true
	}
	for _, c := range []byte("\"{}[]") {
		p[c], in[c] = false, false
	}
	for _, c := range []byte(", \t\n\r") {
		p[c] = false
	}
	q['"'], q['\\'] = true, true
	return p, in, q
}()

// fill reads more input after the unread bytes; false at the end.
func (s *jsonScan) fill() (bool, error) {
	if s.eof {
		return false, nil
	}
	if s.pos > 0 {
		n := copy(s.buf, s.buf[s.pos:])
		s.off += int64(s.pos)
		s.buf, s.pos = s.buf[:n], 0
	}
	if len(s.buf) == cap(s.buf) {
		s.buf = append(s.buf, 0)[:len(s.buf)]
	}
	n, err := s.r.Read(s.buf[len(s.buf):cap(s.buf)])
	s.buf = s.buf[:len(s.buf)+n]
	switch {
	case errors.Is(err, io.EOF):
		s.eof = true
	case err != nil:
		return false, err
	}
	return n > 0 || !s.eof, nil
}

// peek skips white space and returns the next byte without taking it.
func (s *jsonScan) peek() (byte, error) {
	for {
		for s.pos < len(s.buf) {
			switch c := s.buf[s.pos]; c {
			case ' ', '\t', '\n', '\r':
				s.pos++
			default:
				return c, nil
			}
		}
		more, err := s.fill()
		if err != nil {
			return 0, err
		}
		if !more {
			return 0, errTruncated
		}
	}
}

func (s *jsonScan) expect(want byte) error {
	c, err := s.peek()
	if err != nil {
		return err
	}
	if c != want {
		return fmt.Errorf("found %q where %q belongs", c, want)
	}
	s.pos++
	return nil
}

// key reads an object key and its colon.
func (s *jsonScan) key() (string, error) {
	if c, err := s.peek(); err != nil || c != '"' {
		if err == nil {
			err = fmt.Errorf("found %q where a key belongs", c)
		}
		return "", err
	}
	raw, err := s.value(true)
	if err != nil {
		return "", err
	}
	var k string
	if err := json.Unmarshal(raw, &k); err != nil {
		return "", err
	}
	return k, s.expect(':')
}

// value passes over the next value; with keep it returns its bytes (valid
// until the next call).
func (s *jsonScan) value(keep bool) ([]byte, error) {
	if _, err := s.peek(); err != nil {
		return nil, err
	}
	s.kept = s.kept[:0]
	depth, inString, escaped := 0, false, false
	start := s.pos
	for {
		for ; s.pos < len(s.buf); s.pos++ {
			c := s.buf[s.pos]
			if !inString && (plain[c] || depth > 0 && inner[c]) {
				continue
			}
			if inString {
				if !escaped && !stringSpecial[c] {
					continue
				}
				switch {
				case escaped:
					escaped = false
				case c == '\\':
					escaped = true
				case c == '"':
					inString = false
					if depth == 0 {
						s.pos++
						return s.take(start, keep), nil
					}
				}
				continue
			}
			switch c {
			case '"':
				inString = true
			case '{', '[':
				depth++
			case '}', ']':
				if depth == 0 { // a number or literal ends at its container's end
					return s.take(start, keep), nil
				}
				if depth--; depth == 0 {
					s.pos++
					return s.take(start, keep), nil
				}
			case ',', ' ', '\t', '\n', '\r':
				if depth == 0 {
					return s.take(start, keep), nil
				}
			}
		}
		if keep {
			s.kept = append(s.kept, s.buf[start:s.pos]...)
		}
		more, err := s.fill()
		if err != nil {
			return nil, err
		}
		if !more { // the report is an object: no value of it ends the text
			return nil, errTruncated
		}
		start = s.pos
	}
}

func (s *jsonScan) take(start int, keep bool) []byte {
	if !keep {
		return nil
	}
	if len(s.kept) == 0 {
		return s.buf[start:s.pos]
	}
	s.kept = append(s.kept, s.buf[start:s.pos]...)
	return bytes.Clone(s.kept)
}
