package jsondec

import (
	"bytes"
	"encoding/json"
	"testing"
)

// stringCases are JSON strings (and not quite strings) whose decoding
// must equal encoding/json's.
var stringCases = []string{
	`""`, `"plain"`, `"a\nb\tc\"d\\e\/f\bg\fh\ri"`, `"\u00e9\u0041"`, `"é ∑ 😀"`,
	`"\ud83d\ude00"`, `"\ud83d"`, `"\ud83dx"`, `"\ud83d\u0041"`, `"\ude00\ud83d"`,
	`"\ud83d\ud83d\ude00"`, "\"\xff\xfe\"", "\"a\xc3\"", "\"\xed\xa0\x80\"",
	`"\x"`, `"\u12"`, `"\u12g4"`, "\"a\x01b\"", `"unterminated`, `"a\"`, `"\\"`,
	`"\\\""`, `x`, ``, `"` + string(bytes.Repeat([]byte("ab\\n"), 3000)) + `"`,
}

func TestStringLikeEncodingJSON(t *testing.T) {
	for _, c := range stringCases {
		checkString(t, []byte(c))
	}
}

func FuzzString(f *testing.F) {
	for _, c := range stringCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkString(t, data) })
}

// checkString: String reads a valid JSON string exactly as encoding/json
// does, and refuses everything encoding/json refuses.
func checkString(t *testing.T, data []byte) {
	t.Helper()
	got, end, ok := String(data, 0)
	var want string
	err := json.Unmarshal(data, &want)
	isString := len(data) > 0 && data[0] == '"'
	switch {
	case ok && end != len(data):
		// A string followed by more bytes: its own bytes must decode.
		if err := json.Unmarshal(data[:end], &want); err != nil || got != want {
			t.Fatalf("String(%q) = %q up to %d; encoding/json on that: %q, %v", data, got, end, want, err)
		}
	case ok:
		if err != nil || got != want {
			t.Fatalf("String(%q) = %q; encoding/json: %q, %v", data, got, want, err)
		}
	case err == nil && isString:
		t.Fatalf("String(%q) refused a string encoding/json reads as %q", data, want)
	}
}

var skipCases = []string{
	`0`, `-0`, `12.5e-3`, `1E+2`, `-`, `01`, `1.`, `.5`, `1e`, `true`, `false`, `null`, `nul`,
	`[]`, `{}`, `[1,2,[3,{"a":null}]]`, `{"a":1,"b":[true,false],"c":{"d":"e"}}`, `[1,]`, `{"a":1,}`,
	`{"a" 1}`, `{a:1}`, `[1 2]`, ` [ 1 , 2 ] `, `{"\u0061":1}`, `"s"`, `"\q"`, `{"a":"b"`,
	string(bytes.Repeat([]byte("["), 100)) + string(bytes.Repeat([]byte("]"), 100)),
}

func TestSkipLikeEncodingJSON(t *testing.T) {
	for _, c := range skipCases {
		checkSkip(t, []byte(c))
	}
}

func FuzzSkip(f *testing.F) {
	for _, c := range skipCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkSkip(t, data) })
}

// checkSkip: what Skip accepts is valid JSON; valid JSON of a plain key
// set and no deep nesting is accepted whole.
func checkSkip(t *testing.T, data []byte) {
	t.Helper()
	i := Space(data, 0)
	end, ok := Skip(data, i)
	if ok && !json.Valid(data[i:end]) {
		t.Fatalf("Skip accepted %q up to %d, which is not JSON", data, end)
	}
	if ok && End(data, end) != json.Valid(data) {
		t.Fatalf("Skip(%q) up to %d, End %v; json.Valid %v", data, end, End(data, end), json.Valid(data))
	}
	if !ok && json.Valid(data) && !bytes.Contains(data, []byte(`\`)) && !bytes.Contains(data, []byte("[[[[[[[[")) && !hasNonASCII(data) {
		t.Fatalf("Skip refused valid JSON %q", data)
	}
}

func hasNonASCII(data []byte) bool {
	for _, c := range data {
		if c >= 0x80 {
			return true
		}
	}
	return false
}

func TestNumbers(t *testing.T) {
	for _, tc := range []struct {
		in      string
		i64, ok bool
	}{
		{"0", true, true}, {"-12", true, true}, {"9223372036854775807", true, true},
		{"9223372036854775808", false, true}, {"1.5", false, true}, {"1e3", false, true},
		{"01", false, false}, {"-", false, false}, {"+1", false, false}, {"1.e2", false, false},
	} {
		_, endI, okI := Int64([]byte(tc.in), 0)
		okI = okI && endI == len(tc.in)
		var n int64
		errI := json.Unmarshal([]byte(tc.in), &n)
		if okI != tc.i64 || okI != (errI == nil) {
			t.Errorf("Int64(%q) ok %v, encoding/json %v", tc.in, okI, errI)
		}
		f, end, okF := Float64([]byte(tc.in), 0)
		var want float64
		errF := json.Unmarshal([]byte(tc.in), &want)
		if okF && end == len(tc.in) && (errF != nil || f != want) {
			t.Errorf("Float64(%q) = %v, encoding/json %v %v", tc.in, f, want, errF)
		}
		if (okF && end == len(tc.in)) != tc.ok {
			t.Errorf("Float64(%q) ok %v end %d, want ok %v", tc.in, okF, end, tc.ok)
		}
	}
}
