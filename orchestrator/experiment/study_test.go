package experiment_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trajlab/traj/orchestrator/experiment"
	"github.com/trajlab/traj/sandbox/harness"
)

// TestHarnessStudy is a harness study written as one spec: the three
// harnesses, each with its own demo script (sandbox/scripted/demo), paired
// by include rows rather than crossed with the scripts, one slot per
// harness with the harness in its id; run for real (real harnesses, the
// scripted model, the default sandbox), then reported: the experiment
// report has one group per harness and a table comparing every two
// harnesses, paired by task and repeat.
func TestHarnessStudy(t *testing.T) {
	t.Parallel() // mostly waits on agents
	needOpenCode(t)
	for _, h := range harness.All() {
		if _, err := h.Locate(""); err != nil {
			if os.Getenv("CI") == "" && os.Getenv("TRAJ_SKIP_HARNESSES") == "1" {
				t.Skipf("TRAJ_SKIP_HARNESSES=1: %v", err)
			}
			t.Fatalf("%s: %v (run make setup)", h.Name, err)
		}
	}
	bin := trajBinary(t)
	dir := t.TempDir()
	demo, _ := filepath.Abs("../../sandbox/scripted/demo")
	task, _ := filepath.Abs("../testdata/tasks/e2e")
	runs := filepath.Join(dir, "runs")
	spec := fmt.Sprintf(`name: study
store: %s
matrix:
  models: [scripted/demo]
  tasks: [%s]
  include:
    - {harness: opencode, script: %s/c-compiler.jsonl}
    - {harness: claude-code, script: %s/c-compiler-claude-code.jsonl}
    - {harness: codex, script: %s/c-compiler-codex.jsonl}
budget: {max_parts: 8, timeout: 10m}
relaunch: {max_attempts: 1}
`, runs, task, demo, demo, demo)
	specPath := filepath.Join(dir, "study.yaml")
	if err := os.WriteFile(specPath, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := experiment.Load(specPath)
	if err != nil {
		t.Fatal(err)
	}
	cells := s.Cells()
	if len(cells) != 3 {
		t.Fatalf("%d slots, want one per harness", len(cells))
	}
	for _, c := range cells {
		if !strings.HasPrefix(c.ID, "study-"+c.Harness+"-") || !strings.HasSuffix(c.Params["script"], "/c-compiler"+map[string]string{"opencode": "", "claude-code": "-claude-code", "codex": "-codex"}[c.Harness]+".jsonl") {
			t.Errorf("slot %s: harness %s with script %s", c.ID, c.Harness, c.Params["script"])
		}
	}
	out, err := exec.Command(bin, "experiment", "run", specPath, "--parallel", "1").CombinedOutput()
	t.Logf("experiment run:\n%s", out)
	if err != nil {
		logs, _ := filepath.Glob(filepath.Join(runs, "experiments", "study", "logs", "*.log"))
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			t.Logf("%s:\n%s", filepath.Base(l), b)
		}
		t.Fatalf("experiment run: %v", err)
	}
	for _, c := range cells {
		if _, err := os.Stat(filepath.Join(runs, "trajectories", c.ID, "agent_trace.json")); err != nil {
			t.Errorf("slot %s: no trace: %v", c.ID, err)
		}
	}
	html, js := filepath.Join(dir, "study.html"), filepath.Join(dir, "study.json")
	rep, err := exec.Command(bin, "report", "--experiment", specPath, "--html", html, "--json", js).CombinedOutput()
	t.Logf("report:\n%s", rep)
	if err != nil {
		t.Fatalf("report: %v", err)
	}
	var e struct {
		Groups []struct {
			Harness string `json:"harness"`
			Variant string `json:"variant"`
			Slots   int    `json:"slots"`
		} `json:"groups"`
		Harnesses []struct {
			HA string `json:"harness_a"`
			HB string `json:"harness_b"`
			N  int    `json:"pairs"`
		} `json:"harness_comparisons"`
	}
	b, _ := os.ReadFile(js)
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("report JSON: %v", err)
	}
	groups := map[string]int{}
	for _, g := range e.Groups {
		groups[g.Harness] += g.Slots
		if !strings.HasPrefix(g.Variant, "script=") {
			t.Errorf("group %s: variant %q, want its script", g.Harness, g.Variant)
		}
	}
	pairs := map[string]int{}
	for _, p := range e.Harnesses {
		pairs[p.HA+"/"+p.HB] = p.N
	}
	for _, h := range []string{"opencode", "claude-code", "codex"} {
		if groups[h] != 1 {
			t.Errorf("harness %s: %d slots in the report's groups, want 1 (%+v)", h, groups[h], e.Groups)
		}
	}
	for _, p := range []string{"claude-code/codex", "claude-code/opencode", "codex/opencode"} {
		if pairs[p] != 1 {
			t.Errorf("harness comparison %s: %d pairs, want 1 (%v)", p, pairs[p], pairs)
		}
	}
	page, _ := os.ReadFile(html)
	if !strings.Contains(string(page), `id="harness-comparison"`) || !strings.Contains(string(rep), "harness against harness") {
		t.Errorf("the report has no harness comparison table")
	}
}
