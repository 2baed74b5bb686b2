package orchestrator

import (
	"strings"
	"testing"
)

// TestValidateResolvesTheHarness: Validate resolves the run's harness once
// ("" is the default) and hands it on as a value (Harness); a later
// Validate of the same options keeps it, another --agent resolves again,
// and an unknown one is refused with the known names.
func TestValidateResolvesTheHarness(t *testing.T) {
	for _, tc := range []struct{ agent, want, err string }{
		{agent: "", want: "opencode"},
		{agent: "codex", want: "codex"},
		{agent: "claude-code", want: "claude-code"},
		{agent: "nonesuch", err: "want one of opencode, claude-code, codex"},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			o := Options{Agent: tc.agent, Model: "scripted/demo", MaxParts: 10, TrajBin: "traj"}
			err := o.Validate()
			if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("Validate: %v, want %q", err, tc.err)
			}
			if err != nil {
				return
			}
			if h := o.Harness(); h.Name != tc.want || o.Agent != tc.want || h.Start == nil || h.Read == nil {
				t.Fatalf("resolved %q (agent %q), want %q with its start and reader", h.Name, o.Agent, tc.want)
			}
			if err := o.Validate(); err != nil || o.Harness().Name != tc.want {
				t.Fatalf("second Validate: %v, harness %q", err, o.Harness().Name)
			}
			o.Agent = "codex"
			if err := o.Validate(); err != nil || o.Harness().Name != "codex" {
				t.Fatalf("Validate after --agent codex: %v, harness %q", err, o.Harness().Name)
			}
		})
	}
}
