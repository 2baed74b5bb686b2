package main

import (
	"encoding/json"
	"testing"

	"github.com/trajlab/traj/orchestrator/folder"
	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store/ref"
)

// TestRerunSandboxProvider attacks the rerun's and the fork's choice of
// sandbox with a source whose run.json (editable by whoever holds the
// store) names each provider: --sandbox wins; the recorded provider is
// taken only when it is not local; local is never chosen without the
// flag, so an edited or unisolated source is replayed isolated.
func TestRerunSandboxProvider(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, recorded, flag, want string
	}{
		{"bwrap source", sandbox.ProviderBwrap, "", sandbox.ProviderBwrap},
		{"container source", sandbox.ProviderContainer, "", sandbox.ProviderContainer},
		{"local source", sandbox.ProviderLocal, "", ""},
		{"no run.json provider", "", "", ""},
		{"flag over local", sandbox.ProviderLocal, sandbox.ProviderBwrap, sandbox.ProviderBwrap},
		{"flag over bwrap", sandbox.ProviderBwrap, sandbox.ProviderContainer, sandbox.ProviderContainer},
		{"local named", sandbox.ProviderBwrap, sandbox.ProviderLocal, sandbox.ProviderLocal},
	} {
		t.Run(c.name, func(t *testing.T) {
			sb, _ := json.Marshal(map[string]any{"provider": c.recorded, "network": "gateways"})
			src := &rerunSource{ref: &ref.Trajectory{ID: "src"}, calls: "model_calls.jsonl",
				header: trace.Header{Agent: "opencode@1.0.0", Task: "c-compiler", AgentModel: "scripted/demo"},
				state:  &folder.RunState{TaskSource: "builtin:c-compiler", Sandbox: sb}}
			opts, err := src.options("src", "", t.TempDir(), c.flag)
			if err != nil {
				t.Fatal(err)
			}
			if opts.Sandbox.Provider != c.want {
				t.Fatalf("provider %q, want %q", opts.Sandbox.Provider, c.want)
			}
			if string(opts.Sandbox.Network) != "gateways" {
				t.Errorf("the source's other sandbox options were dropped: network %q", opts.Sandbox.Network)
			}
			// The fork takes the same options (forkOptions: base.Sandbox.Provider).
			if c.flag == "" && opts.Sandbox.Provider == sandbox.ProviderLocal {
				t.Fatal("local chosen without --sandbox local")
			}
		})
	}
}
