package task

import (
	"strings"
	"testing"
)

func TestValidName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"c-compiler", true}, {"a", true}, {"0.x_y-z", true}, {strings.Repeat("a", 64), true},
		{"", false}, {strings.Repeat("a", 65), false}, {"-a", false}, {".a", false}, {"A", false}, {"a/b", false}, {"a\n", false},
	} {
		if got := validName(tc.name); got != tc.ok {
			t.Errorf("validName(%q) = %v, want %v", tc.name, got, tc.ok)
		}
	}
}
