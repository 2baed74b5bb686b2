package view

import (
	"strings"
	"testing"
)

func TestHighlight(t *testing.T) {
	tests := []struct {
		name, text string
		ok         bool
		lines      int
		want       Token
	}{
		{"src/lexer.c", "int lex(void) {\n  return 0; // done\n}\n", true, 3, Token{"c1", "// done"}},
		{"build.sh", "#!/bin/sh\necho hi\n", true, 2, Token{"nb", "echo"}},
		{"notes.unknownext", "plain\n", false, 0, Token{}},
		{"big.c", strings.Repeat("int x;\n", maxHighlightBytes/7+1), false, 0, Token{}},
	}
	for _, tt := range tests {
		lines, ok := highlight(tt.name, tt.text)
		if ok != tt.ok || len(lines) != tt.lines {
			t.Errorf("%s: ok %v, %d lines; want %v, %d", tt.name, ok, len(lines), tt.ok, tt.lines)
			continue
		}
		if !ok {
			continue
		}
		found := false
		var got strings.Builder
		for _, l := range lines {
			for _, tok := range l {
				found = found || tok == tt.want
				got.WriteString(tok[1])
			}
			got.WriteString("\n")
		}
		if !found || got.String() != tt.text {
			t.Errorf("%s: token %v found %v; text round trip %q", tt.name, tt.want, found, got.String())
		}
	}
}
