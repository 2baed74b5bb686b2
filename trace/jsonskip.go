package trace

import (
	"bytes"
	"errors"
)

// errSyntax is malformed JSON; errShort is input that ends inside a value
// (the scan reads more and tries again).
var (
	errSyntax = errors.New("malformed JSON")
	errShort  = errors.New("JSON value cut short")
)

// The byte-level JSON walking of ScanOffsets and ObjectFields (moved here
// from the viewer's index, its first user: one owner for reading a trace
// by byte offset).

// ObjectFields calls fn with each key and raw value of the JSON object in
// data, without decoding the values: indexing reads a handful of small
// fields of each part and skips its content, which is most of its bytes,
// at memory speed instead of through encoding/json. It checks the
// object's own commas and colons, not its values: a caller that trusts a
// value decodes it (the export does, part by part); keys with
// escapes are passed still escaped, which never matches the plain keys
// the index asks for.
func ObjectFields(data []byte, fn func(key, val []byte) error) error {
	return members(data, '{', '}', func(i int) (int, error) {
		if data[i] != '"' {
			return 0, errSyntax
		}
		end, err := skipString(data, i)
		if err != nil {
			return 0, err
		}
		key := data[i+1 : end-1]
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return 0, errSyntax
		}
		i = skipSpace(data, i+1)
		vend, err := skipValue(data, i)
		if err != nil {
			return 0, err
		}
		return vend, fn(key, data[i:vend])
	})
}

// ArrayValues calls fn with each raw value of the JSON array in data,
// without decoding them, checking the array's own commas (not its
// values, as ObjectFields).
func ArrayValues(data []byte, fn func(val []byte) error) error {
	return members(data, '[', ']', func(i int) (int, error) {
		vend, err := skipValue(data, i)
		if err != nil {
			return 0, err
		}
		return vend, fn(data[i:vend])
	})
}

// members walks the object or array in data (open ... close): it checks
// the brackets and the commas between members, and calls member at each
// member's first byte (i < len(data)), which returns where the member
// ends. It reads nothing after the closing bracket.
func members(data []byte, open, close byte, member func(i int) (int, error)) error {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != open {
		return errSyntax
	}
	i++
	for first := true; ; first = false {
		i = skipSpace(data, i)
		if i >= len(data) {
			return errSyntax
		}
		if data[i] == close {
			return nil
		}
		if !first {
			// After a member: its comma.
			if data[i] != ',' {
				return errSyntax
			}
			if i = skipSpace(data, i+1); i >= len(data) {
				return errSyntax
			}
		}
		next, err := member(i)
		if err != nil {
			return err
		}
		i = next
	}
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\n' || data[i] == '\r' || data[i] == '\t') {
		i++
	}
	return i
}

// skipString returns the offset after the string starting at data[i]. It
// jumps from quote to quote (bytes.IndexByte: most of a trace's bytes
// are long strings); a quote ends the string unless an odd run of
// backslashes precedes it.
func skipString(data []byte, i int) (int, error) {
	for j := i + 1; j < len(data); {
		q := bytes.IndexByte(data[j:], '"')
		if q < 0 {
			break
		}
		q += j
		n := 0
		for k := q - 1; k > i && data[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return q + 1, nil
		}
		j = q + 1
	}
	return 0, errShort
}

// StringEnd returns the offset after the JSON string starting at data[i]
// (a quote), jumping from quote to quote as the walk does; it does not
// check the string's escapes. ok is false when the string is not closed.
func StringEnd(data []byte, i int) (end int, ok bool) {
	end, err := skipString(data, i)
	return end, err == nil
}

// skipValue returns the offset after the value starting at data[i].
func skipValue(data []byte, i int) (int, error) {
	if i >= len(data) {
		return 0, errShort
	}
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				end, err := skipString(data, j)
				if err != nil {
					return 0, err
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, errShort
	default: // number, true, false, null
		j := i
		for j < len(data) && data[j] != ',' && data[j] != '}' && data[j] != ']' && data[j] != ' ' && data[j] != '\n' && data[j] != '\r' && data[j] != '\t' {
			j++
		}
		if j == i {
			return 0, errSyntax
		}
		if j == len(data) {
			// A number may go on in the next read; the caller decides.
			return j, nil
		}
		return j, nil
	}
}
