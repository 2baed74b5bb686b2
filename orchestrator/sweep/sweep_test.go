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
	"github.com/trajlab/traj/sandbox/opencode"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/location"
	"github.com/trajlab/traj/trace/store/ref"
)

// The source (testdata/source.jsonl, real OpenCode, the scripted model)
// writes the wrapper its build needs in its first response (parts 1-3),
// notes (4-5, 6-7), deletes the wrapper in its fourth response (8-9),
// writes a note (10-11) and stops (12). A fork (testdata/fork.jsonl)
// writes a build.sh making ./cc from the wrapper: it passes basics/smoke
// where the wrapper still exists, so forks at 3, 5 and 7 reach full score
// and forks at 9 and 11 do not, and the decisive part is 9.
var (
	sweptParts   = []int{3, 5, 7, 9, 11}
	decisivePart = 9
	repeats      = 4 // 5 parts × 4 = 20 forks
)

// TestSweepLocal: 20 forks on the local executor; the sweep names part 9
// as decisive, every fork's prefix is the source's (checked here again,
// tree by tree, against the source's checkpoints), the result is in the
// store, and a second run of the same sweep starts nothing.
func TestSweepLocal(t *testing.T) {
	t.Parallel()
	bin := trajBinary(t)
	needOpenCode(t)
	st := t.TempDir()
	recordSource(t, bin, st, nil)
	req := sweep.Request{Source: "src", Store: st, At: sweptParts, Repeats: repeats, MaxParts: 30,
		Script: "testdata/fork.jsonl", Parallel: 2, TrajBin: bin}
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
	if err != nil || !strings.Contains(string(rep), fmt.Sprintf("decisive part: %d (the value falls by 100.0 points from part 7)", decisivePart)) {
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

// TestSweepLeavesOutUnreproducedPrefix: a source whose second response
// writes the time into the workspace (parts 4-5, the command's checkpoint
// at 4). A fork at part 3 reproduces its prefix and counts; a fork at
// part 7 cannot (its part 4 checkpoint holds another time): the sweep says so, names the part, and
// leaves it out of the value although the fork passed; with one counted
// part there is no decisive part.
func TestSweepLeavesOutUnreproducedPrefix(t *testing.T) {
	t.Parallel()
	bin := trajBinary(t)
	needOpenCode(t)
	st := t.TempDir()
	recordSourceScript(t, bin, st, "testdata/source-unstable.jsonl", nil)
	out, err := sweep.Run(context.Background(), sweep.Request{Source: "src", Store: st, At: []int{3, 7}, Repeats: 1, MaxParts: 30,
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
		t.Errorf("fork at 3: %+v, want its prefix reproduced and full value", early)
	}
	if late.PrefixOK || late.Counted() || late.Reproduced != 3 || !strings.Contains(late.Divergence, "checkpoint that differs at part 4") {
		t.Errorf("fork at 7: %+v, want its prefix reproduced up to part 3 only (part 4's checkpoint differs) and left out", late)
	}
	if r := res.Rows[1]; r.Counted != 0 || r.NotReproduced != 1 || r.Forks != 1 {
		t.Errorf("row of part 7: %+v", r)
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
	needOpenCode(t)
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
	recordSource(t, bin, st, c.Env)
	script, _ := filepath.Abs("testdata/fork.jsonl")
	cmd := exec.Command(bin, "sweep", "src", "--store", st, "--at", "3,5,7,9,11", "--repeats", fmt.Sprint(repeats),
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

// recordSource records the source trajectory "src" into store st.
func recordSource(t *testing.T, bin, st string, env []string) {
	t.Helper()
	recordSourceScript(t, bin, st, "testdata/source.jsonl", env)
}

// recordSourceScript records "src" into st with the scripted model
// playing path.
func recordSourceScript(t *testing.T, bin, st, path string, env []string) {
	t.Helper()
	task, _ := filepath.Abs("../testdata/tasks/e2e-groundtruth")
	script, _ := filepath.Abs(path)
	cmd := exec.Command(bin, "run", "--task", task, "--model", "scripted/demo", "--script", script, "--max-parts", "40",
		"--store", st, "--trajectory-id", "src", "--quiet")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 3 { // agent_error: the script ran out
		t.Fatalf("record the source: exit %d (%v)\n%s", code, err, out)
	}
}

// checkResult holds a sweep result to the scenario: 20 forks, each at its
// part with its prefix reproduced, full value before the deletion and
// none after, part 9 decisive. It checks each fork's inherited
// checkpoints against the source's itself, tree by tree.
func checkResult(t *testing.T, st string, res *sweepvalue.Result) {
	t.Helper()
	if len(res.Forks) != len(sweptParts)*repeats {
		t.Fatalf("%d forks, want %d", len(res.Forks), len(sweptParts)*repeats)
	}
	for _, f := range res.Forks {
		if !f.PrefixOK || f.ForkPart != f.At || f.Error != "" || f.Value == nil {
			t.Errorf("fork %+v: want its prefix 1..%d reproduced and a value", f, f.At)
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
	if d := res.Decisive; d == nil || d.Part != decisivePart || d.Before != 7 || d.Drop != 1 {
		t.Errorf("decisive %+v, want part %d after 7, a drop of 1", d, decisivePart)
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
