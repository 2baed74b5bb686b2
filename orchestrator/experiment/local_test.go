package experiment_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trajlab/traj/orchestrator/experiment"
	"github.com/trajlab/traj/orchestrator/folder"
	"github.com/trajlab/traj/replay/report"
	"github.com/trajlab/traj/sandbox/opencode"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
)

var trajOnce struct {
	sync.Once
	path string
	err  error
}

// trajBinary is $TRAJ_BIN (make test builds it), else built once.
func trajBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("TRAJ_BIN"); p != "" {
		return p
	}
	trajOnce.Do(func() {
		dir, err := os.MkdirTemp("", "traj-bin-")
		if err != nil {
			trajOnce.err = err
			return
		}
		trajOnce.path = filepath.Join(dir, "traj")
		out, err := exec.Command("go", "build", "-o", dir+"/", "github.com/trajlab/traj/cmd/traj", "github.com/trajlab/traj/cmd/traj-sandbox").CombinedOutput()
		if err != nil {
			trajOnce.err = fmt.Errorf("go build traj: %v\n%s", err, out)
		}
	})
	if trajOnce.err != nil {
		t.Fatalf("%v (or set TRAJ_BIN; make test does)", trajOnce.err)
	}
	return trajOnce.path
}

// needOpenCode fails without OpenCode (these tests are part of make test);
// outside CI, TRAJ_SKIP_OPENCODE=1 skips instead.
func needOpenCode(t testing.TB) {
	t.Helper()
	if _, err := opencode.ResolveBinary(""); err != nil {
		if os.Getenv("CI") == "" && os.Getenv("TRAJ_SKIP_OPENCODE") == "1" {
			t.Skipf("TRAJ_SKIP_OPENCODE=1: %v", err)
		}
		t.Fatalf("%v (run make setup)", err)
	}
}

// Scripts: "good" writes files over two rounds (a trajectory ends at the
// part budget); "bad" answers every request with a 400, which ends the
// turn with an API error: the run ends agent_error, every attempt.
const goodScript = `{"reasoning":"Start.","text":"Writing build.sh.","tools":[{"name":"write","args":{"filePath":"build.sh","content":"#!/bin/sh\necho ok\n"}}],"delay_ms":1500}
{"reasoning":"Next.","text":"Writing a note.","tools":[{"name":"write","args":{"filePath":"NOTES.md","content":"notes\n"}}],"delay_ms":1500}
{"text":"Done for now.","delay_ms":500}
{"reasoning":"Again.","tools":[{"name":"write","args":{"filePath":"more.txt","content":"x\n"}}],"delay_ms":500}
{"text":"Done.","delay_ms":500}
`
const badScript = `{"error":{"status":400,"message":"injected failure"}}
{"error":{"status":400,"message":"injected failure"}}
{"error":{"status":400,"message":"injected failure"}}
`

func writeSpec(t *testing.T, dir string, extra string) string {
	t.Helper()
	good, bad := filepath.Join(dir, "good.jsonl"), filepath.Join(dir, "bad.jsonl")
	for p, s := range map[string]string{good: goodScript, bad: badScript} {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	spec := fmt.Sprintf(`name: killtest
store: %s
matrix:
  models: [scripted/demo]
  params:
    script: [%s, %s]
  repeats: 3
budget:
  max_parts: 6
  timeout: 5m
relaunch:
  max_attempts: 2
%s`, filepath.Join(dir, "runs"), good, bad, extra)
	p := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(p, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLocalKillAndRerun is the local executor's promise: six trajectories,
// two at once, the whole experiment killed with SIGKILL midway, run again:
// every trajectory ends exactly once with a valid trace, the dead ones are
// resumed, the failing ones are relaunched up to the policy (every attempt
// kept), and the experiment report covers all of them.
func TestLocalKillAndRerun(t *testing.T) {
	t.Parallel() // with the Slurm test: both mostly wait on agents
	needOpenCode(t)
	bin := trajBinary(t)
	dir := t.TempDir()
	specPath := writeSpec(t, dir, "")
	runs := filepath.Join(dir, "runs")

	// First run: kill -9 the experiment once a trajectory is in progress with
	// parts (two at once is a race on a fast machine: six parts take seconds).
	cmd := exec.Command(bin, "experiment", "run", specPath, "--parallel", "2")
	var out1 bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out1, &out1
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(4 * time.Minute)
	killed := false
	for !killed {
		select {
		case err := <-exited:
			t.Fatalf("experiment ended before the kill (%v):\n%s", err, out1.String())
		case <-deadline:
			_ = cmd.Process.Kill()
			t.Fatalf("no trajectory recorded parts in time:\n%s", out1.String())
		case <-time.After(300 * time.Millisecond):
		}
		if partsRecorded(runs) >= 1 {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-exited
			killed = true
		}
	}
	t.Logf("first run, killed:\n%s", out1.String())
	// The children died with it (Pdeathsig): no traj run process survives.
	waitNoLiveRecorders(t, runs)

	// Second run completes everything.
	out2, err := exec.Command(bin, "experiment", "run", specPath, "--parallel", "2").CombinedOutput()
	t.Logf("second run:\n%s", out2)
	defer func() {
		if t.Failed() {
			logs, _ := filepath.Glob(filepath.Join(runs, "experiments", "killtest", "logs", "*.log"))
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				t.Logf("%s:\n%s", filepath.Base(l), b)
			}
		}
	}()
	if code := exitCode(err); code != 3 {
		t.Fatalf("second run: exit %d (want 3: the bad trajectories failed after their attempts): %v", code, err)
	}
	if !strings.Contains(string(out2), "resume ") {
		t.Errorf("second run resumed nothing; the kill left no dead trajectory?")
	}

	// A third run has nothing to do.
	out3, err := exec.Command(bin, "experiment", "run", specPath).CombinedOutput()
	if code := exitCode(err); code != 3 || strings.Contains(string(out3), "start ") || strings.Contains(string(out3), "resume ") {
		t.Errorf("third run launched something (exit %d):\n%s", code, out3)
	}

	spec, err := experiment.Load(specPath)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	entries, err := os.ReadDir(filepath.Join(runs, "trajectories"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		ids = append(ids, e.Name())
	}
	// 3 good slots with one attempt, 3 bad slots with two attempts each:
	// exactly these ids, nothing else.
	want := map[string]bool{}
	for _, c := range spec.Cells() {
		want[c.AttemptID(1)] = true
		if strings.Contains(c.Params["script"], "bad") {
			want[c.AttemptID(2)] = true
		}
	}
	if len(ids) != len(want) {
		t.Errorf("trajectories in the store: %v, want %d: %v", ids, len(want), want)
	}
	for _, id := range ids {
		if !want[id] {
			t.Errorf("unexpected trajectory %s", id)
		}
		dir := filepath.Join(runs, "trajectories", id)
		tr, err := os.ReadFile(filepath.Join(dir, store.TraceName))
		if err != nil {
			t.Errorf("%s: %v", id, err)
			continue
		}
		if probs := trace.Validate(bytes.NewReader(tr)); len(probs) > 0 {
			t.Errorf("%s: invalid trace: %v", id, probs)
		}
		if n := bytes.Count(tr, []byte(`"session_end"`)); n != 1 {
			t.Errorf("%s: %d session_end objects, want exactly 1", id, n)
		}
		s, err := trace.Summarize(bytes.NewReader(tr))
		if err != nil {
			t.Fatal(err)
		}
		wantEnd := trace.EndPartLimit
		if isBad(spec, id) {
			wantEnd = trace.EndAgentError
		}
		if s.EndReason != wantEnd {
			t.Errorf("%s: ended %s (%s), want %s", id, s.EndReason, s.EndDetail, wantEnd)
		}
		var rs folder.RunState
		if b, err := os.ReadFile(filepath.Join(dir, store.RunStateName)); err != nil || json.Unmarshal(b, &rs) != nil || rs.Status != "finished" {
			t.Errorf("%s: run.json not finished: %+v %v", id, rs, err)
		}
		// Finished: the sandbox is gone (not kept by the spec).
		if _, err := os.Stat(filepath.Join(runs, folder.SandboxesDir, id)); err == nil {
			t.Errorf("%s: sandbox left behind", id)
		}
		// The summary the report reads matches the trace.
		if b, err := os.ReadFile(filepath.Join(dir, store.SummaryName)); err != nil {
			t.Errorf("%s: no summary: %v", id, err)
		} else {
			var sum report.SummaryFile
			if err := json.Unmarshal(b, &sum); err != nil || sum.Parts != s.Parts || sum.TraceSize != int64(len(tr)) {
				t.Errorf("%s: summary %+v does not match the trace (%d parts, %d bytes): %v", id, sum, s.Parts, len(tr), err)
			}
		}
	}

	// The report covers every slot and every attempt.
	rep, err := exec.Command(bin, "report", "--experiment", specPath, "--json", filepath.Join(dir, "report.json")).CombinedOutput()
	if err != nil {
		t.Fatalf("report: %v\n%s", err, rep)
	}
	t.Logf("report:\n%s", rep)
	var e report.Experiment
	b, _ := os.ReadFile(filepath.Join(dir, "report.json"))
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	slots, attempts := 0, 0
	for _, g := range e.Groups {
		slots += g.Slots
		attempts += g.Attempts
	}
	if slots != 6 || attempts != len(want) || e.Trajectories != len(want) || len(e.NotStarted) != 0 {
		t.Errorf("report: %d slots, %d attempts, %d trajectories, not started %v; want 6, %d", slots, attempts, e.Trajectories, e.NotStarted, len(want))
	}
}

func isBad(s *experiment.Spec, id string) bool {
	for _, c := range s.Cells() {
		if strings.HasPrefix(id, c.ID) {
			return strings.Contains(c.Params["script"], "bad")
		}
	}
	return false
}

// partsRecorded counts trajectories whose trace holds at least one part.
func partsRecorded(runs string) int {
	n := 0
	entries, _ := os.ReadDir(filepath.Join(runs, "trajectories"))
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(runs, "trajectories", e.Name(), store.TraceName))
		if err != nil {
			continue
		}
		if s, err := trace.Summarize(bytes.NewReader(b)); err == nil && s.Parts >= 1 && s.EndReason == "" {
			n++
		}
	}
	return n
}

// waitNoLiveRecorders waits until no run.json names a live process.
func waitNoLiveRecorders(t *testing.T, runs string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		live := ""
		entries, _ := os.ReadDir(filepath.Join(runs, "trajectories"))
		for _, e := range entries {
			l, err := folder.Locate(context.Background(), folder.LocateOptions{ID: e.Name(), WorkDir: runs, Store: runs})
			if err == nil && l.Running() {
				live = e.Name()
			}
		}
		if live == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("trajectory %s is still recorded by a live process after the experiment was killed", live)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}
