package sweep_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/trajlab/traj/orchestrator/experiment"
	"github.com/trajlab/traj/orchestrator/experiment/slurmtest"
	"github.com/trajlab/traj/orchestrator/sweep"
	"github.com/trajlab/traj/replay/githistory"
	"github.com/trajlab/traj/replay/sweepvalue"
	"github.com/trajlab/traj/sandbox/codex"
	"github.com/trajlab/traj/sandbox/gateway/model/calls"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/location"
	"github.com/trajlab/traj/trace/store/ref"
)

// The source (testdata/source.jsonl, real Codex, the scripted model)
// writes the wrapper its build needs in its first response (parts 1-2),
// notes (3-6), deletes the wrapper (7), writes notes (8, 9) and stops
// (10). A fork (testdata/fork.jsonl) writes a build.sh making ./cc from
// the wrapper: it passes basics/smoke where the wrapper still exists, so
// forks at 2, 3 and 4 reach full score and forks at 7 and 8 do not, and
// the decisive part is 7.
//
// Codex, not OpenCode: each turn is one native process, so a fork starts
// in well under a second where OpenCode's server takes seconds to come up
// and to answer its first prompt. The source is recorded once for the
// package (sharedSource) and copied into each sweep's store.
//
// A fork inside a model response branches at the response's end (its row
// says so: the fork point), placed by the trace's part → call attribution
// (calls.Placement; a call's parts_before lags when Codex asks before traj
// recorded the command's part, on a loaded machine). The notes at 5 and
// 6 leave room for a response that spans parts: a fork at 4 that branches
// at 5 or 6 still has the wrapper. record checks each swept part's branch
// point against forkRoom before any fork runs.
var (
	sweptParts   = []int{2, 3, 4, 7, 8}
	decisivePart = 7
	repeats      = 4 // 5 parts × 4 = 20 forks
	forkRoom     = map[int]int{2: 6, 3: 6, 4: 6, 7: 10, 8: 10}
)

// TestSweepLocal: 20 forks on the local executor; the sweep names part 7
// as decisive, every fork's prefix is the source's (checked here again,
// tree by tree, against the source's checkpoints), the result is in the
// store, and a second run of the same sweep starts nothing.
//
// Four forks at once on two cores: a Codex fork spends most of its time
// waiting (for Codex to exit after its last answer, about 5 s), so 4 took
// 42 s here where 2 took 70 s, back to back.
func TestSweepLocal(t *testing.T) {
	t.Parallel()
	bin := trajBinary(t)
	needCodex(t)
	st := t.TempDir()
	copySource(t, bin, st)
	req := sweep.Request{Source: "src", Store: st, At: sweptParts, Repeats: repeats, MaxParts: 30,
		Script: "testdata/fork.jsonl", Parallel: 4, TrajBin: bin}
	out, err := sweep.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, st, out.Result)
	if len(out.Unfinished) > 0 {
		t.Errorf("unfinished forks: %v", out.Unfinished)
	}
	stored, err := sweepvalue.LoadAll(context.Background(), openStore(t, st), store.TrajectoryPrefix("src"))
	if err != nil || len(stored) != 1 || stored[0].Decisive == nil || stored[0].Decisive.Part != decisivePart {
		t.Fatalf("stored sweeps %+v, %v; want one deciding part %d", stored, err, decisivePart)
	}
	rep, err := exec.Command(bin, "report", "--store", st).CombinedOutput()
	if err != nil || !strings.Contains(string(rep), fmt.Sprintf("decisive part: %d (the value falls by 100.0 points from part 4)", decisivePart)) {
		t.Errorf("traj report: %v, want the sweep's decisive part:\n%s", err, rep)
	}

	// Again: every fork is done, nothing runs, the same values.
	var launched int
	var mu sync.Mutex
	req.Events = func(ev experiment.Event) {
		mu.Lock()
		defer mu.Unlock()
		if ev.Kind == "launch" {
			launched++
		}
	}
	again, err := sweep.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if launched != 0 || again.Result.Decisive == nil || again.Result.Decisive.Part != decisivePart || len(again.Result.Forks) != 20 {
		t.Errorf("second run launched %d forks, decisive %+v", launched, again.Result.Decisive)
	}
}

// TestSweepLeavesOutUnreproducedPrefix: a source that writes the time
// into the workspace at part 4. A fork at part 2 (or 3, where a loaded
// machine may move it: a note) reproduces its prefix and counts; a fork at
// part 5 cannot (its part 4 checkpoint holds another time): the sweep
// says so, names the part, and leaves it out of the value although the
// fork passed; with one counted part there is no decisive part.
func TestSweepLeavesOutUnreproducedPrefix(t *testing.T) {
	t.Parallel()
	bin := trajBinary(t)
	needCodex(t)
	st := t.TempDir()
	recordSource(t, bin, st, "testdata/source-unstable.jsonl", map[int]int{2: 3, 5: 6})
	out, err := sweep.Run(context.Background(), sweep.Request{Source: "src", Store: st, At: []int{2, 5}, Repeats: 1, MaxParts: 30,
		Script: "testdata/fork.jsonl", Parallel: 2, TrajBin: bin})
	if err != nil {
		t.Fatal(err)
	}
	res := out.Result
	if len(res.Forks) != 2 || len(res.Rows) != 2 {
		t.Fatalf("forks %+v rows %+v", res.Forks, res.Rows)
	}
	early, late := res.Forks[0], res.Forks[1]
	if !early.PrefixOK || !early.Counted() || early.Value == nil || *early.Value != 1 {
		t.Errorf("fork at 2: %+v, want its prefix reproduced and full value", early)
	}
	// Reproduced up to the response end before part 4: 3, or 2 when the
	// source's call after part 3 started before traj recorded that part
	// (then the response ends the comparison knows are 2 and 4).
	if late.PrefixOK || late.Counted() || late.Reproduced < 2 || late.Reproduced > 3 || !strings.Contains(late.Divergence, "checkpoint that differs at part 4") {
		t.Errorf("fork at 5: %+v, want its prefix reproduced up to part 3 at most (part 4's checkpoint differs) and left out", late)
	}
	if r := res.Rows[1]; r.Counted != 0 || r.NotReproduced != 1 || r.Forks != 1 {
		t.Errorf("row of part 5: %+v", r)
	}
	if res.Decisive != nil {
		t.Errorf("decisive %+v from one counted part", res.Decisive)
	}
}

// TestSweepSlurm: the same sweep through `traj sweep --executor slurm` on
// a real single-node Slurm: 20 forks as one job array, waited for.
func TestSweepSlurm(t *testing.T) {
	t.Parallel()
	slurmtest.Need(t)
	bin := trajBinary(t)
	needCodex(t)
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
	st := filepath.Join(dir, "runs")
	copySource(t, bin, st)
	script, _ := filepath.Abs("testdata/fork.jsonl")
	cmd := exec.Command(bin, "sweep", "src", "--store", st, "--at", "2,3,4,7,8", "--repeats", fmt.Sprint(repeats),
		"--max-parts", "30", "--script", script, "--executor", "slurm", "--name", "slurm-sweep")
	cmd.Env = append(os.Environ(), c.Env...)
	cmd.Dir = dir
	b, err := cmd.CombinedOutput()
	t.Logf("traj sweep --executor slurm:\n%s", b)
	if err != nil {
		t.Fatalf("traj sweep: %v", err)
	}
	if !strings.Contains(string(b), fmt.Sprintf("decisive part: %d ", decisivePart)) {
		t.Errorf("traj sweep does not name part %d as decisive", decisivePart)
	}
	stored, err := sweepvalue.LoadAll(context.Background(), openStore(t, st), store.TrajectoryPrefix("src"))
	if err != nil || len(stored) != 1 {
		t.Fatalf("stored sweeps %d, %v", len(stored), err)
	}
	if stored[0].Executor != sweep.ExecSlurm {
		t.Errorf("executor %q", stored[0].Executor)
	}
	checkResult(t, st, stored[0])
	logs, _ := filepath.Glob(filepath.Join(st, "experiments", "slurm-sweep", "logs", "slurm-*.out"))
	if len(logs) != 20 {
		t.Errorf("%d Slurm task logs, want 20 (one array task a fork)", len(logs))
	}
}

// sharedSource is the sweeps' source (testdata/source.jsonl), recorded
// once for the package: TestSweepLocal and TestSweepSlurm each copy it
// into their own store.
var sharedSource struct {
	sync.Once
	dir string
	err error
}

// copySource puts the shared source trajectory "src" into store st.
func copySource(t *testing.T, bin, st string) {
	t.Helper()
	sharedSource.Do(func() {
		if sharedSource.dir, sharedSource.err = os.MkdirTemp("", "traj-sweep-source-"); sharedSource.err == nil {
			sharedSource.err = record(t, bin, filepath.Join(sharedSource.dir, "runs"), "testdata/source.jsonl", forkRoom)
		}
	})
	if sharedSource.err != nil {
		t.Fatal(sharedSource.err)
	}
	from := filepath.Join(sharedSource.dir, "runs", "trajectories", "src")
	if err := os.CopyFS(filepath.Join(st, "trajectories", "src"), os.DirFS(from)); err != nil {
		t.Fatalf("copy the source: %v", err)
	}
}

// recordSource records "src" into st with the scripted model playing
// path; room is the last part each swept part may branch at.
func recordSource(t *testing.T, bin, st, path string, room map[int]int) {
	t.Helper()
	if err := record(t, bin, st, path, room); err != nil {
		t.Fatal(err)
	}
}

// record records "src" into st and checks where a fork at each swept
// part p would branch: at p, or later within room[p] (see sweptParts). A
// source whose calls leave a swept part no branch point in its room is
// recorded again (five tries, each said in the log).
func record(t *testing.T, bin, st, path string, room map[int]int) error {
	task, _ := filepath.Abs("../testdata/tasks/e2e-groundtruth")
	script, _ := filepath.Abs(path)
	var before []int
	for try := 1; try <= 5; try++ {
		if err := os.RemoveAll(st); err != nil {
			return err
		}
		cmd := exec.Command(bin, "run", "--task", task, "--agent", "codex", "--model", "scripted/demo", "--script", script,
			"--max-parts", "40", "--store", st, "--trajectory-id", "src", "--quiet")
		out, err := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != 3 { // agent_error: the script ran out
			return fmt.Errorf("record the source %s: exit %d (%v)\n%s", path, code, err, out)
		}
		dir := filepath.Join(st, "trajectories", "src")
		recorded, err := calls.LoadAnswered(filepath.Join(dir, "model_calls.jsonl"))
		if err != nil {
			return err
		}
		placed, err := calls.Place(filepath.Join(dir, "agent_trace.json"))
		if err != nil {
			return err
		}
		parts, err := countParts(filepath.Join(dir, "agent_trace.json"))
		if err != nil {
			return err
		}
		before = before[:0]
		for _, c := range recorded {
			n, _ := placed.Before(c)
			before = append(before, n)
		}
		ok := true
		for p, last := range room {
			if b := placed.ForkPoint(recorded, p, parts); b > last {
				ok = false
				t.Logf("source %s, try %d: its model calls started after %v parts, so a fork at %d branches at %d (past %d); recording it again",
					path, try, before, p, b, last)
			}
		}
		if ok {
			return nil
		}
	}
	return fmt.Errorf("source %s: its model calls started after %v parts in five tries, past the swept parts' room %v", path, before, room)
}

// countParts is how many parts a trace holds.
func countParts(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	err = trace.Scan(f, trace.Visitor{OnPart: func(int, *trace.Part) error { n++; return nil }})
	return n, err
}

// checkResult holds a sweep result to the scenario: 20 forks, each at its
// part with its prefix reproduced, full value before the deletion and
// none after, part 7 decisive. It checks each fork's inherited
// checkpoints against the source's itself, tree by tree.
func checkResult(t *testing.T, st string, res *sweepvalue.Result) {
	t.Helper()
	if len(res.Forks) != len(sweptParts)*repeats {
		t.Fatalf("%d forks, want %d", len(res.Forks), len(sweptParts)*repeats)
	}
	for _, f := range res.Forks {
		if !f.PrefixOK || f.ForkPart < f.At || f.ForkPart > forkRoom[f.At] || f.Error != "" || f.Value == nil {
			t.Errorf("fork %+v: want it branched at %d..%d, its prefix reproduced and a value", f, f.At, forkRoom[f.At])
		}
		if f.ForkPart != f.At {
			t.Logf("fork %s at %d branched at %d (a call started before traj recorded the part before it)", f.ID, f.At, f.ForkPart)
		}
	}
	if len(res.Rows) != len(sweptParts) {
		t.Fatalf("rows %+v", res.Rows)
	}
	for i, r := range res.Rows {
		want := 0.0
		if sweptParts[i] < decisivePart {
			want = 1
		}
		if r.Part != sweptParts[i] || r.Counted != repeats || r.Mean != want || r.Std != 0 || r.ShareSolved != want {
			t.Errorf("row %+v: want part %d, %d forks counted, mean and share solved %v", r, sweptParts[i], repeats, want)
		}
	}
	if d := res.Decisive; d == nil || d.Part != decisivePart || d.Before != 4 || d.Drop != 1 {
		t.Errorf("decisive %+v, want part %d after 4, a drop of 1", d, decisivePart)
	}
	src := checkpoints(t, st, "src")
	for _, f := range res.Forks {
		fork := checkpoints(t, st, f.ID)
		for p := 1; p <= f.ForkPart; p++ {
			if fork[p] != src[p] {
				t.Errorf("fork %s part %d: checkpoint tree %q, the source's %q", f.ID, p, fork[p], src[p])
			}
		}
	}
}

// checkpoints are trajectory id's checkpoint trees by part ("" where a
// part made none).
func checkpoints(t *testing.T, st, id string) map[int]string {
	t.Helper()
	ctx := context.Background()
	rt, err := ref.Resolve(ctx, id, st, ref.Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	tp, _, err := rt.TracePath(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(tp)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := trace.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	bundles, err := rt.BundlePaths(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h, err := githistory.Open(ctx, bundles...)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	trees := map[int]string{}
	for _, turn := range tr.Turns {
		for _, p := range turn.Parts {
			if p.GitCommit == "" {
				trees[p.Part] = ""
				continue
			}
			if trees[p.Part], err = h.Tree(ctx, p.GitCommit); err != nil {
				t.Fatalf("%s part %d: %v", id, p.Part, err)
			}
		}
	}
	return trees
}

func openStore(t *testing.T, dir string) store.Store {
	t.Helper()
	s, err := location.Open(context.Background(), dir, location.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

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

// needCodex fails without Codex (these tests are part of make test);
// outside CI, TRAJ_SKIP_CODEX=1 skips instead.
func needCodex(t testing.TB) {
	t.Helper()
	if _, err := codex.Binary.Locate(""); err != nil {
		if os.Getenv("CI") == "" && os.Getenv("TRAJ_SKIP_CODEX") == "1" {
			t.Skipf("TRAJ_SKIP_CODEX=1: %v", err)
		}
		t.Fatalf("%v (run make setup)", err)
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedSource.dir != "" {
		_ = os.RemoveAll(sharedSource.dir)
	}
	os.Exit(code)
}
