package experiment_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trajlab/traj/orchestrator/experiment/slurmtest"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
)

// TestSlurmArrayAndResubmit: a job array of four trajectories runs on a
// real single-node Slurm into the store; one task is cancelled with
// scancel while it records; a second `experiment run` submits only that
// one, and it completes. A third has nothing to submit. The spec attaches
// an evaluation: each task that finishes its trajectory submits its
// evaluation (traj replay evaluate --executor slurm --detach), every
// trajectory ends with its evaluation.json in the store, and a run of the
// spec evaluates again a done trajectory that lacks it.
func TestSlurmArrayAndResubmit(t *testing.T) {
	t.Parallel()
	slurmtest.Need(t)
	needOpenCode(t)
	bin := trajBinary(t)
	c := slurmtest.Start(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(c.Logs())
		}
	})
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "good.jsonl")
	if slurmScript == goodScript {
		t.Fatal("slurmScript did not lengthen goodScript's second model call")
	}
	if err := os.WriteFile(script, []byte(slurmScript), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join(dir, "runs")
	specPath := filepath.Join(dir, "spec.yaml")
	spec := fmt.Sprintf(`name: slurmtest
store: %s
matrix:
  models: [scripted/demo]
  repeats: 4
budget:
  max_parts: 6
  timeout: 5m
limits:
  cpus: 1
run:
  script: %s
slurm:
  time: "20"
evaluate:
  tasks: 2
  tests: [basics/smoke]
`, runs, script)
	if err := os.WriteFile(specPath, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	experimentCmd := func(args ...string) (string, error) {
		cmd := exec.Command(bin, append([]string{"experiment"}, args...)...)
		cmd.Env = append(os.Environ(), c.Env...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	out, err := experimentCmd("run", specPath, "--executor", "slurm")
	t.Logf("first submission:\n%s", out)
	if err != nil || !strings.Contains(out, "with 4 tasks") {
		t.Fatalf("submit: %v", err)
	}
	job := strings.Fields(strings.SplitAfter(out, "job array ")[1])[0]

	// Cancel task 3 once it records parts (or, if it is still queued when
	// the others are done, while queued: it must still run later).
	ids := cellIDs(t, specPath)
	victim := job + "_3"
	slurmtest.WaitFor(t, 6*time.Minute, "task 3 to record a part", func() bool {
		return parts(runs, ids[3]) >= 1 || !strings.Contains(c.Queue(t), victim)
	})
	if !strings.Contains(c.Queue(t), victim) {
		t.Fatalf("task 3 finished before it could be cancelled; queue: %s", c.Queue(t))
	}
	if out, err := c.Run("scancel", victim); err != nil {
		t.Fatalf("scancel %s: %v %s", victim, err, out)
	}
	slurmtest.WaitFor(t, 8*time.Minute, "the first array to leave the queue", func() bool { return c.Queue(t) == "" })

	out, err = experimentCmd("status", specPath)
	t.Logf("status after the cancel:\n%s", out)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range ids[:3] {
		if end := endReason(t, runs, id); end != trace.EndPartLimit {
			t.Errorf("task %d (%s) ended %q, want part_limit", i, id, end)
		}
	}
	if end := endReason(t, runs, ids[3]); end == trace.EndPartLimit {
		t.Fatalf("the cancelled trajectory %s is done; the cancel came too late", ids[3])
	}

	// Resubmission runs only the cancelled slot.
	out, err = experimentCmd("run", specPath, "--executor", "slurm")
	t.Logf("second submission:\n%s", out)
	if err != nil || !strings.Contains(out, "with 1 tasks") {
		t.Fatalf("resubmit: %v", err)
	}
	slurmtest.WaitFor(t, 6*time.Minute, "the second array to finish", func() bool { return c.Queue(t) == "" })
	for _, id := range ids {
		if end := endReason(t, runs, id); end != trace.EndPartLimit {
			t.Errorf("%s ended %q after resubmission, want part_limit", id, end)
		}
		b, err := os.ReadFile(filepath.Join(runs, "trajectories", id, store.TraceName))
		if err != nil {
			t.Fatal(err)
		}
		if probs := trace.Validate(bytes.NewReader(b)); len(probs) > 0 {
			t.Errorf("%s: invalid trace: %v", id, probs)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(runs, "trajectories"))
	if len(entries) != 4 {
		t.Errorf("%d trajectories in the store, want 4", len(entries))
	}
	for _, id := range ids {
		data, err := os.ReadFile(filepath.Join(runs, filepath.FromSlash(store.EvaluationKey(id))))
		if err != nil {
			logs, _ := filepath.Glob(filepath.Join(runs, "experiments", "slurmtest", "logs", "slurm-*.out"))
			var tail []byte
			if len(logs) > 0 {
				tail, _ = os.ReadFile(logs[0])
			}
			t.Errorf("%s: no evaluation.json from the attached evaluation: %v\n%s:\n%s", id, err, logs, tail)
			continue
		}
		var ev struct {
			Stats struct {
				Parts       int `json:"parts"`
				UniqueTrees int `json:"unique_trees"`
			} `json:"stats"`
			TestPaths []string `json:"test_paths"`
		}
		if err := json.Unmarshal(data, &ev); err != nil || ev.Stats.Parts != 6 || ev.Stats.UniqueTrees == 0 || len(ev.TestPaths) != 1 || ev.TestPaths[0] != "basics/smoke" {
			t.Errorf("%s: evaluation %+v %v, want 6 parts on basics/smoke", id, ev, err)
		}
	}
	// A done trajectory without its evaluation.json (its evaluation
	// failed) is evaluated again by the next run: from the cache here.
	lost := filepath.Join(runs, filepath.FromSlash(store.EvaluationKey(ids[0])))
	if err := os.Remove(lost); err != nil {
		t.Fatal(err)
	}
	out, err = experimentCmd("run", specPath, "--executor", "slurm")
	if _, serr := os.Stat(lost); serr != nil {
		t.Errorf("the next run did not evaluate %s again: %v\n%s", ids[0], serr, out)
	}
	if err != nil || !strings.Contains(out, "nothing to submit") {
		t.Errorf("third submission: %v\n%s", err, out)
	}
	tasks, _ := filepath.Glob(filepath.Join(runs, "experiments", "slurmtest", "logs", "slurm-*.out"))
	if len(tasks) != 5 {
		t.Errorf("%d Slurm task logs, want 5 (4 + 1 resubmitted): %v", len(tasks), tasks)
	}
}

// slurmScript is goodScript with a long second model call: the test
// cancels task 3 once it has recorded a part, and with goodScript's 1.5 s
// the task could reach its 6-part budget before scancel landed on a busy
// machine (parts 1-3 come from the first call, 4-6 from the second).
var slurmScript = strings.Replace(goodScript, `"Writing a note.","tools":[{"name":"write","args":{"filePath":"NOTES.md","content":"notes\n"}}],"delay_ms":1500`,
	`"Writing a note.","tools":[{"name":"write","args":{"filePath":"NOTES.md","content":"notes\n"}}],"delay_ms":8000`, 1)

func cellIDs(t *testing.T, specPath string) []string {
	t.Helper()
	out, err := exec.Command(trajBinary(t), "experiment", "check", specPath).CombinedOutput()
	if err != nil {
		t.Fatalf("experiment check: %v\n%s", err, out)
	}
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		ids = append(ids, strings.Fields(line)[0])
	}
	return ids
}

func parts(runs, id string) int {
	b, err := os.ReadFile(filepath.Join(runs, "trajectories", id, store.TraceName))
	if err != nil {
		return 0
	}
	s, err := trace.Summarize(bytes.NewReader(b))
	if err != nil {
		return 0
	}
	return s.Parts
}

func endReason(t *testing.T, runs, id string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(runs, "trajectories", id, store.TraceName))
	if err != nil {
		return ""
	}
	s, err := trace.Summarize(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	return s.EndReason
}
