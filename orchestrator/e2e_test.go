package orchestrator_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trajlab/traj/orchestrator"
	"github.com/trajlab/traj/orchestrator/folder"
	"github.com/trajlab/traj/orchestrator/progress"
	"github.com/trajlab/traj/sandbox/opencode"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/tracetest"
)

// The tests that record real trajectories run in parallel with each
// other, each in its own temporary folders, passing its API key under an
// environment variable name of its own (setKeyEnv). They mostly wait on
// their harnesses and sandboxes; -parallel still bounds how many run at
// once. TestFourAtOnce stays sequential: it sets the S3 credentials in the
// process's environment, and runs four trajectories at once itself.
var (
	trajBinOnce sync.Once
	trajBin     string
	trajBinErr  error
)

// needTraj returns the traj executable OpenCode starts as the MCP server:
// $TRAJ_BIN (set by make test), else one built for the test run.
func needTraj(t testing.TB) string {
	t.Helper()
	trajBinOnce.Do(func() {
		if p := os.Getenv("TRAJ_BIN"); p != "" {
			trajBin = p
			return
		}
		dir, err := os.MkdirTemp("", "traj-e2e-bin-")
		if err != nil {
			trajBinErr = err
			return
		}
		trajBin = filepath.Join(dir, "traj")
		out, err := exec.Command("go", "build", "-o", dir+"/", "../cmd/traj", "../cmd/traj-sandbox").CombinedOutput()
		if err != nil {
			trajBinErr = err
			t.Logf("go build: %s", out)
		}
	})
	if trajBinErr != nil {
		t.Fatalf("build traj: %v", trajBinErr)
	}
	return trajBin
}

type reporterFunc func(progress.Event)

func (f reporterFunc) Report(ev progress.Event) { f(ev) }

func needOpenCode(t testing.TB) string {
	t.Helper()
	bin, err := opencode.ResolveBinary("")
	if err != nil {
		t.Skipf("real OpenCode needed (make setup): %v", err)
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git CLI needed")
	}
	return bin
}

func randomHex(t *testing.T) string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// setKeyEnv sets an environment variable named prefix_RANDOM to value
// for the rest of t and returns its name: the API key a run is told to
// read by name. t.Setenv would keep the test sequential; a name of its
// own lets the tests that record in parallel each pass their own key.
func setKeyEnv(t *testing.T, prefix, value string) string {
	t.Helper()
	name := prefix + "_" + strings.ToUpper(randomHex(t))
	if err := os.Setenv(name, value); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Unsetenv(name) })
	return name
}

// e2eRun records the e2e script with the real OpenCode.
func e2eRun(t *testing.T, maxParts int, events *bytes.Buffer) (*orchestrator.Result, *trace.Trace, string, string) {
	t.Helper()
	bin := needOpenCode(t)
	traj := needTraj(t)
	work := t.TempDir()
	key := "key-" + randomHex(t)
	keyEnv := setKeyEnv(t, "TRAJ_E2E_API_KEY", key)
	// The server password exists only while the server runs: read it when
	// the run starts, to look for it in the trajectory folder afterwards.
	var password string
	rep := reporterFunc(func(ev progress.Event) {
		if ev.Type == progress.RunStarted {
			b, err := os.ReadFile(opencode.PasswordFile(filepath.Join(work, folder.SandboxesDir, ev.TrajectoryID)))
			if err != nil {
				t.Errorf("read the server password: %v (dir %s, attach %s)", err, ev.Dir, ev.Attach)
			}
			password = strings.TrimSpace(string(b))
		}
	})
	// Bounds, not expectations: generous, the recording tests run side by side.
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	res, err := orchestrator.Run(ctx, orchestrator.Options{
		Task: "testdata/tasks/e2e", Model: "scripted/demo", Script: "testdata/e2e.jsonl", MaxParts: maxParts,
		Timeout: 5 * time.Minute, Store: work, AgentBin: bin, TrajBin: traj,
		APIKeyEnvs: []string{keyEnv},
		Reporter:   progress.Multi{progress.NewJSON(events), rep}, AbortGrace: 5 * time.Second,
	})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	raw, err := os.ReadFile(filepath.Join(res.Dir, "agent_trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	if probs := trace.Validate(bytes.NewReader(raw)); len(probs) > 0 {
		t.Fatalf("trace does not validate: %v", probs)
	}
	out, err := exec.Command(traj, "trace", "validate", res.Dir).CombinedOutput()
	if err != nil {
		t.Errorf("traj trace validate: %v\n%s", err, out)
	}
	tr, err := trace.Read(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	// Every part, message and session the server sent is in the trace
	// exactly once.
	for id, n := range tracetest.ObjectIDs(tr) {
		if n != 1 || id == "" {
			t.Errorf("object %q appears %d times in the trace", id, n)
		}
	}
	if left := leftovers(work); len(left) > 0 {
		t.Errorf("processes left behind:\n%s", strings.Join(left, "\n"))
	}
	// Secrets appear nowhere in the trajectory folder.
	if len(password) < 16 {
		t.Fatalf("server password %q not captured", password)
	}
	filepath.WalkDir(res.Dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Errorf("read %s: %v", p, err)
			return nil
		}
		for name, s := range map[string]string{"server password": password, "API key": key} {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s appears in %s", name, p)
			}
		}
		return nil
	})
	return res, tr, password, key
}

// checkBundle clones repo.bundle with the git CLI and checks the history:
// HEAD is the final commit, and the commits are exactly the initial one
// plus one per part that changed files (plus the final checkpoint's).
func checkBundle(t *testing.T, res *orchestrator.Result, tr *trace.Trace) {
	t.Helper()
	clone := filepath.Join(t.TempDir(), "clone")
	git(t, filepath.Dir(clone), "clone", "-q", filepath.Join(res.Dir, "repo.bundle"), clone)
	if head := git(t, clone, "rev-parse", "HEAD"); head != tr.SessionEnd.FinalGitCommit {
		t.Errorf("bundle HEAD %s, final_git_commit %s", head, tr.SessionEnd.FinalGitCommit)
	}
	history := strings.Fields(git(t, clone, "log", "--format=%H", "HEAD"))
	slices.Reverse(history)
	var want []string
	prev := history[0] // the initial empty commit
	for _, turn := range tr.Turns {
		for _, p := range turn.Parts {
			cp := p.RepoCheckpoint
			if cp.CommitBefore != prev {
				t.Errorf("part %d: commit_before %s, want the previous effective commit %s", p.Part, cp.CommitBefore, prev)
			}
			changed := cp.CommitAfter != cp.CommitBefore
			if cp.Committed != changed || cp.Committed != (len(cp.ChangedFiles) > 0) || p.GitCommit != cp.CommitAfter {
				t.Errorf("part %d: checkpoint %+v, git_commit %s", p.Part, cp, p.GitCommit)
			}
			if cp.Committed {
				want = append(want, cp.CommitAfter)
				files := strings.Fields(git(t, clone, "diff-tree", "--no-commit-id", "--name-only", "-r", cp.CommitAfter))
				if !slices.Equal(files, cp.ChangedFiles) {
					t.Errorf("part %d: changed_files %v, git says %v", p.Part, cp.ChangedFiles, files)
				}
			}
			prev = cp.CommitAfter
		}
	}
	if tr.SessionEnd.FinalGitCommit != prev {
		want = append(want, tr.SessionEnd.FinalGitCommit) // the final checkpoint
	}
	if !slices.Equal(history[1:], want) {
		t.Errorf("bundle history after the initial commit %v, want one commit per changing part %v", history[1:], want)
	}
	if len(want) == 0 {
		t.Error("no part changed files; the script writes build.sh")
	}
}

func partsOf(tr *trace.Trace) []trace.Part {
	var out []trace.Part
	for _, t := range tr.Turns {
		out = append(out, t.Parts...)
	}
	return out
}

func TestEndToEndRealOpenCode(t *testing.T) {
	t.Parallel() // with the other recording tests: see trajBinOnce
	var events bytes.Buffer
	res, tr, _, _ := e2eRun(t, 50, &events)
	parts := partsOf(tr)
	for i, p := range parts {
		if p.Part != i+1 {
			t.Fatalf("part %d has index %d: not contiguous", i+1, p.Part)
		}
	}
	end := tr.SessionEnd
	if end.Reason != trace.EndSolved || end.TotalParts != len(parts) || end.TotalTurns != len(tr.Turns) {
		t.Errorf("session_end = %+v with %d parts in %d turns, want solved", end, len(parts), len(tr.Turns))
	}
	if res.End.Reason != end.Reason || tr.Artifacts[trace.ArtifactTrace] == "" || tr.Artifacts[trace.ArtifactBundle] == "" {
		t.Errorf("result %+v, artifacts %v", res.End, tr.Artifacts)
	}
	checkBundle(t, res, tr)

	var runTests, subAgent []trace.Part
	for _, p := range parts {
		if p.Tool == "tests_run_tests" {
			runTests = append(runTests, p)
		}
		if p.SessionID != tr.SessionID {
			subAgent = append(subAgent, p)
		}
		if (p.Tool == "tests_run_tests") != (len(p.EnvoiCalls) > 0) {
			t.Errorf("part %d (%s %s) has %d envoi calls", p.Part, p.PartType, p.Tool, len(p.EnvoiCalls))
		}
	}
	if len(runTests) != 1 {
		t.Fatalf("%d run_tests parts, want 1", len(runTests))
	}
	call := runTests[0].EnvoiCalls[0]
	var result struct{ Passed, Failed, Total int }
	if err := json.Unmarshal(call.Result, &result); err != nil || call.Path != "basics/smoke" || call.StatusCode != 200 ||
		result.Total == 0 || result.Passed != result.Total {
		t.Errorf("run_tests call = %+v (result %+v, %v)", call, result, err)
	}
	// The trace keeps the full answer; the agent was told the task's
	// feedback level (failures: never the expected outputs).
	if !bytes.Contains(call.Result, []byte(`"expected_exit_code"`)) {
		t.Errorf("the recorded run_tests result lacks the full detail: %s", call.Result)
	}
	var told struct {
		State struct {
			Output string `json:"output"`
		} `json:"state"`
	}
	if err := json.Unmarshal(runTests[0].Content, &told); err != nil || !strings.Contains(told.State.Output, `"tool_call_id"`) ||
		strings.Contains(told.State.Output, "expected_") {
		t.Errorf("the agent was told %q (%v): want the failures level with a tool_call_id", told.State.Output, err)
	}
	if len(subAgent) < 2 {
		t.Fatalf("%d sub-agent parts, want the bash call and the answer", len(subAgent))
	}
	child := subAgent[0].SessionID
	var childInfo json.RawMessage
	for _, p := range parts[:subAgent[0].Part] {
		for _, s := range p.Sessions {
			var info struct{ ID, ParentID string }
			_ = json.Unmarshal(s, &info)
			if info.ID == child && info.ParentID == tr.SessionID {
				childInfo = s
			}
		}
	}
	if childInfo == nil || !slices.Contains(subAgent[0].SessionIDs, child) {
		t.Errorf("sub-agent session %s not recorded with its parent by part %d", child, subAgent[0].Part)
	}
	// Progress events for programs.
	for _, typ := range []string{`"type":"run_started"`, `"type":"part"`, `"type":"tests"`, `"type":"run_ended"`} {
		if !strings.Contains(events.String(), typ) {
			t.Errorf("no %s event", typ)
		}
	}
}

func TestEndToEndPartBudget(t *testing.T) {
	t.Parallel()
	var events bytes.Buffer
	res, tr, _, _ := e2eRun(t, 7, &events)
	parts := partsOf(tr)
	if len(parts) != 7 || parts[6].Part != 7 {
		t.Fatalf("%d parts, want exactly 7", len(parts))
	}
	// The budget stops the loop at 7 parts; ground truth found the
	// checkpoint of part 3 passing, so the run is solved all the same.
	if e := tr.SessionEnd; e.Reason != trace.EndSolved || e.TotalParts != 7 || !strings.Contains(e.Detail, "(the loop ended: part_limit)") {
		t.Errorf("session_end = %+v, want solved by ground truth after the loop ended at part_limit at 7", e)
	}
	checkBundle(t, res, tr)
}

// leftovers lists processes whose command line or working folder mentions
// dir: services of a trajectory that outlived it.
func leftovers(dir string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cmd, _ := os.ReadFile(filepath.Join(p, "cmdline"))
		cwd, _ := os.Readlink(filepath.Join(p, "cwd"))
		stat, _ := os.ReadFile(filepath.Join(p, "stat"))
		if strings.Contains(string(stat), ") Z ") {
			continue // a zombie holds nothing
		}
		if bytes.Contains(cmd, []byte(dir)) || strings.HasPrefix(cwd, dir) {
			out = append(out, p+": "+strings.ReplaceAll(string(cmd), "\x00", " "))
		}
	}
	return out
}

// TestEndToEndInterrupted stops `traj run` with SIGTERM after its first
// part that committed (build.sh; a SIGTERM after the reasoning before it
// could land before the write on a busy machine): the trajectory is
// finished cleanly (interrupted, final checkpoint, bundle) and no service
// is left running.
func TestEndToEndInterrupted(t *testing.T) {
	t.Parallel()
	bin := needOpenCode(t)
	traj := needTraj(t)
	work := t.TempDir()
	cmd := exec.Command(traj, "run", "--task", "testdata/tasks/e2e", "--model", "scripted/demo",
		"--script", "testdata/e2e.jsonl", "--max-parts", "50", "--store", work, "--agent-bin", bin,
		"--trajectory-id", "interrupted", "--json")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(3*time.Minute, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	dec := json.NewDecoder(stdout)
	signalled := false
	var last progress.Event
	finishing, afterSignal := false, 0
	for {
		var ev progress.Event
		if err := dec.Decode(&ev); err != nil {
			break
		}
		last = ev
		if signalled && ev.Type != progress.PartDone && ev.Type != progress.ToolStarted && ev.Type != progress.Tests {
			// The stop is acknowledged before the run finishes anything.
			afterSignal++
			if ev.Type == progress.Finishing && ev.Message == orchestrator.FinishingMessage && afterSignal == 1 {
				finishing = true
			}
		}
		if ev.Type == progress.PartDone && ev.Committed && !signalled {
			signalled = true
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
		}
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 130 {
		t.Fatalf("exit %v, want status 130\n%s", err, stderr.String())
	}
	if last.Type != progress.RunEnded || last.Reason != trace.EndInterrupted {
		t.Errorf("last event %+v, want run_ended interrupted", last)
	}
	if !finishing {
		t.Errorf("no %q event as the first event after SIGTERM", orchestrator.FinishingMessage)
	}
	dir := filepath.Join(work, "trajectories", "interrupted")
	raw, err := os.ReadFile(filepath.Join(dir, "agent_trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	if probs := trace.Validate(bytes.NewReader(raw)); len(probs) > 0 {
		t.Fatalf("trace does not validate: %v", probs)
	}
	tr, err := trace.Read(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if e := tr.SessionEnd; e == nil || e.Reason != trace.EndInterrupted || e.TotalParts < 1 {
		t.Errorf("session_end = %+v, want interrupted after at least one part", e)
	}
	checkBundle(t, &orchestrator.Result{Dir: dir}, tr)
	if left := leftovers(work); len(left) > 0 {
		t.Errorf("processes left behind:\n%s", strings.Join(left, "\n"))
	}
}
