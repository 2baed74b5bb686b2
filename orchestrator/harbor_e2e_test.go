package orchestrator_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trajlab/traj/orchestrator"
	"github.com/trajlab/traj/orchestrator/launch"
	"github.com/trajlab/traj/replay/view"
	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/trace"
)

// harborRun records a trajectory on a Harbor task folder with the real
// OpenCode and the scripted model: the agent in a container from the
// task's image, ground truth in the verifier's room.
func harborRun(t *testing.T, taskDir, script string) (*orchestrator.Result, string) {
	t.Helper()
	return harborRunWith(t, taskDir, script, launch.SandboxOptions{})
}

// harborRunWith is harborRun with sandbox options.
func harborRunWith(t *testing.T, taskDir, script string, sb launch.SandboxOptions) (*orchestrator.Result, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("container test")
	}
	if _, _, err := sandbox.FindEngine(context.Background(), ""); err != nil {
		t.Skipf("no container engine: %v", err)
	}
	o := orchestrator.Options{Task: taskDir, Script: script, MaxParts: 30, Store: t.TempDir(),
		Model: "scripted/demo", Timeout: 5 * time.Minute, AbortGrace: 5 * time.Second, Sandbox: sb}
	o.AgentBin, o.TrajBin = needOpenCode(t), needTraj(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	res, err := orchestrator.Run(ctx, o)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res, o.Store
}

// truthByPart is each part's latest ground truth (passed cases), in part
// order, with session_end's taken by the last part.
func truthByPart(tr *trace.Trace) map[int]trace.GroundTruth {
	out := map[int]trace.GroundTruth{}
	for _, p := range partsOf(tr) {
		for _, g := range p.GroundTruth {
			out[g.Part] = g
		}
	}
	if tr.SessionEnd != nil {
		for _, g := range tr.SessionEnd.GroundTruth {
			out[g.Part] = g
		}
	}
	return out
}

// evaluateHarbor runs `traj replay evaluate` on the trajectory without
// the cache and returns each part's passed cases; taskDir "" leaves the
// task folder to the one run.json names.
func evaluateHarbor(t *testing.T, store, id, taskDir string) map[string]int {
	t.Helper()
	out := filepath.Join(t.TempDir(), "eval.json")
	args := []string{"replay", "evaluate", id, "--store", store, "--no-cache", "--output", out}
	if taskDir != "" {
		args = append(args, "--task", taskDir)
	}
	cmd := exec.Command(needTraj(t), args...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("replay evaluate: %v\n%s", err, b)
	}
	var rep struct {
		Parts map[string]struct {
			Passed int `json:"passed"`
			Total  int `json:"total"`
		} `json:"part_evaluations"`
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for k, v := range rep.Parts {
		got[k] = v.Passed
	}
	return got
}

// TestHarborStaged: a scripted agent solving the Python task in stages
// (mean, median, mode: a turn each, so each is scored) shows a ground-truth curve rising by
// part (the task's CTRF cases 1, 2, 3, 5 of 5; the start, the task's
// files, is scored too) and ends solved; `traj replay evaluate` agrees
// part by part; its subtest Replays reads the same trajectory through
// report, Parquet, checkout-part and a fork (harborReplays).
func TestHarborStaged(t *testing.T) {
	task := "../environment/harbor/testdata/python-stats"
	res, store := harborRun(t, task, "testdata/harbor-staged.jsonl")
	tr := readValidTrace(t, res.Dir)
	if tr.SessionEnd.Reason != trace.EndSolved {
		t.Fatalf("session_end %s (%s), want solved", tr.SessionEnd.Reason, tr.SessionEnd.Detail)
	}
	if tr.Environment == nil || tr.Environment.Name != "harbor" {
		t.Fatalf("environment %+v, want harbor", tr.Environment)
	}
	truth := truthByPart(tr)
	var curve []int64
	last := int64(-1)
	for part := 0; part <= len(partsOf(tr)); part++ {
		g, ok := truth[part]
		if !ok || g.Error != "" || g.Commit == "" {
			continue
		}
		if g.Passed != last {
			curve = append(curve, g.Passed)
			last = g.Passed
		}
	}
	if len(curve) != 4 || curve[0] != 1 || curve[3] != 5 || curve[1] != 2 || curve[2] != 3 {
		t.Fatalf("ground-truth curve %v (by part: %+v), want 1, 2, 3, 5", curve, truth)
	}
	viewerCurve(t, store, res.TrajectoryID)
	// The same trajectory through report, Parquet, checkout-part and a
	// fork, before replay evaluate stores a report the reader would prefer.
	t.Run("Replays", func(t *testing.T) { harborReplays(t, store, res.TrajectoryID, tr) })
	replayed := evaluateHarbor(t, store, res.TrajectoryID, task)
	for _, p := range partsOf(tr) {
		g, ok := truth[p.Part]
		if !ok {
			continue
		}
		if n, ok := replayed[strconv.Itoa(p.Part)]; ok && int64(n) != g.Passed {
			t.Errorf("part %d: replay evaluate %d passed, ground truth %d", p.Part, n, g.Passed)
		}
	}
}

// TestHarborAttacks: a scripted agent pre-writes /logs/verifier/reward.txt
// (in its room and its workspace), puts python3/pytest/cmp/bash shims in
// the workspace, writes a tests/test.sh of its own and leaves a writer
// running in its room: ground truth is 0 at every part, the run is not
// solved, and `traj replay evaluate` (the task folder from run.json)
// gives 0 too.
func TestHarborAttacks(t *testing.T) {
	task := "../environment/harbor/testdata/shell-topwords"
	res, store := harborRun(t, task, "testdata/harbor-attacks.jsonl")
	tr := readValidTrace(t, res.Dir)
	if tr.SessionEnd.Reason == trace.EndSolved {
		t.Fatalf("session_end solved (%s): a forged reward was believed", tr.SessionEnd.Detail)
	}
	// The forged files are in the trees ground truth scored.
	changed := map[string]bool{}
	for _, p := range partsOf(tr) {
		if p.RepoCheckpoint != nil {
			for _, f := range p.RepoCheckpoint.ChangedFiles {
				changed[f] = true
			}
		}
	}
	for _, f := range []string{"reward.txt", "logs/verifier/reward.txt", "bin/python3", "pytest", "tests/test.sh"} {
		if !changed[f] {
			t.Errorf("the attack's %s is in no checkpoint (changed: %v)", f, changed)
		}
	}
	truth := truthByPart(tr)
	if len(truth) < 2 {
		t.Fatalf("ground truth for %d parts, want the start and the attacks' checkpoints: %+v", len(truth), truth)
	}
	for part, g := range truth {
		if g.Passed != 0 || g.Solved {
			t.Errorf("part %d: ground truth %+v, want reward 0", part, g)
		}
	}
	for part, n := range evaluateHarbor(t, store, res.TrajectoryID, "") {
		if n != 0 {
			t.Errorf("part %s: replay evaluate passed %d, want 0", part, n)
		}
	}
}

// viewerCurve checks the viewer's curve of the trajectory: it comes from
// ground truth and rises through at least three rates to 1.
func viewerCurve(t *testing.T, store, id string) {
	t.Helper()
	srv, err := view.New(t.Context(), view.Options{StoreURL: store, CacheDir: t.TempDir(), Token: "harbor", Poll: -1})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	jar, _ := cookiejar.New(nil)
	cl := &http.Client{Jar: jar}
	var curve struct {
		Source string       `json:"source"`
		Points [][3]float64 `json:"points"`
	}
	for _, path := range []string{"/?token=harbor", "/api/t/" + id + "/curve"} {
		resp, err := cl.Get(hs.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %v %s %.300s", path, err, resp.Status, b)
		}
		if strings.HasSuffix(path, "/curve") {
			if err := json.Unmarshal(b, &curve); err != nil {
				t.Fatalf("curve: %v: %.300s", err, b)
			}
		}
	}
	var rates []float64
	for _, p := range curve.Points {
		if n := len(rates); n == 0 || rates[n-1] != p[2] {
			rates = append(rates, p[2])
		}
	}
	for i := 1; i < len(rates); i++ {
		if rates[i] < rates[i-1] {
			t.Fatalf("viewer curve %v falls", rates)
		}
	}
	if len(rates) < 3 || rates[len(rates)-1] != 1 || curve.Source == "" {
		t.Fatalf("viewer curve (source %q) %v: want it rising through three rates to 1", curve.Source, rates)
	}
}

// TestHarborOracle runs the README's oracle lines on the C task: `traj env
// oracle-script` and a run with it (solve.sh as the agent's bash call,
// through OpenCode in the task's image): the start scores 0, the run
// ends solved by ground truth.
func TestHarborOracle(t *testing.T) {
	task := "../environment/harbor/testdata/c-fizzbuzz"
	script, err := exec.Command(needTraj(t), "env", "oracle-script", task).Output()
	if err != nil {
		t.Fatalf("oracle-script: %v", err)
	}
	p := filepath.Join(t.TempDir(), "oracle.jsonl")
	if err := os.WriteFile(p, script, 0o644); err != nil {
		t.Fatal(err)
	}
	res, _ := harborRun(t, task, p)
	tr := readValidTrace(t, res.Dir)
	if tr.SessionEnd.Reason != trace.EndSolved {
		t.Fatalf("session_end %s (%s), want solved", tr.SessionEnd.Reason, tr.SessionEnd.Detail)
	}
	if g, ok := truthByPart(tr)[0]; !ok || g.Passed != 0 {
		t.Fatalf("the start's ground truth %+v, want reward 0", g)
	}
}

// TestHarborBwrap: with --sandbox bwrap a Harbor task's agent runs in
// bwrap over the task image's root file system (unpacked once, cached):
// its python3 imports Debian's pytest, which the image has and the host
// need not, its working folder is the workdir, and the run ends solved.
func TestHarborBwrap(t *testing.T) {
	if err := sandbox.BwrapWorks(context.Background()); err != nil {
		t.Skipf("bwrap: %v", err)
	}
	task := "../environment/harbor/testdata/python-stats"
	res, _ := harborRunWith(t, task, "testdata/harbor-bwrap.jsonl", launch.SandboxOptions{Provider: sandbox.ProviderBwrap})
	tr := readValidTrace(t, res.Dir)
	if tr.SessionEnd.Reason != trace.EndSolved {
		t.Fatalf("session_end %s (%s), want solved", tr.SessionEnd.Reason, tr.SessionEnd.Detail)
	}
	seen := false
	for _, p := range partsOf(tr) {
		var c struct {
			State struct {
				Output string `json:"output"`
			} `json:"state"`
		}
		if p.Tool == "bash" && json.Unmarshal(p.Content, &c) == nil && strings.Contains(c.State.Output, "pytest-in-room") {
			seen = strings.Contains(c.State.Output, "\n/app")
		}
	}
	if !seen {
		t.Fatal("the agent's python3 did not import the image's pytest in /app")
	}
}
