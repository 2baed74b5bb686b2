package experiment

import (
	"errors"
	"os"
	"path/filepath"
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
	// experiment must find its trajectories). A spec of two harnesses has
	// the harness in its ids (since the harness studies; before, this one
	// was sweep-c-compiler-demo-8cedab-r1, the same hash); one harness, or
	// none, keeps the ids it had.
	if got, want := ca[0].ID, "sweep-opencode-c-compiler-demo-8cedab-r1"; got != want {
		t.Errorf("first id: got %s, want %s", got, want)
	}
	for _, one := range []string{"  harnesses: [opencode]\n", ""} {
		o, err := Parse("o.yaml", []byte(strings.Replace(goodSpec, "  harnesses: [opencode, claude-code]\n", one, 1)))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := o.Cells()[0].ID, "sweep-c-compiler-demo-8cedab-r1"; got != want {
			t.Errorf("one harness (%q): first id %s, want %s as before", one, got, want)
		}
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

// TestIncludeRows: include rows pair values instead of crossing them: a
// script per harness gives one slot per harness (and repeat), each with
// its own script, crossed with the lists rows do not name (models); the
// harness is in every id.
func TestIncludeRows(t *testing.T) {
	s, err := Parse("h.yaml", []byte(`name: study
matrix:
  models: [scripted/demo, scripted/other]
  include:
    - {harness: opencode, script: demo/c-compiler.jsonl}
    - {harness: claude-code, script: demo/c-compiler-claude-code.jsonl}
    - {harness: codex, script: demo/c-compiler-codex.jsonl}
  repeats: 2
budget: {max_parts: 40}
`))
	if err != nil {
		t.Fatal(err)
	}
	cells := s.Cells()
	if len(cells) != 3*2*2 {
		t.Fatalf("%d cells, want 12 (3 rows × 2 models × 2 repeats), not the 18 of a cross product", len(cells))
	}
	want := map[string]string{"opencode": "demo/c-compiler.jsonl", "claude-code": "demo/c-compiler-claude-code.jsonl", "codex": "demo/c-compiler-codex.jsonl"}
	seen := map[string]bool{}
	for i, c := range cells {
		if c.Params["script"] != want[c.Harness] || len(c.Params) != 1 {
			t.Errorf("cell %d: harness %s with params %v, want script %s", i, c.Harness, c.Params, want[c.Harness])
		}
		if !strings.HasPrefix(c.ID, "study-"+c.Harness+"-c-compiler-") || seen[c.ID] || c.Index != i {
			t.Errorf("cell %d: id %s (index %d): want study-%s-c-compiler-…, unique", i, c.ID, c.Index, c.Harness)
		}
		seen[c.ID] = true
	}
	if !s.Matrix.HarnessAxis() {
		t.Error("rows naming the harness: HarnessAxis false")
	}
	if err := s.CheckRunFlags(map[string]bool{"agent": true, "script": true}); err != nil {
		t.Errorf("CheckRunFlags: %v", err)
	}
	if err := s.CheckRunFlags(map[string]bool{"agent": true}); err == nil || !strings.Contains(err.Error(), "no --script flag") {
		t.Errorf("CheckRunFlags without --script: %v", err)
	}
	args := strings.Join(s.RunArgs(cells[0], cells[0].ID, map[string]bool{"agent": true, "script": true}), " ")
	if !strings.Contains(args, "--agent opencode") || !strings.Contains(args, "--script=demo/c-compiler.jsonl") {
		t.Errorf("run args of cell 0: %s", args)
	}

	for _, tc := range []struct{ name, matrix, want string }{
		{"keys differ", "  models: [a/b]\n  include:\n    - {harness: opencode, script: x}\n    - {harness: codex}\n", "h.yaml:6: matrix.include row 2 names 1 keys"},
		{"listed too", "  harnesses: [opencode]\n  models: [a/b]\n  include:\n    - {harness: codex}\n", "matrix.include names harness, which the matrix also lists"},
		{"unknown harness", "  models: [a/b]\n  include:\n    - {harness: aider}\n", `h.yaml:5: matrix.include row 1: harness "aider"`},
		{"twice", "  models: [a/b]\n  include:\n    - {harness: codex}\n    - {harness: codex}\n", "row 2 repeats row 1"},
		{"reserved", "  models: [a/b]\n  include:\n    - {max-parts: \"3\"}\n", "max-parts is set by the experiment itself"},
		{"bad model", "  include:\n    - {model: nomodel}\n", `model "nomodel": want PROVIDER/MODEL`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("h.yaml", []byte("name: x\nmatrix:\n"+tc.matrix+"budget: {max_parts: 3}\n"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestREADMEStudySpec: the README's harness study parses as written and
// gives one slot per harness and repeat, each harness with its own demo
// script (which exists).
func TestREADMEStudySpec(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "```yaml\n# study.yaml\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("the README has no study.yaml block")
	}
	s, err := Parse("study.yaml", []byte(block))
	if err != nil {
		t.Fatal(err)
	}
	cells := s.Cells()
	if len(cells) != 9 {
		t.Fatalf("%d slots, want 3 harnesses × 3 repeats", len(cells))
	}
	for _, c := range cells {
		script := c.Params["script"]
		if !strings.Contains(script, "c-compiler") || (c.Harness != "opencode") != strings.Contains(script, c.Harness) {
			t.Errorf("slot %s: harness %s with script %s", c.ID, c.Harness, script)
		}
		if _, err := os.Stat(filepath.Join("../..", script)); err != nil {
			t.Errorf("slot %s: %v", c.ID, err)
		}
	}
}
