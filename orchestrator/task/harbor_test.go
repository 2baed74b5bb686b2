package task

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trajlab/traj/environment/harbor"
)

func TestLoadHarbor(t *testing.T) {
	tk, err := Load("../../environment/harbor/testdata/python-stats")
	if err != nil {
		t.Fatal(err)
	}
	if tk.Environment != harbor.Name || tk.Name != "python-stats" || tk.Folder() == "" ||
		strings.Join(tk.TestPaths, ",") != "python-stats" || tk.AgentRunTests() || tk.GroundTruth.Off || tk.GroundTruth.FailingTests != -1 {
		t.Fatalf("task %+v", tk)
	}
	p, err := tk.Prompt()
	want, _ := os.ReadFile("../../environment/harbor/testdata/python-stats/instruction.md")
	if err != nil || p != string(want) {
		t.Fatalf("prompt %q, %v: want instruction.md as written", p, err)
	}
	// instruction.md is not a template: braces stay as written.
	dir := filepath.Join(t.TempDir(), "braces")
	for name, body := range map[string]string{"task.toml": "[agent]\ntimeout_sec = 10\n", "instruction.md": "Print {{.Name}} literally.\n",
		"environment/Dockerfile": "FROM debian:bookworm\n", "tests/test.sh": "exit 0\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tk, err = Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := tk.Prompt(); p != "Print {{.Name}} literally.\n" {
		t.Fatalf("prompt %q", p)
	}
	// A bad Harbor folder says what is wrong with it.
	if err := os.Remove(filepath.Join(dir, "tests/test.sh")); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "tests/test.sh") {
		t.Fatalf("Load: %v, want the missing test.sh named", err)
	}
}
