package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trajlab/traj/environment"
)

func TestEnvTest(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
	ws := t.TempDir()
	script := "printf '#!/bin/sh\\nexec gcc -w \"$@\"\\n' > cc && chmod +x cc\n"
	if err := os.WriteFile(filepath.Join(ws, "build.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	envRun := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		return code, out.String(), errb.String()
	}
	tests := []struct {
		name     string
		args     []string
		code     int
		stdout   []string
		stderr   []string
		jsonPass int
		// notStdout: what the feedback level keeps out.
		notStdout []string
	}{
		{name: "table", args: []string{"env", "test", "basics/functions", "--workspace", ws}, stdout: []string{"build: ok", "basics/functions", "9/9 passed"}, stderr: []string{"cases 9/9"}},
		{name: "json", args: []string{"env", "test", "basics/smoke", "--workspace", ws, "--json", "--workers", "1"}, jsonPass: 8},
		{name: "json at counts", args: []string{"env", "test", "basics/smoke", "--workspace", ws, "--json", "--feedback", "counts"}, jsonPass: 8, notStdout: []string{"expected_stdout", "expected_exit_code", "actual_stdout", "hello"}},
		{name: "unknown path", args: []string{"env", "test", "nope", "--workspace", ws}, code: 2, stderr: []string{"unknown test path", "basics/smoke"}},
		{name: "escaping path", args: []string{"env", "test", "../etc", "--workspace", ws}, code: 2, stderr: []string{"unknown test path"}},
		{name: "missing suite", args: []string{"env", "test", "torture", "--workspace", ws, "--tests-dir", t.TempDir()}, code: 2, stderr: []string{"llvm-test-suite"}},
		{name: "no workspace", args: []string{"env", "test", "basics", "--workspace", filepath.Join(ws, "absent")}, code: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("TRAJ_TESTS_DIR", "")
			code, stdout, stderr := envRun(tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, stdout, stderr)
			}
			for _, s := range tt.stdout {
				if !strings.Contains(stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout)
				}
			}
			for _, s := range tt.notStdout {
				if strings.Contains(stdout, s) {
					t.Errorf("stdout tells %q:\n%s", s, stdout)
				}
			}
			for _, s := range tt.stderr {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr)
				}
			}
			if tt.jsonPass > 0 {
				var r environment.Result
				if err := json.Unmarshal([]byte(stdout), &r); err != nil {
					t.Fatalf("--json output: %v\n%s", err, stdout)
				}
				if r.Passed != tt.jsonPass || r.Total != tt.jsonPass || r.Path != "basics/smoke" {
					t.Errorf("result: passed %d total %d path %s", r.Passed, r.Total, r.Path)
				}
			}
		})
	}
}
