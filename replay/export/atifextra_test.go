package export

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzCanonicalJSON: canonicalJSON says exactly whether json.Marshal
// writes a valid JSON value unchanged (writeRaw copies it then).
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{
		`{"a":1}`, `{"a": 1}`, `[1,2]`, "[1,\n2]", `"a b"`, `"<tag>"`, `"a\u2028b"`, "\"a\u2028b\"", "\"a\u2029\"",
		`"\\"`, `"\\\" x"`, `{"k":"v \" w","n":[true,false,null]}`, `{"k":"\\\\"} `, ` 1`, `"é ü"`, "\"\xe2\x80\xa7\"",
		`{"output":"line 1\nline 2\t\"quoted\" & more"}`, `{"a":"x"}` + "\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, r []byte) {
		if len(r) == 0 || !json.Valid(r) {
			return
		}
		out, err := json.Marshal(json.RawMessage(r))
		if err != nil {
			t.Fatal(err)
		}
		if want := bytes.Equal(out, r); canonicalJSON(r) != want {
			t.Errorf("canonicalJSON(%q) = %v, json.Marshal gives %q", r, !want, out)
		}
	})
}
