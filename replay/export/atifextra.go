package export

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/trajlab/traj/trace"
)

// A part's ATIF extra (partExtra) is written on the read's decoders, as
// the bytes json.Marshal gives for it, and spliced into its entry: the
// one goroutine that writes entries then only copies it. Marshal would
// check and copy every verbatim value again (content, other_parts), which
// made the writer the slowest part of an ATIF export.

// marshalPartExtra is json.Marshal(partExtra(p, turns, turn)): the map's
// keys in sorted order, each value as Marshal writes it, a verbatim value
// copied as it is when Marshal would copy it unchanged (canonicalJSON).
func marshalPartExtra(p *trace.Part, turns []trace.Turn, turn int) ([]byte, error) {
	x := partExtra(p, turns, turn)
	keys := make([]string, 0, len(x))
	for k := range x {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	// Sized for the verbatim values (most of the bytes): growing a
	// buffer of a few KB by doubling cleared and copied it part by part.
	size := 512 + len(p.Content) + sumLen(p.OtherParts) + sumLen(p.Sessions) + sumLen(p.NewMessages) +
		len(p.OtherParts) + len(p.Sessions) + len(p.NewMessages)
	var b bytes.Buffer
	b.Grow(size)
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		if err := writeValue(&b, x[k]); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func writeValue(b *bytes.Buffer, v any) error {
	switch v := v.(type) {
	case json.RawMessage:
		return writeRaw(b, v)
	case []json.RawMessage:
		b.WriteByte('[')
		for i, r := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeRaw(b, r); err != nil {
				return err
			}
		}
		b.WriteByte(']')
		return nil
	}
	out, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b.Write(out)
	return nil
}

// writeRaw writes a verbatim value as json.Marshal writes a
// json.RawMessage: compacted, HTML-escaped, "null" when empty.
func writeRaw(b *bytes.Buffer, r json.RawMessage) error {
	if len(r) > 0 && canonicalJSON(r) {
		b.Write(r)
		return nil
	}
	out, err := json.Marshal(r)
	if err != nil {
		return err
	}
	b.Write(out)
	return nil
}

// canonicalJSON says json.Marshal writes the valid JSON r unchanged: no
// white space outside its strings, nothing it escapes for HTML (<, >, &,
// U+2028, U+2029). Most of r is string content (a tool's output), so it
// is searched a byte value at a time (bytes.IndexByte) rather than walked
// byte by byte.
func canonicalJSON(r []byte) bool {
	for _, c := range []byte{'<', '>', '&'} {
		if bytes.IndexByte(r, c) >= 0 {
			return false
		}
	}
	for i := 0; ; {
		k := bytes.IndexByte(r[i:], 0xE2)
		if k < 0 {
			break
		}
		i += k
		if i+2 < len(r) && r[i+1] == 0x80 && r[i+2]&^1 == 0xA8 {
			return false
		}
		i++
	}
	// White space: only between strings, found from quote to quote.
	for i := 0; i < len(r); {
		q := bytes.IndexByte(r[i:], '"')
		outside := r[i:]
		if q >= 0 {
			outside = r[i : i+q]
		}
		for _, c := range outside {
			if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				return false
			}
		}
		if q < 0 {
			break
		}
		end, ok := trace.StringEnd(r, i+q)
		if !ok {
			return true // unterminated: not valid JSON, never given
		}
		i = end
	}
	return true
}

// marshalEntry is json.Marshal(ent) with the entry's traj parts, already
// marshalled, spliced in as extra.traj.parts.
func marshalEntry(ent *atifEntry, traj map[string]any, parts [][]byte) ([]byte, error) {
	// Marshal with a placeholder; the traj map's keys are written in
	// order, so the parts are followed by the session id alone.
	traj["parts"] = json.RawMessage("0")
	ent.Extra = map[string]any{"traj": traj}
	b, err := json.Marshal(ent)
	if err != nil {
		return nil, err
	}
	sid, err := json.Marshal(traj["session_id"])
	if err != nil {
		return nil, err
	}
	tail := append(append([]byte(`"parts":0,"session_id":`), sid...), "}}}"...)
	if !bytes.HasSuffix(b, tail) {
		// Not the shape expected: Marshal does it all.
		raws := make([]json.RawMessage, len(parts))
		for i, p := range parts {
			raws[i] = p
		}
		traj["parts"] = raws
		return json.Marshal(ent)
	}
	n := len(b) - len(tail) + len(`"parts":`)
	out := make([]byte, 0, len(b)+sumLen(parts)+len(parts)+2)
	out = append(out, b[:n]...)
	out = append(out, '[')
	for i, p := range parts {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, p...)
	}
	out = append(out, ']')
	return append(out, b[n+1:]...), nil
}

// sumLen is the bytes of a list of byte slices (parts, raw values).
func sumLen[T ~[]byte](parts []T) int {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	return n
}
