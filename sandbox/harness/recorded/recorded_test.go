package recorded_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/trajlab/traj/sandbox/harness/recorded"
)

// runtime are the packages that start or show processes: the sandbox
// providers, the adapters' start code, the harness list that starts them.
var runtime = []string{
	"github.com/trajlab/traj/sandbox",
	"github.com/trajlab/traj/sandbox/image",
	"github.com/trajlab/traj/sandbox/relay",
	"github.com/trajlab/traj/sandbox/agent/cliturn",
	"github.com/trajlab/traj/sandbox/opencode",
	"github.com/trajlab/traj/sandbox/claudecode",
	"github.com/trajlab/traj/sandbox/codex",
	"github.com/trajlab/traj/sandbox/harness",
	"github.com/trajlab/traj/sandbox/xec",
}

// TestReadersLinkNoRuntime: the reader-only list, and so every reader of
// a trace built on it, links no harness runtime. An import of an
// adapter's start code (or of sandbox/harness) here fails it.
func TestReadersLinkNoRuntime(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	for _, d := range deps {
		for _, r := range runtime {
			if d == r {
				t.Errorf("sandbox/harness/recorded links %s", d)
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
