// Package jsondec decodes the JSON a trace holds at memory speed, with
// encoding/json's results: a reader that decodes every part of a long
// trace (an export) spends most of its time in encoding/json, which
// checks each value in one pass and decodes it in a second, through
// reflection.
//
// Every function takes data and the offset i of a value's first byte and
// returns the value and the offset after it. ok is false whenever the
// input is not the plain shape the function reads: invalid JSON, but
// also valid JSON it leaves to encoding/json (null, a nesting deeper than
// maxDepth, a number outside the type). A caller then decodes the whole
// value with encoding/json, so what it gets is always what encoding/json
// gives; when ok is true, encoding/json would have accepted the value and
// decoded it the same way (FuzzString, FuzzSkip check both).
//
// trace's own byte walker (trace.ObjectFields) is lenient on purpose: it
// finds where values are and checks none of them. This package checks
// every byte it reads.
package jsondec

import (
	"bytes"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth is how deep Skip follows nested arrays and objects before it
// leaves the value to encoding/json.
const maxDepth = 64

// Space returns the offset of the first byte at or after i that is not
// JSON whitespace.
func Space(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\n' || data[i] == '\r' || data[i] == '\t') {
		i++
	}
	return i
}

// End reports whether only whitespace follows offset i.
func End(data []byte, i int) bool { return Space(data, i) == len(data) }

// Object walks the object at data[i] (whitespace before it is skipped).
// For each member it calls member with the key and the offset of the
// value (after whitespace); member returns the offset after the value,
// or ok false. A key with an escape or a byte outside printable ASCII is
// not read (ok false): encoding/json matches keys after unescaping and
// case folding, which a caller comparing bytes would miss.
func Object(data []byte, i int, member func(key []byte, v int) (int, bool)) (int, bool) {
	return members(data, i, '{', '}', func(i int) (int, bool) {
		if data[i] != '"' {
			return 0, false
		}
		k := i + 1
		for k < len(data) && data[k] != '"' {
			if c := data[k]; c < 0x20 || c == '\\' || c >= utf8.RuneSelf {
				return 0, false
			}
			k++
		}
		if k >= len(data) {
			return 0, false
		}
		key := data[i+1 : k]
		i = Space(data, k+1)
		if i >= len(data) || data[i] != ':' {
			return 0, false
		}
		return member(key, Space(data, i+1))
	})
}

// Array walks the array at data[i] like Object, calling elem with the
// offset of each element.
func Array(data []byte, i int, elem func(v int) (int, bool)) (int, bool) {
	return members(data, i, '[', ']', elem)
}

// members walks the object or array at data[i] (open … close): the
// brackets and the commas between members; member is called at each
// member's first byte (i < len(data)) and returns where the member ends.
func members(data []byte, i int, open, close byte, member func(i int) (int, bool)) (int, bool) {
	i = Space(data, i)
	if i >= len(data) || data[i] != open {
		return 0, false
	}
	i = Space(data, i+1)
	if i < len(data) && data[i] == close {
		return i + 1, true
	}
	for {
		if i >= len(data) {
			return 0, false
		}
		end, ok := member(i)
		if !ok {
			return 0, false
		}
		i = Space(data, end)
		if i >= len(data) {
			return 0, false
		}
		switch data[i] {
		case close:
			return i + 1, true
		case ',':
			i = Space(data, i+1)
		default:
			return 0, false
		}
	}
}

// Skip checks the value at data[i] and returns the offset after it. It
// reads null too: a skipped value is not decoded.
func Skip(data []byte, i int) (int, bool) { return skip(data, i, 0) }

func skip(data []byte, i, depth int) (int, bool) {
	if i >= len(data) {
		return 0, false
	}
	switch c := data[i]; {
	case c == '"':
		return skipString(data, i)
	case c == '{':
		if depth >= maxDepth {
			return 0, false
		}
		return Object(data, i, func(_ []byte, v int) (int, bool) { return skip(data, v, depth+1) })
	case c == '[':
		if depth >= maxDepth {
			return 0, false
		}
		return Array(data, i, func(v int) (int, bool) { return skip(data, v, depth+1) })
	case c == '-' || c >= '0' && c <= '9':
		return number(data, i)
	}
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(data)-i >= len(lit) && string(data[i:i+len(lit)]) == lit {
			return i + len(lit), true
		}
	}
	return 0, false
}

// skipString checks the string at data[i] without decoding it.
func skipString(data []byte, i int) (int, bool) {
	for j := i + 1; j < len(data); j++ {
		switch c := data[j]; {
		case c == '"':
			return j + 1, true
		case c < 0x20:
			return 0, false
		case c == '\\':
			j++
			if j >= len(data) {
				return 0, false
			}
			switch data[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if _, ok := hex4(data, j+1); !ok {
					return 0, false
				}
				j += 4
			default:
				return 0, false
			}
		}
	}
	return 0, false
}

// number checks the JSON number at data[i] (RFC 8259's grammar) and
// returns the offset after it.
func number(data []byte, i int) (int, bool) {
	j := i
	if j < len(data) && data[j] == '-' {
		j++
	}
	switch {
	case j < len(data) && data[j] == '0':
		j++
	case j < len(data) && data[j] >= '1' && data[j] <= '9':
		j = digits(data, j)
	default:
		return 0, false
	}
	if j < len(data) && data[j] == '.' {
		k := digits(data, j+1)
		if k == j+1 {
			return 0, false
		}
		j = k
	}
	if j < len(data) && (data[j] == 'e' || data[j] == 'E') {
		j++
		if j < len(data) && (data[j] == '+' || data[j] == '-') {
			j++
		}
		k := digits(data, j)
		if k == j {
			return 0, false
		}
		j = k
	}
	return j, true
}

func digits(data []byte, j int) int {
	for j < len(data) && data[j] >= '0' && data[j] <= '9' {
		j++
	}
	return j
}

// Int64 reads the number at data[i] as encoding/json decodes it into an
// int64 (a number with a fraction or an exponent is not an int64).
func Int64(data []byte, i int) (int64, int, bool) {
	end, ok := number(data, i)
	if !ok {
		return 0, 0, false
	}
	n, err := strconv.ParseInt(string(data[i:end]), 10, 64)
	if err != nil {
		return 0, 0, false
	}
	return n, end, true
}

// Float64 reads the number at data[i] as encoding/json decodes it into a
// float64.
func Float64(data []byte, i int) (float64, int, bool) {
	end, ok := number(data, i)
	if !ok {
		return 0, 0, false
	}
	f, err := strconv.ParseFloat(string(data[i:end]), 64)
	if err != nil {
		return 0, 0, false
	}
	return f, end, true
}

// Bool reads true or false.
func Bool(data []byte, i int) (bool, int, bool) {
	switch {
	case len(data)-i >= 4 && string(data[i:i+4]) == "true":
		return true, i + 4, true
	case len(data)-i >= 5 && string(data[i:i+5]) == "false":
		return false, i + 5, true
	}
	return false, 0, false
}

// Raw checks the value at data[i] and returns a copy of its bytes, as
// encoding/json fills a json.RawMessage (null is left to encoding/json,
// which gives a RawMessage of "null" or leaves a pointer nil).
func Raw(data []byte, i int) ([]byte, int, bool) {
	if i < len(data) && data[i] == 'n' {
		return nil, 0, false
	}
	end, ok := Skip(data, i)
	if !ok {
		return nil, 0, false
	}
	return append([]byte(nil), data[i:end]...), end, true
}

// Strings reads an array of strings (an empty array is an empty, non-nil
// slice, as encoding/json makes it).
func Strings(data []byte, i int) ([]string, int, bool) {
	list := []string{}
	end, ok := Array(data, i, func(v int) (int, bool) {
		s, end, ok := String(data, v)
		list = append(list, s)
		return end, ok
	})
	return list, end, ok
}

// String decodes the string at data[i] as encoding/json decodes it into a
// Go string: escapes resolved, a \u escape of half a surrogate pair and
// every byte of invalid UTF-8 each replaced by U+FFFD. A string with no
// escape and only ASCII is copied in one piece.
func String(data []byte, i int) (string, int, bool) {
	if i >= len(data) || data[i] != '"' {
		return "", 0, false
	}
	j := i + 1
	for j < len(data) {
		c := data[j]
		if c == '"' {
			return string(data[i+1 : j]), j + 1, true
		}
		if c < 0x20 || c == '\\' || c >= utf8.RuneSelf {
			break
		}
		j++
	}
	// The decoded string is no longer than the quoted one (but for
	// invalid UTF-8, each byte of which becomes three): the builder is
	// sized by the next unescaped quote, without zeroing, and its bytes
	// are the string (no second copy).
	var b strings.Builder
	b.Grow(quotedLen(data, j) - i - 1)
	b.Write(data[i+1 : j])
	for j < len(data) {
		// A run of bytes that are their own value, written at once.
		k := j
		for k < len(data) {
			if c := data[k]; c < 0x20 || c == '\\' || c == '"' || c >= utf8.RuneSelf {
				break
			}
			k++
		}
		b.Write(data[j:k])
		if j = k; j >= len(data) {
			break
		}
		c := data[j]
		switch {
		case c == '"':
			return b.String(), j + 1, true
		case c < 0x20:
			return "", 0, false
		case c == '\\':
			if j+1 >= len(data) {
				return "", 0, false
			}
			switch e := data[j+1]; e {
			case '"', '\\', '/':
				b.WriteByte(e)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				r, ok := hex4(data, j+2)
				if !ok {
					return "", 0, false
				}
				j += 6
				if utf16.IsSurrogate(r) {
					// A pair only when a \u escape follows that completes
					// it; else the half is replaced and what follows is
					// read on its own.
					if len(data)-j >= 6 && data[j] == '\\' && data[j+1] == 'u' {
						if r2, ok := hex4(data, j+2); ok {
							if dec := utf16.DecodeRune(r, r2); dec != unicode.ReplacementChar {
								b.WriteRune(dec)
								j += 6
								continue
							}
						}
					}
					r = unicode.ReplacementChar
				}
				b.WriteRune(r)
				continue
			default:
				return "", 0, false
			}
			j += 2
		default:
			// Not ASCII: a valid rune as it is, each invalid byte as
			// U+FFFD.
			r, size := utf8.DecodeRune(data[j:])
			if r == utf8.RuneError && size == 1 {
				b.WriteRune(r)
			} else {
				b.Write(data[j : j+size])
			}
			j += size
		}
	}
	return "", 0, false
}

// quotedLen is the length up to the first quote at or after j that no
// backslash escapes (len(data) when there is none): a bound on a string's
// decoded length.
func quotedLen(data []byte, j int) int {
	for j < len(data) {
		q := bytes.IndexByte(data[j:], '"')
		if q < 0 {
			return len(data)
		}
		q += j
		n := 0
		for k := q - 1; k >= j && data[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return q
		}
		j = q + 1
	}
	return len(data)
}

// hex4 reads the four hex digits at data[i].
func hex4(data []byte, i int) (rune, bool) {
	if len(data)-i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range data[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// Fields walks the object at data[i] as encoding/json fills a struct
// whose JSON keys are keys: set is called with the key (as keys spells
// it) and the offset of its value. An unknown key's value is checked
// and skipped, but one that differs from a known key only in case is not
// read (encoding/json would match it), nor is a key given twice
// (encoding/json keeps the last, or merges objects). It reads structs of
// at most 64 keys.
func Fields(data []byte, i int, keys []string, set func(key string, v int) (int, bool)) (int, bool) {
	if len(keys) > 64 {
		return 0, false
	}
	var seen uint64
	return Object(data, i, func(key []byte, v int) (int, bool) {
		for k, name := range keys {
			if string(key) == name {
				if seen&(1<<k) != 0 {
					return 0, false
				}
				seen |= 1 << k
				return set(name, v)
			}
		}
		for _, name := range keys {
			if strings.EqualFold(string(key), name) {
				return 0, false
			}
		}
		return Skip(data, v)
	})
}
