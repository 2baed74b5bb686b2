package recorded_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/trajlab/traj/sandbox/harness/recorded"
)

// runtime are the packages that start or serve something: the sandbox
// providers, the adapters' start code, the harness list that starts them,
// the model gateway and the playback server.
var runtime = []string{
	"github.com/trajlab/traj/sandbox",
	"github.com/trajlab/traj/sandbox/image",
	"github.com/trajlab/traj/sandbox/relay",
	"github.com/trajlab/traj/sandbox/agent/cliturn",
	"github.com/trajlab/traj/sandbox/opencode",
	"github.com/trajlab/traj/sandbox/claudecode",
	"github.com/trajlab/traj/sandbox/codex",
	"github.com/trajlab/traj/sandbox/harness",
	"github.com/trajlab/traj/sandbox/gateway/model",
	"github.com/trajlab/traj/sandbox/playback",
	"github.com/trajlab/traj/sandbox/xec",
}

// TestReadersLinkNoRuntime: the reader-only list, and the readers of a
// trace built on it (export, view, report, labels, a rerun's comparison),
// link no harness runtime. An import of an adapter's start code, of
// sandbox/harness, of the gateway or of the process runner (sandbox/xec;
// environment names only its leaf type, sandbox/xec/exit, and runs trees
// on the host from environment/host) by any of them fails it.
func TestReadersLinkNoRuntime(t *testing.T) {
	for _, pkg := range []string{".", "../../../replay/export", "../../../replay/view", "../../../replay/report",
		"../../../replay/labels", "../../../replay/rerun"} {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Skipf("go list %s: %v", pkg, err)
		}
		for _, d := range strings.Fields(string(out)) {
			for _, r := range runtime {
				if d == r {
					t.Errorf("%s links %s", pkg, d)
				}
			}
		}
	}
}

// TestEveryHarnessReads: each harness has a name and a reader, and an
// unknown harness gets the reader that keeps raw objects.
func TestEveryHarnessReads(t *testing.T) {
	for _, h := range recorded.All() {
		if h.Name == "" || h.Read == nil {
			t.Errorf("harness %+v: no name or reader", h)
		}
	}
	if all := recorded.All(); all[0].Name != recorded.Default {
		t.Errorf("first harness %s, want Default %s", all[0].Name, recorded.Default)
	}
	if _, ok := recorded.Reader("nonesuch@1").Part("p", "text", []byte(`{"type":"text"}`)); ok {
		t.Error("an unknown harness's part was read")
	}
}
