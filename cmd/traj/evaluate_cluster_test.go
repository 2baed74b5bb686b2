package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trajlab/traj/orchestrator/evalarray"
	"github.com/trajlab/traj/orchestrator/experiment/slurmtest"
	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/replaytest"
)

// syncBuffer is a bytes.Buffer written by a child process while the test
// reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestEvaluateOnSlurm: `traj replay evaluate --executor slurm` on a real
// single-node Slurm. A trajectory of 6 distinct trees goes to an array of
// 3 tasks (2 trees each, every tree built and tested in evalbox's
// sandboxes by the real traj binary); task 1 halts after its first tree
// (--fault-halt, so the cancel cannot race its second tree) and is
// cancelled with scancel. The command reports the task and the tree
// missing; a rerun submits 1 task for that tree only (held, and that run
// is stopped while it waits: the array goes on), the next run waits for
// that array instead of submitting again and writes the report with every
// tree from the cache; a last run submits nothing.
func TestEvaluateOnSlurm(t *testing.T) {
	slurmtest.Need(t)
	t.Parallel()
	bin := trajExe(t)
	c := slurmtest.Start(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(c.Logs())
		}
	})
	tj := replaytest.Build(t, "traj-slurm-eval", replaytest.AttributionScriptBreaking("for_loop"), 3, true)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	st := filepath.Join(dir, "runs")
	copyInto(t, st, tj)
	out := filepath.Join(dir, "eval.json")
	work := out + ".tasks"
	evaluate := func(stderr *syncBuffer, env []string, more ...string) *exec.Cmd {
		cmd := exec.Command(bin, append([]string{"replay", "evaluate", tj.ID, "--store", st, "--tests", "basics/control_flow", "--output", out,
			"--executor", "slurm", "--tasks", "3", "--workers", "1", "--poll", "250ms", "--slurm-opt=--cpus-per-task=1"}, more...)...)
		cmd.Env = append(append(os.Environ(), c.Env...), env...)
		cmd.Dir = dir
		cmd.Stdout, cmd.Stderr = stderr, stderr
		return cmd
	}
	submissions := func() []evalarray.Submission {
		subs, err := evalarray.Submissions(work)
		if err != nil {
			t.Fatal(err)
		}
		return subs
	}
	report := func(sub evalarray.Submission, i int) evalarray.TaskReport {
		t.Helper()
		var r evalarray.TaskReport
		b, err := os.ReadFile(evalarray.ReportPath(sub.Dir, i))
		if err != nil {
			t.Fatalf("task %d of job %s: no report: %v", i, sub.JobID, err)
		}
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}

	// First run: task 1 halts once it has cached its first tree (sbatch
	// hands the tasks this environment) and is cancelled there.
	var first syncBuffer
	cmd := evaluate(&first, []string{"TRAJ_FAULT_TASK_HALT=1:1"})
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	slurmtest.WaitFor(t, 2*time.Minute, "the first submission", func() bool { return len(submissions()) == 1 })
	sub := submissions()[0]
	if sub.Tasks != 3 || sub.Trees != 6 {
		t.Fatalf("first submission %+v, want 3 tasks for 6 trees", sub)
	}
	victim := sub.JobID + "_1"
	slurmtest.WaitFor(t, 5*time.Minute, "task 1 to halt after a tree", func() bool {
		log, _ := os.ReadFile(evalarray.LogPath(sub.Dir, 1))
		return strings.Contains(string(log), "task 1: 1/2 trees done") && strings.Contains(string(log), "task 1: halted after 1 trees")
	})
	if out, err := c.Run("scancel", victim); err != nil {
		t.Fatalf("scancel %s: %v %s", victim, err, out)
	}
	var err error
	select {
	case err = <-exited:
	case <-time.After(8 * time.Minute):
		t.Fatalf("the first evaluate did not end:\n%s", first.String())
	}
	t.Logf("first run:\n%s", first.String())
	if _, statErr := os.Stat(evalarray.ReportPath(sub.Dir, 1)); statErr == nil {
		t.Fatalf("task 1 finished before the cancel reached it:\n%s", first.String())
	}
	if code := exitCode(err); code != 1 ||
		!strings.Contains(first.String(), "task 1 did not evaluate all its trees: killed or crashed") ||
		!strings.Contains(first.String(), "1 of 6 trees are not in the evaluation cache") {
		t.Fatalf("first run: exit %d, want 1 naming task 1 and the missing tree", code)
	}
	for _, i := range []int{0, 2} {
		if r := report(sub, i); r.Evaluated != 2 || r.Error != "" {
			t.Errorf("task %d: %+v, want 2 trees evaluated", i, r)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("an incomplete evaluation wrote the report")
	}

	// Second run: only the missing tree, in one task, held in the queue;
	// the run is stopped while it waits.
	var second syncBuffer
	cmd = evaluate(&second, nil, "--slurm-opt=--hold")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slurmtest.WaitFor(t, 2*time.Minute, "the second submission", func() bool { return len(submissions()) == 2 })
	slurmtest.WaitFor(t, time.Minute, "the second run to wait", func() bool { return strings.Contains(second.String(), "trees cached 5/6") })
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	t.Logf("second run:\n%s", second.String())
	if exitCode(err) == 0 || !strings.Contains(second.String(), "with 1 tasks: 1 of 6 trees missing") ||
		!strings.Contains(second.String(), "it goes on; run the command again to wait for it") {
		t.Fatalf("second run: %v", err)
	}
	subs := submissions()
	held := subs[1].JobID

	// Third run: waits for the held array rather than submitting again.
	var third syncBuffer
	cmd = evaluate(&third, nil)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { exited <- cmd.Wait() }()
	slurmtest.WaitFor(t, time.Minute, "the third run to wait for the held array", func() bool {
		return strings.Contains(third.String(), "job array "+held+" of an earlier run is still queued: waiting for it")
	})
	if out, err := c.Run("scontrol", "release", held); err != nil {
		t.Fatalf("scontrol release %s: %v %s", held, err, out)
	}
	select {
	case err = <-exited:
	case <-time.After(5 * time.Minute):
		t.Fatalf("the third evaluate did not end:\n%s", third.String())
	}
	t.Logf("third run:\n%s", third.String())
	if err != nil || !strings.Contains(third.String(), "job array "+held+" done: all 6 trees") {
		t.Fatalf("third run: %v", err)
	}
	if subs = submissions(); len(subs) != 2 {
		t.Fatalf("%d submissions, want 2", len(subs))
	}
	if r := report(subs[1], 0); r.Given != 1 || r.Evaluated != 1 {
		t.Errorf("resubmitted task: %+v, want the 1 missing tree evaluated", r)
	}
	var ev replay.Output
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Stats.UniqueTrees != 6 || ev.Stats.CacheHits != 6 || ev.Stats.TreesEvaluated != 0 || len(ev.PartEvaluations) != 10 {
		t.Fatalf("report stats %+v, want 6 trees all from the cache, 10 parts", ev.Stats)
	}
	if a := ev.TestAttribution["basics/control_flow/for_loop.c"]; a == nil || a.FirstPassPart == nil || *a.FirstPassPart != 3 || a.BrokenAt[0] != 5 {
		t.Fatalf("attribution %+v, want for_loop passing at part 3 and broken at 5", a)
	}

	// Last run: nothing to submit.
	var last syncBuffer
	err = evaluate(&last, nil).Run()
	t.Logf("last run:\n%s", last.String())
	if err != nil || !strings.Contains(last.String(), "every one in the evaluation cache: nothing to submit") || len(submissions()) != 2 {
		t.Fatalf("last run: %v, %d submissions", err, len(submissions()))
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

// TestEvaluateKubeManifest: --executor kube prints the Indexed Job of the
// trees the cache lacks (all 6 here, 4 tasks), and refuses a folder store
// without a volume claim.
func TestEvaluateKubeManifest(t *testing.T) {
	tj := replaytest.Build(t, "traj-kube-eval", replaytest.AttributionScript(), 3, true)
	st := storeWith(t, tj)
	args := []string{"replay", "evaluate", tj.ID, "--store", st, "--tests", "basics/control_flow", "--executor", "kube", "--tasks", "4",
		"--sandbox", "bwrap", "--image", "registry.example/traj:1"}
	if code, _, errOut := traj(t, args...); code != 2 || !strings.Contains(errOut, "--store-claim") {
		t.Fatalf("folder store without a claim: code %d\n%s", code, errOut)
	}
	code, y, errOut := traj(t, append(args, "--store-claim", "traj-runs")...)
	if code != 0 {
		t.Fatalf("manifest: code %d\n%s", code, errOut)
	}
	for _, w := range []string{"completions: 4", "completionMode: Indexed", "- evaluate-task\n        - " + tj.ID, "- /runs", "- basics/control_flow", "claimName: traj-runs"} {
		if !strings.Contains(y, w) {
			t.Errorf("manifest lacks %q:\n%s", w, y)
		}
	}
	if n := strings.Count(y[strings.Index(y, "trees: |"):strings.Index(y, "---")], "\n    "); n != 6 {
		t.Errorf("the trees file lists %d trees, want 6:\n%s", n, y)
	}
}
