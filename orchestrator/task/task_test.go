package task

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBuiltinCCompiler(t *testing.T) {
	tk, err := Load("c-compiler")
	if err != nil {
		t.Fatal(err)
	}
	if tk.Environment != "c-compiler" || tk.Source != "builtin:c-compiler" {
		t.Errorf("task = %+v", tk)
	}
	p, err := tk.Prompt()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range append([]string{"Rust", "build.sh", "./cc", "tests_run_tests"}, tk.TestPaths...) {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q", want)
		}
	}
	if len(Builtin()) == 0 || Builtin()[0] != "c-compiler" {
		t.Errorf("Builtin() = %v", Builtin())
	}
}

func writeTask(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadFolder(t *testing.T) {
	dir := writeTask(t, map[string]string{
		"task.json":   `{"name": "tiny", "environment": "c-compiler", "test_paths": ["basics/smoke", "basics"]}`,
		"prompt.md":   "Pass {{range .TestPaths}}{{.}} {{end}}",
		"continue.md": "Turn {{.Turn}}:\n{{.Status}}",
	})
	tk, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := tk.Prompt(); p != "Pass basics/smoke basics " {
		t.Errorf("prompt = %q", p)
	}
	got, err := tk.Continuation(3, Standing{Status: []PathStatus{
		{Path: "basics/smoke", Seen: true, Passed: 4, Total: 4},
		{Path: "basics", Seen: true, Passed: 3, Failed: 2, Total: 5},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := "Turn 3:\n- basics: 3/5 passed, 2 failing\n- basics/smoke: solved (4/4 passed)"
	if got != want {
		t.Errorf("continuation = %q, want %q (unsolved first)", got, want)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"no task.json", map[string]string{"prompt.md": "x"}, "task.json"},
		{"unknown field", map[string]string{"task.json": `{"name":"a","environment":"c-compiler","test_paths":["basics"],"extra":1}`, "prompt.md": "x"}, "unknown field"},
		{"no test paths", map[string]string{"task.json": `{"name":"a","environment":"c-compiler","test_paths":[]}`, "prompt.md": "x"}, "test_paths"},
		{"traversal path", map[string]string{"task.json": `{"name":"a","environment":"c-compiler","test_paths":["../x"]}`, "prompt.md": "x"}, "bad test path"},
		{"prompt outside", map[string]string{"task.json": `{"name":"a","environment":"c-compiler","test_paths":["basics"],"prompt":"../p.md"}`}, "inside the task folder"},
		{"bad name", map[string]string{"task.json": `{"name":"A B","environment":"c-compiler","test_paths":["basics"]}`, "prompt.md": "x"}, "name"},
		{"missing prompt", map[string]string{"task.json": `{"name":"a","environment":"c-compiler","test_paths":["basics"]}`}, "prompt.md"},
		{"bad template", map[string]string{"task.json": `{"name":"a","environment":"c-compiler","test_paths":["basics"]}`, "prompt.md": "{{.Nope"}, "parse prompt.md"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(writeTask(t, tt.files))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
	if _, err := Load("no-such-task"); !errors.Is(err, ErrUnknown) {
		t.Errorf("unknown name: err = %v", err)
	}
}

// TestGroundTruthContinuation: the default continuation built from ground
// truth names its source, what got fixed and regressed, and caps the
// failing list with the number left out.
func TestGroundTruthContinuation(t *testing.T) {
	tk, err := Load("c-compiler")
	if err != nil {
		t.Fatal(err)
	}
	got, err := tk.Continuation(2, Standing{GroundTruth: true, Part: 17,
		Status:  []PathStatus{{Path: "basics", Seen: true, Passed: 8, Failed: 2, Total: 10}},
		Failing: []string{"basics/a", "basics/b"}, FailingCount: 5,
		Fixed: []string{"basics/c"}, FixedCount: 1,
		Regressed: nil, RegressedCount: 0})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"traj's evaluation of your workspace at part 17", "- basics: 8/10 passed, 2 failing",
		"Fixed since the last turn (1):\n- basics/c", "Failing tests (5):\n- basics/a\n- basics/b\n- … and 3 more"} {
		if !strings.Contains(got, want) {
			t.Errorf("continuation lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "Regressed") {
		t.Errorf("continuation lists regressions when there are none:\n%s", got)
	}
}

// TestSampledAndLaterContinuation: a sampled standing says so per path
// and never calls a sampled path solved; one that did not wait names the
// part it is from and where the workspace is now.
func TestSampledAndLaterContinuation(t *testing.T) {
	tk, err := Load("c-compiler")
	if err != nil {
		t.Fatal(err)
	}
	got, err := tk.Continuation(3, Standing{GroundTruth: true, Part: 12, Now: 20, Sampled: true,
		Status: []PathStatus{{Path: "wacct", Seen: true, Passed: 10, Total: 10, Sample: 10}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"at part 12, the latest that landed; your workspace is now at part 20",
		"on a fixed sample of each suite's cases", "- wacct: 10/10 passed, 0 failing (a fixed sample of 10 of its cases"} {
		if !strings.Contains(got, want) {
			t.Errorf("continuation lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "wacct: solved") {
		t.Errorf("a sampled path called solved:\n%s", got)
	}
	if got, _ := tk.Continuation(2, Standing{GroundTruth: true, Pending: true, Now: 4}); !strings.Contains(got, "has not landed yet") {
		t.Errorf("pending standing:\n%s", got)
	}
	on := false
	tk.GroundTruth.Wait = &on
	if tk.GroundTruth.WaitAtTurnEnd() {
		t.Error("wait false: still waits")
	}
}

// TestSettings: the defaults withhold expected outputs and keep run_tests;
// bad values are refused.
func TestSettings(t *testing.T) {
	tk, err := Load("c-compiler")
	if err != nil {
		t.Fatal(err)
	}
	if tk.Feedback != "failures" || !tk.AgentRunTests() || tk.GroundTruth.Off || tk.GroundTruth.FailingTests != DefaultFailingTests {
		t.Fatalf("built-in defaults: feedback %q run_tests %v ground truth %+v", tk.Feedback, tk.AgentRunTests(), tk.GroundTruth)
	}
	for _, tc := range []struct{ json, want string }{
		{`"feedback": "all"`, "feedback"},
		{`"ground_truth": {"workers": -1}`, "workers"},
		{`"ground_truth": {"failing_tests": -2}`, "failing_tests"},
		{`"ground_truth": {"sample": {"seed": 1}}`, "sample.size"},
		{`"ground_truth": {"sample": {"size": 1000000}}`, "sample.size"},
		{`"ground_truth": {"sample": {"size": 5, "seed": -1}}`, "sample.seed"},
		{`"ground_truth": {"sample": {"size": 5, "full_every": -1}}`, "full_every"},
		{`"ground_truth": {"sample": {"size": 5, "every": 3}}`, "unknown field"},
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "task.json"), []byte(`{"name": "x", "environment": "c-compiler", "test_paths": ["basics"], `+tc.json+`}`), 0o644)
		os.WriteFile(filepath.Join(dir, "prompt.md"), []byte("p"), 0o644)
		if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one naming %s", tc.json, err, tc.want)
		}
	}
}
