package scripted

import (
	"strings"
	"testing"
)

func TestValidToolName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"read", true}, {"mcp__envoi.run_tests-2", true}, {strings.Repeat("a", 64), true},
		{"", false}, {strings.Repeat("a", 65), false}, {"a b", false}, {"ä", false}, {"a\n", false},
	} {
		if got := validToolName(tc.name); got != tc.ok {
			t.Errorf("validToolName(%q) = %v, want %v", tc.name, got, tc.ok)
		}
	}
}
