package agent

import (
	"encoding/json"
	"testing"
)

// TestPlainJSON: the HTML escapes become characters, an escaped backslash
// followed by the text "u003c" stays as it was, white space outside
// strings goes, and the value decodes to the same thing.
func TestPlainJSON(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"command":"cat \u003e a \u003c\u003c EOF \u0026\u0026 x"}`, `{"command":"cat > a << EOF && x"}`},
		{`{"command":"cat > a << EOF && x"}`, `{"command":"cat > a << EOF && x"}`},
		{`{ "a" : [1, 2] ,"b":"\u003C"}`, `{"a":[1,2],"b":"<"}`},
		{`{"a":"\\u003c"}`, `{"a":"\\u003c"}`},
		{`{"a":"\\\u003c\u00e9\n"}`, `{"a":"\\<\u00e9\n"}`},
		{`not json <`, `not json <`},
	} {
		got := string(PlainJSON([]byte(c.in)))
		if got != c.want {
			t.Errorf("PlainJSON(%s) = %s, want %s", c.in, got, c.want)
			continue
		}
		var a, b any
		if json.Unmarshal([]byte(c.in), &a) == nil {
			if err := json.Unmarshal([]byte(got), &b); err != nil {
				t.Errorf("PlainJSON(%s) = %s: not JSON: %v", c.in, got, err)
			} else if x, y := mustJSON(a), mustJSON(b); x != y {
				t.Errorf("PlainJSON(%s) decodes to %s, the input to %s", c.in, y, x)
			}
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
