package trace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// OffsetVisitor receives a trace file's pieces by byte offset, as
// ScanOffsets walks it without decoding the parts: each callback gets the
// raw bytes of one value (valid only during the call). Nil callbacks are
// skipped. An error from a callback stops the walk and is returned.
type OffsetVisitor struct {
	// Field is a top-level field other than turns.
	Field func(key string, raw []byte) error
	// Turns is called at the top-level turns key, before its value.
	Turns func() error
	// TurnBegin is called when turn ti's object starts (ti: its position
	// in the turns array, from 0).
	TurnBegin func(ti int) error
	// TurnField is a field of turn ti other than parts.
	TurnField func(ti int, key string, raw []byte) error
	// TurnParts is called at turn ti's parts key, before its value;
	// TurnEnd after the turn's closing brace.
	TurnParts func(ti int) error
	TurnEnd   func(ti int) error
	// Part is a part of turn ti, starting at byte off of the file.
	Part func(ti int, off int64, raw []byte) error
	// End is called once the top-level object has closed, with the
	// offset just after its '}': what follows is the caller's to check
	// (a live trace may show stale bytes there for an instant while the
	// writer cuts its tail; a finished one has only white space).
	End func(off int64) error
}

// ScanFrom says where ScanOffsets starts: the zero value is the start of
// the file; After > 0 resumes right after a part that ends at byte After
// (exclusive) inside the parts array of turn Turn — the rest of a trace
// that grew since it was last read, since everything before its closing
// tail never changes.
type ScanFrom struct {
	After int64
	Turn  int
}

// scanChunk is the read size of ScanOffsets.
const scanChunk = 256 << 10

// ScanOffsets walks the trace in f (size bytes) from from, calling v. It
// reads through a window that grows to hold the value being read, so its
// memory is bounded by the largest part, not the trace. A trace whose
// turns or parts are null is walked as empty.
func ScanOffsets(f io.ReaderAt, size int64, from ScanFrom, v OffsetVisitor) error {
	st := &byteStream{f: f, size: size, base: from.After}
	sc := &offsetScanner{s: st, v: v, turns: from.Turn}
	if err := sc.doc(from); err != nil {
		return err
	}
	if v.End != nil {
		return v.End(st.base + int64(st.pos))
	}
	return nil
}

// byteStream reads a trace through a window that grows to hold the value
// being read.
type byteStream struct {
	f    io.ReaderAt
	size int64
	buf  []byte
	base int64 // file offset of buf[0]
	pos  int   // read position in buf
}

// fill reads more of the file into the window, dropping what lies before
// keep (an index into buf); it reports false at the end of the file.
func (s *byteStream) fill(keep int) (bool, error) {
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
	want := int(min(int64(max(scanChunk, len(s.buf))), s.size-next))
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
func (s *byteStream) peek() (byte, error) {
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

func (s *byteStream) expect(c byte) error {
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

// openArray opens the array that is the next value, or skips a null:
// whether an array was opened. Any other value is malformed (turns and
// parts are arrays).
func (s *byteStream) openArray() (bool, error) {
	c, err := s.peek()
	if err != nil {
		return false, err
	}
	if c != '[' {
		v, off, err := s.value()
		if err == nil && string(v) != "null" {
			err = fmt.Errorf("at byte %d: want an array or null: %w", off, errSyntax)
		}
		return false, err
	}
	s.pos++
	return true, nil
}

// value returns the next JSON value's bytes (valid until the next read)
// and its file offset.
func (s *byteStream) value() ([]byte, int64, error) {
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
func (s *byteStream) key() (string, error) {
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
func (s *byteStream) more(close byte, first *bool) (bool, error) {
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

// offsetScanner walks a trace: the top-level object, its turns, their parts.
type offsetScanner struct {
	s     *byteStream
	v     OffsetVisitor
	turns int // turns begun so far (the next turn's position)
}

// doc walks the top-level object. Resuming, the stream starts inside the
// parts array of turn from.Turn, right after a part.
func (sc *offsetScanner) doc(from ScanFrom) error {
	first := true
	if from.After > 0 {
		sc.turns = from.Turn + 1
		if err := sc.parts(from.Turn, false); err != nil {
			return err
		}
		if err := sc.turnRest(from.Turn, false); err != nil {
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
		if err != nil || !ok {
			return err
		}
		k, err := sc.s.key()
		if err != nil {
			return err
		}
		if k == "turns" {
			if sc.v.Turns != nil {
				if err := sc.v.Turns(); err != nil {
					return err
				}
			}
			opened, err := sc.s.openArray()
			if err != nil {
				return err
			}
			if opened {
				if err := sc.turnList(true); err != nil {
					return err
				}
			}
			continue
		}
		raw, _, err := sc.s.value()
		if err != nil {
			return err
		}
		if sc.v.Field != nil {
			if err := sc.v.Field(k, raw); err != nil {
				return err
			}
		}
	}
}

// turnList reads turns up to the end of the turns array.
func (sc *offsetScanner) turnList(first bool) error {
	for {
		ok, err := sc.s.more(']', &first)
		if err != nil || !ok {
			return err
		}
		if err := sc.s.expect('{'); err != nil {
			return err
		}
		ti := sc.turns
		sc.turns++
		if sc.v.TurnBegin != nil {
			if err := sc.v.TurnBegin(ti); err != nil {
				return err
			}
		}
		if err := sc.turnRest(ti, true); err != nil {
			return err
		}
	}
}

// turnRest reads a turn's remaining keys up to its closing brace.
func (sc *offsetScanner) turnRest(ti int, first bool) error {
	for {
		ok, err := sc.s.more('}', &first)
		if err != nil {
			return err
		}
		if !ok {
			if sc.v.TurnEnd != nil {
				return sc.v.TurnEnd(ti)
			}
			return nil
		}
		k, err := sc.s.key()
		if err != nil {
			return err
		}
		if k == "parts" {
			if sc.v.TurnParts != nil {
				if err := sc.v.TurnParts(ti); err != nil {
					return err
				}
			}
			opened, err := sc.s.openArray()
			if err != nil {
				return err
			}
			if opened {
				if err := sc.parts(ti, true); err != nil {
					return err
				}
			}
			continue
		}
		raw, _, err := sc.s.value()
		if err != nil {
			return err
		}
		if sc.v.TurnField != nil {
			if err := sc.v.TurnField(ti, k, raw); err != nil {
				return err
			}
		}
	}
}

// parts reads parts up to the end of a parts array.
func (sc *offsetScanner) parts(ti int, first bool) error {
	for {
		ok, err := sc.s.more(']', &first)
		if err != nil || !ok {
			return err
		}
		raw, off, err := sc.s.value()
		if err != nil {
			return err
		}
		if sc.v.Part != nil {
			if err := sc.v.Part(ti, off, raw); err != nil {
				return err
			}
		}
	}
}
