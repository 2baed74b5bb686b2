package record

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/trajlab/traj/orchestrator"
	"github.com/trajlab/traj/orchestrator/folder"
	"github.com/trajlab/traj/orchestrator/launch"
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
	calls := filepath.Join(t.TempDir(), "model_calls.jsonl")
	if err := os.WriteFile(calls, nil, 0o644); err != nil {
		t.Fatal(err)
	}
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
			src := &Source{Ref: &ref.Trajectory{ID: "src"}, Calls: calls, Parts: 3,
				Header: trace.Header{Agent: "opencode@1.0.0", Task: "c-compiler", AgentModel: "scripted/demo"},
				State:  &folder.RunState{TaskSource: "builtin:c-compiler", Sandbox: sb}}
			rerun, err := src.rerunOptions(RerunRequest{Ref: "src", Sandbox: c.flag}, 3)
			if err != nil {
				t.Fatal(err)
			}
			fork, err := src.forkOptions(RunRequest{Fork: "src", AtPart: 3,
				Options: orchestrator.Options{Sandbox: launch.SandboxOptions{Provider: c.flag}}})
			if err != nil {
				t.Fatal(err)
			}
			for what, opts := range map[string]orchestrator.Options{"rerun": rerun, "fork": fork} {
				if opts.Sandbox.Provider != c.want {
					t.Fatalf("%s: provider %q, want %q", what, opts.Sandbox.Provider, c.want)
				}
				if string(opts.Sandbox.Network) != "gateways" {
					t.Errorf("%s: the source's other sandbox options were dropped: network %q", what, opts.Sandbox.Network)
				}
				if c.flag == "" && opts.Sandbox.Provider == sandbox.ProviderLocal {
					t.Fatalf("%s: local chosen without --sandbox local", what)
				}
			}
		})
	}
}
