package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/trajlab/traj/sandbox"
)

// TestRerunHugeRecordLine is the attack on the readers of the model-call
// record: a 300 MB line appended to model_calls.jsonl (a record traj did
// not write: its gateway keeps at most 64 MiB of a response) took `traj
// replay rerun` to 4.25 GB. The rerun of a real OpenCode trajectory
// (scripted model, bwrap) must still reproduce every part, with the peak
// resident memory of the traj process and what it waited for (rusage
// maxrss) under 300 MB: the line is streamed with its strings cut, never
// held.
func TestRerunHugeRecordLine(t *testing.T) {
	if testing.Short() {
		t.Skip("records a real trajectory and writes a 300 MB file")
	}
	if err := sandbox.BwrapWorks(t.Context()); err != nil {
		t.Skipf("bwrap unusable: %v", err)
	}
	exe := trajExe(t)
	st := t.TempDir()
	run := exec.Command(exe, "run", "--task", "orchestrator/testdata/tasks/e2e", "--agent", "opencode", "--model", "scripted/demo",
		"--script", "orchestrator/testdata/e2e.jsonl", "--max-parts", "100", "--timeout", "3m", "--trajectory-id", "huge",
		"--store", st, "--sandbox", sandbox.ProviderBwrap, "--quiet")
	run.Dir = filepath.Join("..", "..")
	if out, err := run.CombinedOutput(); err != nil {
		if strings.Contains(string(out), "make setup") {
			t.Skipf("opencode needed (make setup):\n%s", out)
		}
		t.Fatalf("traj run: %v\n%s", err, out)
	}
	// One more recorded call, its response 300 MB, written in pieces.
	calls := filepath.Join(st, "trajectories", "huge", "model_calls.jsonl")
	b, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var last map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		t.Fatal(err)
	}
	last["seq"] = len(lines) + 1
	last["response"] = "RESPONSE"
	head, _ := json.Marshal(last)
	pre, post, _ := strings.Cut(string(head), `"RESPONSE"`)
	f, err := os.OpenFile(calls, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString(pre + `"data: `)
	chunk := strings.Repeat(`{\"delta\":\"x\"}`, 4096)
	for n := 0; n < 300<<20; n += len(chunk) {
		w.WriteString(chunk)
	}
	w.WriteString(`"` + post + "\n")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()

	rerun := exec.Command(exe, "replay", "rerun", "huge", "--store", st, "--trajectory-id", "huge-rerun", "--quiet")
	rerun.Dir = run.Dir
	out, err := rerun.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "reproduced 9/9 parts") {
		t.Fatalf("rerun: %v\n%s", err, out)
	}
	peak := rerun.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // kB on Linux
	t.Logf("rerun with a 300 MB record line: peak RSS %d MB", peak>>20)
	if peak > 300<<20 {
		t.Fatalf("rerun peak RSS %d MB, want under 300 MB", peak>>20)
	}
}
