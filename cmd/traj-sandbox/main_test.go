package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoSuiteInside: the helper every room shows links no test
// environment (so no suite and no expectation), and its binary holds no
// `// expect:` line of the basics suite, which traj's own binary embeds
// (the control: the same scan finds them in traj).
func TestNoSuiteInside(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/trajlab/traj/environment") || strings.HasPrefix(dep, "github.com/trajlab/traj/orchestrator") ||
			strings.HasPrefix(dep, "github.com/trajlab/traj/replay") {
			t.Errorf("traj-sandbox links %s: a room would show what it holds", dep)
		}
	}
	dir := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", dir+"/", ".", "../traj").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	count := func(name string) int {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return bytes.Count(b, []byte("// expect: exit="))
	}
	if n := count("traj"); n < 68 {
		t.Fatalf("traj's binary holds %d basics expectations, want the whole suite (68+): the scan finds nothing", n)
	}
	if n := count("traj-sandbox"); n != 0 {
		t.Errorf("traj-sandbox holds %d basics expectations, want 0", n)
	}
}
