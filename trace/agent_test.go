package trace_test

import (
	"testing"

	"github.com/trajlab/traj/trace"
)

func TestParseAgent(t *testing.T) {
	for _, c := range []struct {
		field         string
		name, version string
	}{
		{"opencode@1.18.33", "opencode", "1.18.33"},
		{"claude-code@2.1.330", "claude-code", "2.1.330"},
		{"codex@0.169.0", "codex", "0.169.0"},
		{"opencode", "opencode", ""},
		{"", "", ""},
		{" codex@0.169.0\n", "codex", "0.169.0"},
		{"x@1@2", "x", "1@2"},
	} {
		got := trace.ParseAgent(c.field)
		if got.Name != c.name || got.Version != c.version {
			t.Errorf("ParseAgent(%q) = %+v, want %s / %s", c.field, got, c.name, c.version)
		}
		if c.field == "opencode@1.18.33" || c.field == "opencode" || c.field == "" {
			if s := got.String(); s != c.field {
				t.Errorf("%+v.String() = %q, want %q", got, s, c.field)
			}
		}
	}
}
