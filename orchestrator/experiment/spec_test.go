package experiment

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

const goodSpec = `name: sweep
store: ./runs
matrix:
  harnesses: [opencode, claude-code]
  models: [scripted/demo, anthropic/claude-sonnet-4-5]
  tasks: [c-compiler]
  params:
    tests-dir: [a, b]
  repeats: 2
budget:
  max_parts: 50
  timeout: 30m
relaunch:
  max_attempts: 2
`

func TestCellsDeterministic(t *testing.T) {
	a, err := Parse("a.yaml", []byte(goodSpec))
	if err != nil {
		t.Fatal(err)
	}
	// An unknown key is an error at its line.
	_, err = Parse("b.yaml", []byte("# same spec\n"+strings.Replace(goodSpec, "  repeats: 2\n", "", 1)+"matrix_repeats_dummy: 0\n"))
	if err == nil || !strings.Contains(err.Error(), "b.yaml:15:") {
		t.Fatalf("unknown field: want b.yaml:15 error, got %v", err)
	}
	// Comments and the file name do not change the ids.
	b, err := Parse("b.yaml", []byte("# same spec\n"+goodSpec))
	if err != nil {
		t.Fatal(err)
	}
	ca, cb := a.Cells(), b.Cells()
	if len(ca) != 2*2*1*2*2 {
		t.Fatalf("cells: got %d, want 16", len(ca))
	}
	seen := map[string]bool{}
	for i := range ca {
		if ca[i].ID != cb[i].ID {
			t.Errorf("cell %d: id %s then %s", i, ca[i].ID, cb[i].ID)
		}
		if seen[ca[i].ID] {
			t.Errorf("duplicate id %s", ca[i].ID)
		}
		seen[ca[i].ID] = true
		if ca[i].Index != i {
			t.Errorf("cell %d has index %d", i, ca[i].Index)
		}
	}
	// Golden: ids must not change between traj versions (re-running an
	// experiment must find its trajectories).
	if got, want := ca[0].ID, "sweep-c-compiler-demo-8cedab-r1"; got != want {
		t.Errorf("first id: got %s, want %s", got, want)
	}
	if got := ca[0].AttemptID(2); got != ca[0].ID+"-a2" {
		t.Errorf("attempt 2 id: %s", got)
	}
	// A larger budget keeps the ids.
	c, err := Parse("c.yaml", []byte(strings.Replace(goodSpec, "max_parts: 50", "max_parts: 500", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if c.Cells()[3].ID != ca[3].ID {
		t.Errorf("budget changed an id")
	}
}

func TestSpecErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string // each a substring of the error, with file:line
	}{
		{"syntax", "name: x\nmatrix: [\n", []string{"s.yaml:2:"}},
		{"unknown field", "name: x\nmatrix:\n  models: [a/b]\n  modles: [c/d]\nbudget: {max_parts: 3}\n", []string{"s.yaml:4:", "modles"}},
		{"wrong type", "name: x\nmatrix:\n  models: [a/b]\n  repeats: many\nbudget: {max_parts: 3}\n", []string{"s.yaml:4:"}},
		{"no name", "matrix:\n  models: [a/b]\nbudget: {max_parts: 3}\n", []string{"s.yaml: name is required"}},
		{"bad model", "name: x\nmatrix:\n  models:\n    - a/b\n    - nomodel\nbudget: {max_parts: 3}\n", []string{"s.yaml:5: model \"nomodel\""}},
		{"unknown harness", "name: x\nmatrix:\n  harnesses: [opencode, aider]\n  models: [a/b]\nbudget: {max_parts: 3}\n", []string{"s.yaml:3:", `harness "aider": want one of opencode, claude-code, codex`}},
		{"duplicate", "name: x\nmatrix:\n  models: [a/b, a/b]\nbudget: {max_parts: 3}\n", []string{"s.yaml:3:", "listed twice"}},
		{"budget", "name: x\nmatrix:\n  models: [a/b]\nbudget:\n  max_parts: 3\n  timeout: soon\n", []string{"s.yaml:6: budget.timeout"}},
		{"stall timeout", "name: x\nmatrix:\n  models: [a/b]\nbudget:\n  max_parts: 3\n  stall_timeout: -1m\n", []string{"s.yaml:6: budget.stall_timeout"}},
		{"no budget", "name: x\nmatrix:\n  models: [a/b]\n", []string{"max_parts is required"}},
		{"relaunch reason", "name: x\nmatrix: {models: [a/b]}\nbudget: {max_parts: 3}\nrelaunch:\n  on: [solved]\n", []string{"s.yaml:5:", "solved"}},
		{"reserved run flag", "name: x\nmatrix: {models: [a/b]}\nbudget: {max_parts: 3}\nrun:\n  model: a/c\n", []string{"s.yaml:5: run.model"}},
		{"bad name", "name: ../x\nmatrix: {models: [a/b]}\nbudget: {max_parts: 3}\n", []string{"s.yaml:1: name"}},
		{"memory", "name: x\nmatrix: {models: [a/b]}\nbudget: {max_parts: 3}\nlimits:\n  memory: lots\n", []string{"s.yaml:5: limits.memory"}},
		{"two errors in line order", "name: x\nmatrix:\n  models: [bad]\nbudget:\n  max_parts: -1\n", []string{"s.yaml:3:", "s.yaml:5: budget.max_parts"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("s.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatal("no error")
			}
			last := -1
			for _, w := range tc.want {
				i := strings.Index(err.Error(), w)
				if i < 0 {
					t.Fatalf("error %q lacks %q", err, w)
				}
				if i < last {
					t.Errorf("error %q: %q out of order", err, w)
				}
				last = i
			}
		})
	}
}

func TestCheckRunFlags(t *testing.T) {
	s, err := Parse("s.yaml", []byte(goodSpec+"sandbox: bwrap\nrun:\n  script: x.jsonl\n"))
	if err != nil {
		t.Fatal(err)
	}
	old := map[string]bool{"max-parts": true, "model": true, "script": true, "tests-dir": true}
	err = s.CheckRunFlags(old)
	var se SpecErrors
	if !errors.As(err, &se) || len(se) != 2 {
		t.Fatalf("want 2 errors (no --agent, no --sandbox), got %v", err)
	}
	if se[0].Line != 4 || !strings.Contains(se[0].Msg, "--agent") {
		t.Errorf("first error: %v", se[0])
	}
	newer := map[string]bool{"max-parts": true, "model": true, "script": true, "tests-dir": true, "agent": true, "sandbox": true}
	if err := s.CheckRunFlags(newer); err != nil {
		t.Fatalf("all flags accepted: %v", err)
	}
	args := s.RunArgs(s.Cells()[6], "the-id", newer)
	for _, want := range []string{"--agent", "--sandbox", "--script=x.jsonl", "--tests-dir=b", "--timeout"} {
		if !slices.Contains(args, want) && !slices.ContainsFunc(args, func(a string) bool { return a == want }) {
			t.Errorf("run args %q lack %s", args, want)
		}
	}
	if !slices.Contains(s.ResumeArgs(s.Cells()[6], "the-id", newer), "--resume") {
		t.Error("resume args lack --resume")
	}
}

func TestParseMemory(t *testing.T) {
	for in, want := range map[string]int64{"512M": 512 << 20, "8G": 8 << 30, "8Gi": 8 << 30, "1T": 1 << 40, "100": 100, "2GB": 2 << 30} {
		if got, err := ParseMemory(in); err != nil || got != want {
			t.Errorf("%s: got %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "G", "-1G", "3X", "lots"} {
		if _, err := ParseMemory(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
