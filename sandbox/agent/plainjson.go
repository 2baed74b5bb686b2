package agent

import (
	"bytes"
	"encoding/json"
)

// PlainJSON is the JSON value raw written one way whatever harness
// recorded it: compact, with <, > and & as themselves rather than the
// \u003c, \u003e, \u0026 escapes Go's encoder writes (the recorded
// arguments of some harnesses carry them, others not), so readers (the
// Parquet export's tool_input, the viewer) show every harness's
// arguments alike and a query matching "<" finds them all. raw that is
// not valid JSON is returned as it is.
func PlainJSON(raw []byte) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return raw
	}
	b := buf.Bytes()
	if !bytes.Contains(b, []byte(`\u00`)) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c != '\\' || i+1 >= len(b) {
			out = append(out, c)
			continue
		}
		// An escape: \uXXXX of <, > or & becomes the character; any
		// other (\\ included) is kept whole, so an escaped backslash
		// before "u003c" stays text.
		if b[i+1] == 'u' && i+5 < len(b) && b[i+2] == '0' && b[i+3] == '0' {
			if r, ok := htmlEscaped(b[i+4], b[i+5]); ok {
				out = append(out, r)
				i += 5
				continue
			}
		}
		out = append(out, c, b[i+1])
		i++
	}
	return out
}

// htmlEscaped is the character of the escape \u00XY when it is one Go
// writes for HTML safety.
func htmlEscaped(x, y byte) (byte, bool) {
	switch {
	case x == '3' && (y == 'c' || y == 'C'):
		return '<', true
	case x == '3' && (y == 'e' || y == 'E'):
		return '>', true
	case x == '2' && y == '6':
		return '&', true
	}
	return 0, false
}
