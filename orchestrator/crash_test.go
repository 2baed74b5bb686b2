package orchestrator_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/trajlab/traj/orchestrator"
	"github.com/trajlab/traj/orchestrator/folder"
	"github.com/trajlab/traj/sandbox/disk"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
)

// trajProc is one `traj run` started by a test as a separate process.
type trajProc struct {
	cmd    *exec.Cmd
	stdout string // JSON progress events
	stderr string
	done   chan struct{}
	err    error
}

// startTraj starts traj with args; progress goes to files under dir.
func startTraj(t *testing.T, traj, opencodeBin, dir, name string, args ...string) *trajProc {
	t.Helper()
	p := &trajProc{stdout: filepath.Join(dir, name+".out"), stderr: filepath.Join(dir, name+".err"), done: make(chan struct{})}
	out, err := os.Create(p.stdout)
	if err != nil {
		t.Fatal(err)
	}
	errf, err := os.Create(p.stderr)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(traj, args...)
	p.cmd.Env = append(os.Environ(), "TRAJ_OPENCODE_BIN="+opencodeBin)
	p.cmd.Stdout, p.cmd.Stderr = out, errf
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		out.Close()
		errf.Close()
		close(p.done)
	}()
	return p
}

// ackedParts is the highest part the run reported as recorded (a "part"
// progress event is printed only after the part is durable in the trace).
func (p *trajProc) ackedParts() int {
	f, err := os.Open(p.stdout)
	if err != nil {
		return 0
	}
	defer f.Close()
	max := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev struct {
			Type string `json:"type"`
			Part int    `json:"part"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Type == "part" && ev.Part > max {
			max = ev.Part
		}
	}
	return max
}

func (p *trajProc) exitCode() int {
	if ee, ok := p.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if p.err != nil {
		return -1
	}
	return 0
}

func (p *trajProc) logs() string {
	o, _ := os.ReadFile(p.stdout)
	e, _ := os.ReadFile(p.stderr)
	return fmt.Sprintf("stdout:\n%s\nstderr:\n%s", tail(o, 3000), tail(e, 3000))
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// processesUnder lists live processes whose working directory or command
// line mentions dir (OpenCode runs in the workspace; `traj mcp` names it).
func processesUnder(dir string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		base := "/proc/" + e.Name()
		if stat, err := os.ReadFile(base + "/stat"); err == nil {
			if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
				continue // a zombie holds no resources but its pid
			}
		}
		cwd, _ := os.Readlink(base + "/cwd")
		cmdline, _ := os.ReadFile(base + "/cmdline")
		if strings.HasPrefix(cwd, dir) || bytes.Contains(cmdline, []byte(dir)) {
			out = append(out, e.Name()+" "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return out
}

// waitNoProcessesUnder fails the test if processes of dir outlive d.
func waitNoProcessesUnder(t *testing.T, dir string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		left := processesUnder(dir)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, p := range left {
				if pid, err := strconv.Atoi(strings.Fields(p)[0]); err == nil {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			t.Fatalf("processes left running %s after traj was killed:\n%s", d, strings.Join(left, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkCrashState checks a trajectory folder after traj was killed: the
// trace reads and validates (parts 1..N without gaps) and holds at least
// the acknowledged parts; every commit it references exists in the
// workspace repository; the history bundles fetch in order with the git
// CLI. It returns the number of parts in the trace.
func checkCrashState(t *testing.T, dir, workspace string, acked int) int {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "agent_trace.json"))
	if err != nil {
		t.Fatalf("trace after kill: %v", err)
	}
	if probs := trace.Validate(bytes.NewReader(raw)); len(probs) > 0 {
		t.Fatalf("trace after kill does not validate: %v", probs)
	}
	tr, err := trace.Read(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("trace after kill: %v", err)
	}
	commits := map[string]bool{}
	n := 0
	for _, turn := range tr.Turns {
		for _, p := range turn.Parts {
			n++
			if p.Part != n {
				t.Fatalf("part %d at position %d", p.Part, n)
			}
			commits[p.GitCommit] = true
			if cp := p.RepoCheckpoint; cp != nil {
				commits[cp.CommitBefore] = true
				commits[cp.CommitAfter] = true
			}
		}
	}
	if tr.SessionEnd != nil {
		commits[tr.SessionEnd.FinalGitCommit] = true
	}
	if n < acked {
		t.Fatalf("trace holds %d parts but the run had acknowledged part %d", n, acked)
	}
	delete(commits, "")
	if len(commits) > 0 {
		var list []string
		for c := range commits {
			list = append(list, c+"^{commit}")
		}
		sort.Strings(list)
		// The checkpoint history lives beside the workspace, not in it.
		cmd := exec.Command("git", "--git-dir", filepath.Join(filepath.Dir(workspace), folder.CheckpointsName), "cat-file", "--batch-check")
		cmd.Dir = workspace
		cmd.Stdin = strings.NewReader(strings.Join(list, "\n") + "\n")
		out, err := cmd.CombinedOutput()
		if err != nil || bytes.Contains(out, []byte("missing")) {
			t.Fatalf("commits referenced by the trace missing from the checkpoint history (%v):\n%s", err, out)
		}
	}
	bundles, _ := filepath.Glob(filepath.Join(dir, "history", "*.bundle"))
	sort.Strings(bundles)
	if len(bundles) > 0 {
		bare := t.TempDir()
		git(t, bare, "init", "-q", "--bare")
		for i, b := range bundles {
			git(t, bare, "fetch", "-q", b, fmt.Sprintf("+refs/*:refs/h%d/*", i))
		}
	}
	return n
}

// killChain records trajectories with the scripted model and SIGKILLs
// traj at random instants, kills times: during start-up, or just after a
// random number of recorded parts. After each kill it checks the
// trajectory folder and that no child process survived, then resumes the
// trajectory (a new one once a run finished). It ends with the last
// trajectory finalized (finalize), or resumed to its end with its
// workspace deleted first (restored from the history bundles), then
// verified from the store with `traj replay verify`.
func killChain(t *testing.T, chain, kills int, finalize bool, total *atomic.Int64) {
	bin := needOpenCode(t)
	traj := needTraj(t)
	root := t.TempDir()
	work, st := filepath.Join(root, "work"), filepath.Join(root, "store")
	seed := uint64(time.Now().UnixNano())
	t.Logf("chain %d: seed %d", chain, seed)
	rng := rand.New(rand.NewPCG(seed, uint64(chain)))
	// Only a new run names --timeout and --script: a resume keeps the
	// recorded ones (run.json remembers every run option).
	common := []string{"--store", st, "--work-dir", work, "--json"}
	traj1 := 1
	id := func() string { return fmt.Sprintf("kill-%d-%d", chain, traj1) }
	resumable := false
	killed, runs := 0, 0
	for killed < kills {
		runs++
		args := append([]string{"run", "--resume", id()}, common...)
		if !resumable {
			args = append([]string{"run", "--task", "testdata/tasks/e2e", "--model", "scripted/demo", "--max-parts", "40",
				"--trajectory-id", id(), "--timeout", "3m", "--script", "testdata/crash.jsonl"}, common...)
		}
		p := startTraj(t, traj, bin, root, fmt.Sprintf("run-%d", runs), args...)
		// Half the kills land in start-up or the first turn's set-up, half
		// right after a recorded part.
		var killAt <-chan time.Time
		wantParts := 0
		if rng.IntN(2) == 0 {
			killAt = time.After(time.Duration(200+rng.IntN(10000)) * time.Millisecond)
		} else {
			wantParts = 1 + rng.IntN(10)
		}
		poll := time.NewTicker(20 * time.Millisecond)
		deadline := time.After(2 * time.Minute)
		finished := false
	wait:
		for {
			select {
			case <-p.done:
				finished = true
				break wait
			case <-killAt:
				break wait
			case <-poll.C:
				if wantParts > 0 && p.ackedParts() >= wantParts && killAt == nil {
					killAt = time.After(time.Duration(rng.IntN(400)) * time.Millisecond)
				}
			case <-deadline:
				p.cmd.Process.Kill()
				<-p.done
				t.Fatalf("run %d neither finished nor reached part %d in 2 minutes\n%s", runs, wantParts, p.logs())
			}
		}
		poll.Stop()
		dir := filepath.Join(work, "trajectories", id())
		workspace := filepath.Join(work, "sandboxes", id(), "workspace")
		if finished {
			if code := p.exitCode(); code != 0 {
				t.Fatalf("run %d exited %d\n%s", runs, code, p.logs())
			}
			checkCrashState(t, dir, workspace, p.ackedParts())
			t.Logf("chain %d run %d finished before its kill; next trajectory", chain, runs)
			traj1++
			resumable = false
			continue
		}
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-p.done
		killed++
		total.Add(1)
		waitNoProcessesUnder(t, root, 5*time.Second)
		if _, err := os.Stat(filepath.Join(dir, "run.json")); os.IsNotExist(err) {
			// Killed before run.json: nothing recorded, nothing to resume.
			// Gone as a reboot and an rm -rf leave it: the sandbox's disk
			// cap may be mounted already (kill -9 leaves its mounts).
			t.Logf("chain %d kill %d: before run.json existed", chain, killed)
			os.RemoveAll(dir)
			if err := disk.UnmountUnder(filepath.Join(work, "sandboxes", id())); err != nil {
				t.Fatal(err)
			}
			if err := os.RemoveAll(filepath.Join(work, "sandboxes", id())); err != nil {
				t.Fatal(err)
			}
			resumable = false
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "agent_trace.json")); os.IsNotExist(err) {
			// Killed during start-up: resume starts the trace.
			t.Logf("chain %d kill %d: before the trace existed", chain, killed)
			resumable = true
			continue
		}
		n := checkCrashState(t, dir, workspace, p.ackedParts())
		t.Logf("chain %d kill %d (run %d): %d parts recorded, %d acknowledged", chain, killed, runs, n, p.ackedParts())
		resumable = true
	}
	if !resumable {
		return
	}
	dir := filepath.Join(work, "trajectories", id())
	workspace := filepath.Join(work, "sandboxes", id(), "workspace")
	var args []string
	// A trace never created (every kill in start-up) or without parts is
	// resumed even in a finalize chain: there is nothing to finalize or
	// verify.
	var last *trace.Trace
	if _, err := os.Stat(filepath.Join(dir, "agent_trace.json")); err == nil {
		last = readTraceFile(t, filepath.Join(dir, "agent_trace.json"))
	}
	if finalize && (last == nil || lastPart(last) == 0) {
		t.Logf("chain %d: no part recorded; resuming instead of finalizing", chain)
		finalize = false
	}
	if finalize {
		args = []string{"trace", "finalize", id(), "--work-dir", work, "--store", st}
	} else {
		// Resume once more, with the workspace and the checkpoint history
		// gone: both come back from the history bundles (unless the last
		// commit never reached one: killed between the trace append and the
		// bundle write).
		args = append([]string{"run", "--resume", id()}, common...)
		if c := lastCommit(last); c != "" && inHistoryBundles(t, dir, c) {
			// A SIGKILLed run leaves the sandbox's disk image mounted (the
			// next run takes the mounts over); gone here means what a
			// reboot and an rm -rf of the workspace's files and the
			// history leave: no mount, an empty workspace in the image
			// (which keeps the harness's state), no checkpoint history.
			sandboxDir := filepath.Dir(workspace)
			if err := disk.UnmountUnder(sandboxDir); err != nil {
				t.Fatal(err)
			}
			unmount, err := orchestrator.AttachWorkspace(t.Context(), sandboxDir, workspace, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			ents, _ := os.ReadDir(workspace)
			for _, e := range ents {
				if err := os.RemoveAll(filepath.Join(workspace, e.Name())); err != nil {
					t.Fatal(err)
				}
			}
			unmount()
			if err := os.RemoveAll(filepath.Join(sandboxDir, folder.CheckpointsName)); err != nil {
				t.Fatal(err)
			}
			t.Logf("chain %d: workspace and checkpoint history deleted before the last resume (last commit %s)", chain, c)
		}
	}
	p := startTraj(t, traj, bin, root, "last", args...)
	<-p.done
	if code := p.exitCode(); code != 0 {
		t.Fatalf("%s exited %d\n%s", args[0], code, p.logs())
	}
	checkCrashState(t, dir, workspace, 0)
	tr := readTraceFile(t, filepath.Join(dir, "agent_trace.json"))
	if tr.SessionEnd == nil || (finalize && tr.SessionEnd.Reason != trace.EndInterrupted) {
		t.Fatalf("after %s: session_end %+v", args[0], tr.SessionEnd)
	}
	// Every resume kept the timeout the first run recorded (none named
	// --timeout).
	var rs folder.RunState
	if raw, err := os.ReadFile(filepath.Join(dir, store.RunStateName)); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(raw, &rs); err != nil {
		t.Fatal(err)
	}
	if rs.TimeoutSec != 180 {
		t.Fatalf("run.json timeout_seconds %d after %s, want the recorded 180", rs.TimeoutSec, args[0])
	}
	// The store holds the same trace, and its bundle has every commit with
	// consistent checkpoint parentage.
	out, err := exec.Command(traj, "replay", "verify", "--trajectory-id", id(), "--store", st).CombinedOutput()
	if err != nil {
		t.Fatalf("replay verify from the store after %s: %v\n%s", args[0], err, out)
	}
	local, _ := os.ReadFile(filepath.Join(dir, "agent_trace.json"))
	remote, _ := os.ReadFile(filepath.Join(st, "trajectories", id(), "agent_trace.json"))
	if !bytes.Equal(local, remote) {
		t.Fatalf("the store's agent_trace.json differs from the local one")
	}
}

// lastCommit is the git_commit of the trace's last part ("" for none or
// no trace).
func lastCommit(tr *trace.Trace) string {
	c := ""
	if tr == nil {
		return c
	}
	for _, turn := range tr.Turns {
		for _, p := range turn.Parts {
			c = p.GitCommit
		}
	}
	return c
}

// lastPart is the index of the trace's last part (0 for none).
func lastPart(tr *trace.Trace) int {
	n := 0
	for _, turn := range tr.Turns {
		for _, p := range turn.Parts {
			n = p.Part
		}
	}
	return n
}

// inHistoryBundles reports whether commit is in the trajectory's history
// bundles (fetched in order with the git CLI).
func inHistoryBundles(t *testing.T, dir, commit string) bool {
	t.Helper()
	bundles, _ := filepath.Glob(filepath.Join(dir, "history", "*.bundle"))
	sort.Strings(bundles)
	bare := t.TempDir()
	git(t, bare, "init", "-q", "--bare")
	for i, b := range bundles {
		git(t, bare, "fetch", "-q", b, fmt.Sprintf("+refs/*:refs/h%d/*", i))
	}
	return exec.Command("git", "-C", bare, "cat-file", "-e", commit+"^{commit}").Run() == nil
}

func readTraceFile(t *testing.T, path string) *trace.Trace {
	t.Helper()
	f, err := os.Open(path)
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

// TestKillRun: traj run killed with SIGKILL at random instants (TRAJ_KILLS
// in all over two parallel chains; default 6 in make test, where each
// kill costs a harness start, and 50 in make stress) never loses an
// acknowledged part, never leaves an unreadable trace, a dangling commit or
// a running child, and every killed trajectory can be resumed or
// finalized.
func TestKillRun(t *testing.T) {
	// Its chains share the -parallel slots with the adversarial agent's run.
	t.Parallel()
	kills := 6
	if v := os.Getenv("TRAJ_KILLS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 2 {
			t.Fatalf("TRAJ_KILLS=%q: want a number >= 2", v)
		}
		kills = n
	}
	var total atomic.Int64
	start := time.Now()
	t.Cleanup(func() { t.Logf("%d kills survived in %s", total.Load(), time.Since(start).Round(time.Second)) })
	// Chain 0 ends with a cheap finalize, chain 1 with a full resume, so
	// chain 0 takes the larger share of the kills.
	share := []int{(kills*3 + 4) / 5, 0}
	share[1] = kills - share[0]
	for chain := range 2 {
		t.Run(fmt.Sprintf("chain%d", chain), func(t *testing.T) {
			t.Parallel()
			killChain(t, chain, share[chain], chain == 0, &total)
		})
	}
}
