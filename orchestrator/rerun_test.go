package orchestrator

import (
	"strings"
	"testing"
)

// TestRerunOptions: a rerun is answered from its source's record alone, so
// any way to name a provider (a script, a base URL) is refused; a fork
// names its new model; neither goes without the source's calls.
func TestRerunOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		err  string
	}{
		{name: "rerun", o: Options{Rerun: &Rerun{Calls: "model_calls.jsonl"}}},
		{name: "rerun with a base URL", o: Options{BaseURL: "http://127.0.0.1:9/v1", Rerun: &Rerun{Calls: "model_calls.jsonl"}},
			err: "no --script or --base-url"},
		{name: "rerun with a script", o: Options{Script: "s.jsonl", Rerun: &Rerun{Calls: "model_calls.jsonl"}}, err: "no --script or --base-url"},
		{name: "no calls", o: Options{Rerun: &Rerun{}}, err: "needs its source's model calls"},
		{name: "fork with a script", o: Options{Script: "s.jsonl", Rerun: &Rerun{Calls: "model_calls.jsonl", ForkAt: 3}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			o.Model, o.MaxParts, o.TrajBin = "scripted/demo", 10, "traj"
			err := o.Validate()
			if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("Validate: %v, want %q", err, tc.err)
			}
		})
	}
}
