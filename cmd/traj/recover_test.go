package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/trajlab/traj/orchestrator/folder"
	"github.com/trajlab/traj/replay/replaytest"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
)

// killedRun is a trajectory as a SIGKILLed `traj run` leaves it.
type killedRun struct {
	ID, Work, Store, Dir, Workspace string
	tj                              *replaytest.Trajectory
}

// newKilledRun lays out work/trajectories/<id> as a killed run leaves it:
// run.json still "running" (its process gone), an unfinished trace whose
// last turn is open, the history bundles; the workspace repository (with
// every commit) at work/sandboxes/<id>/workspace. The store is a separate
// folder, empty.
func newKilledRun(t *testing.T, id string) *killedRun {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git CLI needed")
	}
	tj := replaytest.BuildSpec(t, replaytest.Spec{ID: id, Changes: replaytest.AttributionScript(), TurnSize: 4,
		TrajFields: true, History: true})
	root := t.TempDir()
	k := &killedRun{ID: id, Work: filepath.Join(root, "work"), Store: filepath.Join(root, "store"), tj: tj}
	k.Dir = filepath.Join(k.Work, "trajectories", id)
	if err := os.MkdirAll(k.Store, 0o755); err != nil { // the store the run used exists
		t.Fatal(err)
	}
	k.Workspace = filepath.Join(k.Work, folder.SandboxesDir, id, "workspace")
	if err := os.MkdirAll(filepath.Dir(k.Workspace), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", tj.Work, k.Workspace).CombinedOutput(); err != nil {
		t.Fatalf("copy workspace: %v\n%s", err, out)
	}
	// The checkpoint history lives beside the workspace, not in it.
	if err := os.Rename(filepath.Join(k.Workspace, ".git"), k.checkpoints()); err != nil {
		t.Fatal(err)
	}
	for _, b := range tj.HistoryBundles {
		writeFile(t, filepath.Join(k.Dir, "history", filepath.Base(b)), readFile(t, b))
	}
	w, err := trace.Create(filepath.Join(k.Dir, store.TraceName), tj.Trace.Header(), trace.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, turn := range tj.Trace.Turns {
		if err := w.BeginTurn(trace.TurnStart{Timestamp: turn.Timestamp, Prompt: turn.Prompt, SessionID: tj.Trace.SessionID}); err != nil {
			t.Fatal(err)
		}
		for j := range turn.Parts {
			if err := w.AppendPart(&turn.Parts[j]); err != nil {
				t.Fatal(err)
			}
		}
		if i < len(tj.Trace.Turns)-1 {
			if err := w.EndTurn(trace.TurnEnd{EndedAt: turn.Parts[len(turn.Parts)-1].Timestamp}); err != nil {
				t.Fatal(err)
			}
		}
	}
	w.Close() // killed: no session_end, the shadow stays
	k.writeState(t, folder.RunState{TrajectoryID: id, Task: "c-compiler", TaskSource: "builtin:c-compiler",
		Model: "scripted/tiny", MaxParts: 20, TimeoutSec: 600, Store: k.Store, Workspace: k.Workspace,
		SandboxDir: filepath.Dir(k.Workspace), StartedAt: "2026-11-21T10:00:00.000000Z", Status: "running", PID: 999999999})
	return k
}

func (k *killedRun) writeState(t *testing.T, st folder.RunState) {
	t.Helper()
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(k.Dir, store.RunStateName), b)
}

// checkpoints is the run's checkpoint history, beside its workspace.
func (k *killedRun) checkpoints() string {
	return filepath.Join(filepath.Dir(k.Workspace), folder.CheckpointsName)
}

func (k *killedRun) lastCommit() string { return k.tj.Commits[len(k.tj.Commits)-1] }

func (k *killedRun) readTrace(t *testing.T) *trace.Trace {
	t.Helper()
	f, err := os.Open(filepath.Join(k.Dir, store.TraceName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := trace.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// checkFinalized: the trace validates and ends interrupted at final, the
// bundle clones with the git CLI to final, run.json says finished, and the
// store holds the same trace and a bundle replay can verify.
func (k *killedRun) checkFinalized(t *testing.T, final string) {
	t.Helper()
	if code, out, errs := runTraj(t, "trace", "validate", k.Dir); code != 0 || !strings.Contains(out, "interrupted") {
		t.Fatalf("validate after finalize: exit %d\n%s%s", code, out, errs)
	}
	tr := k.readTrace(t)
	e := tr.SessionEnd
	if e == nil || e.Reason != trace.EndInterrupted || e.FinalGitCommit != final || e.TotalParts != 10 || e.Detail == "" {
		t.Fatalf("session_end %+v, want interrupted at %s after 10 parts", e, final)
	}
	clone := filepath.Join(t.TempDir(), "clone")
	replaytest.Git(t, filepath.Dir(clone), "clone", "-q", filepath.Join(k.Dir, store.BundleName), clone)
	if head := replaytest.Git(t, clone, "rev-parse", "HEAD"); head != final {
		t.Fatalf("repo.bundle HEAD %s, want %s", head, final)
	}
	var st folder.RunState
	if err := json.Unmarshal(readFile(t, filepath.Join(k.Dir, store.RunStateName)), &st); err != nil || st.Status != "finished" || st.Reason != trace.EndInterrupted {
		t.Fatalf("run.json %+v (%v)", st, err)
	}
	remote := filepath.Join(k.Store, "trajectories", k.ID)
	if string(readFile(t, filepath.Join(remote, store.TraceName))) != string(readFile(t, filepath.Join(k.Dir, store.TraceName))) {
		t.Fatal("the store's trace differs from the local one")
	}
	if code, out, errs := runTraj(t, "replay", "verify", "--trajectory-id", k.ID, "--store", k.Store); code != 0 {
		t.Fatalf("replay verify from the store: exit %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(trace.ShadowPath(filepath.Join(k.Dir, store.TraceName))); !os.IsNotExist(err) {
		t.Errorf("trace shadow left after finalize (%v)", err)
	}
}

// TestFinalizeKilledRun: work done after the last recorded part is kept
// by a final checkpoint; a second finalize only reports.
func TestFinalizeKilledRun(t *testing.T) {
	k := newKilledRun(t, "killed-ws")
	writeFile(t, filepath.Join(k.Workspace, "late.txt"), []byte("written after the last part\n"))
	code, out, errs := runTraj(t, "trace", "finalize", k.ID, "--work-dir", k.Work, "--store", k.Store)
	if code != 0 || !strings.Contains(out, "interrupted after 10 parts") || !strings.Contains(out, "0 not uploaded") {
		t.Fatalf("finalize: exit %d\n%s%s", code, out, errs)
	}
	final := k.readTrace(t).SessionEnd.FinalGitCommit
	if final == k.lastCommit() {
		t.Fatal("the work after the last part was not checkpointed")
	}
	if parent := replaytest.Git(t, k.Workspace, "--git-dir", k.checkpoints(), "rev-parse", final+"^"); parent != k.lastCommit() {
		t.Fatalf("final checkpoint's parent %s, want the last part's commit %s", parent, k.lastCommit())
	}
	k.checkFinalized(t, final)
	code, out, errs = runTraj(t, "trace", "finalize", k.ID, "--work-dir", k.Work, "--store", k.Store)
	if code != 0 || !strings.Contains(out, "already finished") {
		t.Fatalf("second finalize: exit %d\n%s%s", code, out, errs)
	}
}

// TestFinalizeWorkspaceGone: with the workspace and the checkpoint history
// deleted the repository is rebuilt from the history bundles, from the
// trajectory folder or, when those are gone too, from the store.
func TestFinalizeWorkspaceGone(t *testing.T) {
	for _, where := range []string{"folder", "store"} {
		t.Run(where, func(t *testing.T) {
			k := newKilledRun(t, "killed-gone-"+where)
			for _, d := range []string{k.Workspace, k.checkpoints()} {
				if err := os.RemoveAll(d); err != nil {
					t.Fatal(err)
				}
			}
			if where == "store" {
				hist := filepath.Join(k.Dir, "history")
				for _, b := range k.tj.HistoryBundles {
					writeFile(t, filepath.Join(k.Store, "trajectories", k.ID, "history", filepath.Base(b)), readFile(t, b))
				}
				if err := os.RemoveAll(hist); err != nil {
					t.Fatal(err)
				}
			}
			code, out, errs := runTraj(t, "trace", "finalize", k.ID, "--work-dir", k.Work, "--store", k.Store)
			if code != 0 {
				t.Fatalf("finalize: exit %d\n%s%s", code, out, errs)
			}
			k.checkFinalized(t, k.lastCommit())
		})
	}
}

// TestRecoveryBadInput: finalize, sync and resume refuse what they cannot
// do with a clear message and a non-zero exit, changing nothing.
func TestRecoveryBadInput(t *testing.T) {
	k := newKilledRun(t, "killed-bad")
	solved := newKilledRun(t, "killed-solved")
	// A finished, solved trajectory.
	code, out, errs := runTraj(t, "trace", "finalize", solved.ID, "--work-dir", solved.Work, "--store", solved.Store)
	if code != 0 {
		t.Fatalf("finalize: %d %s%s", code, out, errs)
	}
	var st folder.RunState
	json.Unmarshal(readFile(t, filepath.Join(solved.Dir, store.RunStateName)), &st)
	st.Reason = trace.EndSolved
	solved.writeState(t, st)
	solvedTrace := filepath.Join(solved.Dir, store.TraceName)
	writeFile(t, solvedTrace, []byte(strings.Replace(string(readFile(t, solvedTrace)), `"reason":"interrupted"`, `"reason":"solved"`, 1)))

	// A trajectory finished as interrupted, all 10 parts recorded.
	done := newKilledRun(t, "killed-done")
	if code, out, errs := runTraj(t, "trace", "finalize", done.ID, "--work-dir", done.Work, "--store", done.Store); code != 0 {
		t.Fatalf("finalize: %d %s%s", code, out, errs)
	}

	// A trajectory whose recorder is alive: a process named like traj.
	live := newKilledRun(t, "killed-live")
	fake := filepath.Join(t.TempDir(), "traj-recorder")
	writeFile(t, fake, readFile(t, "/bin/sleep"))
	if err := os.Chmod(fake, 0o755); err != nil {
		t.Fatal(err)
	}
	sleeper := exec.Command(fake, "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sleeper.Process.Kill(); sleeper.Wait() })
	json.Unmarshal(readFile(t, filepath.Join(live.Dir, store.RunStateName)), &st)
	st.PID = sleeper.Process.Pid
	live.writeState(t, st)

	// A trajectory whose trace is cut in half.
	cut := newKilledRun(t, "killed-cut")
	tracePath := filepath.Join(cut.Dir, store.TraceName)
	data := readFile(t, tracePath)
	writeFile(t, tracePath, data[:len(data)/2])
	os.Remove(trace.ShadowPath(tracePath))

	// A run.json that is not JSON.
	broken := newKilledRun(t, "killed-broken")
	writeFile(t, filepath.Join(broken.Dir, store.RunStateName), []byte("{not json"))

	loc := func(k *killedRun) []string { return []string{k.ID, "--work-dir", k.Work, "--store", k.Store} }
	resume := func(k *killedRun, extra ...string) []string {
		return append([]string{"run", "--resume", k.ID, "--work-dir", k.Work, "--store", k.Store, "--agent-bin", "/nonexistent/opencode"}, extra...)
	}
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"sync unknown id", []string{"sync", "nope", "--work-dir", k.Work}, 2, "no run.json"},
		{"sync id with ..", []string{"sync", "../x", "--work-dir", k.Work}, 2, "trajectory id"},
		{"finalize unknown id", []string{"trace", "finalize", "nope", "--work-dir", k.Work}, 2, "no run.json"},
		{"finalize id with slash", []string{"trace", "finalize", "a/b", "--work-dir", k.Work}, 2, "trajectory id"},
		{"finalize while recording", append([]string{"trace", "finalize"}, loc(live)...), 1, "still being recorded by process " + strconv.Itoa(sleeper.Process.Pid)},
		{"sync while recording", append([]string{"sync"}, loc(live)...), 1, "still being recorded"},
		{"resume while recording", resume(live), 0, "still being recorded"},
		{"finalize truncated trace", append([]string{"trace", "finalize"}, loc(cut)...), 1, "truncated JSON"},
		{"sync truncated trace", append([]string{"sync"}, loc(cut)...), 1, "truncated JSON"},
		{"resume truncated trace", resume(cut), 0, "truncated JSON"},
		{"finalize broken run.json", append([]string{"trace", "finalize"}, loc(broken)...), 2, "run state"},
		{"resume solved", resume(solved), 0, "the trajectory is solved"},
		{"resume budget spent", resume(done, "--max-parts", "10"), 0, "give a larger --max-parts"},
		{"resume unknown id", []string{"run", "--resume", "nope", "--work-dir", k.Work}, 0, "no run.json"},
		{"resume scripted without script", []string{"run", "--resume", k.ID, "--work-dir", k.Work, "--model", "scripted/demo"}, 0, "is served from a script: give --script"},
		{"resume negative budget", resume(k, "--max-parts=-1"), 2, "--max-parts"},
		{"resume with a bad store", resume(k, "--store", "ftp://x"), 0, `unsupported scheme "ftp"`},
	}
	roots := []string{filepath.Dir(k.Work), filepath.Dir(live.Work), filepath.Dir(cut.Work), filepath.Dir(broken.Work),
		filepath.Dir(solved.Work), filepath.Dir(done.Work)}
	snap := func() map[string]string {
		all := map[string]string{}
		for _, r := range roots {
			for p, v := range snapshotTree(t, r) {
				all[filepath.Join(r, p)] = v
			}
		}
		return all
	}
	before := snap()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runTraj(t, tt.args...)
			if code == 0 || (tt.code != 0 && code != tt.code) {
				t.Errorf("exit %d, want %d (non-zero)\nstdout: %s\nstderr: %s", code, tt.code, stdout, stderr)
			}
			if !strings.Contains(stdout+stderr, tt.msg) {
				t.Errorf("output does not say %q:\nstdout: %s\nstderr: %s", tt.msg, stdout, stderr)
			}
			after := snap()
			if d := treeDiff(before, after); d != "" {
				t.Errorf("the command changed files:\n%s", d)
				before = after
			}
		})
	}
	if syscall.Kill(sleeper.Process.Pid, 0) != nil {
		t.Fatal("the live recorder stand-in died during the test")
	}
}

// TestResumeAtBudget: a run killed after its last budgeted part (while
// finishing) is finished by resume with part_limit, without starting the
// agent again.
func TestResumeAtBudget(t *testing.T) {
	k := newKilledRun(t, "killed-at-budget")
	code, out, errs := runTraj(t, "run", "--resume", k.ID, "--work-dir", k.Work, "--store", k.Store, "--max-parts", "10",
		"--agent-bin", "/nonexistent/opencode")
	if code != 0 || !strings.Contains(out, "part_limit after 10 parts") {
		t.Fatalf("resume at the budget: exit %d\n%s%s", code, out, errs)
	}
	tr := k.readTrace(t)
	if e := tr.SessionEnd; e == nil || e.Reason != trace.EndPartLimit || e.TotalParts != 10 {
		t.Fatalf("session_end %+v, want part_limit after 10 parts", tr.SessionEnd)
	}
	if code, out, errs := runTraj(t, "replay", "verify", "--trajectory-id", k.ID, "--store", k.Store); code != 0 {
		t.Fatalf("replay verify from the store: exit %d\n%s%s", code, out, errs)
	}
}
