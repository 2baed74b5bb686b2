package orchestrator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/trajlab/traj/trace/store"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trajlab/traj/orchestrator"
	"github.com/trajlab/traj/orchestrator/launch"
	"github.com/trajlab/traj/orchestrator/progress"
	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/trace"
)

// TestGroundTruthEndToEnd: with the real OpenCode in the default sandbox,
// an agent without run_tests (the task switches it off) ends solved by
// ground truth; every
// tree the trace points at has a ground-truth result; the agent, searching
// the whole filesystem it can see, finds no fixture and no evaluation
// cache; `traj replay evaluate` afterwards is served entirely from the
// cache and agrees with the trace, and a hand-corrupted cache entry is
// detected and evaluated again.
func TestGroundTruthEndToEnd(t *testing.T) {
	t.Parallel()
	var events bytes.Buffer
	res, work := groundTruthRun(t, orchestrator.Options{
		Task: "testdata/tasks/e2e-groundtruth", Script: "testdata/e2e-groundtruth.jsonl", MaxParts: 50,
		Reporter: progress.NewJSON(&events),
	})
	traj := needTraj(t)
	tr := readValidTrace(t, res.Dir)
	// The task takes run_tests away: no tests MCP server, no tool gateway.
	cfg, err := os.ReadFile(filepath.Join(work, "sandboxes", res.TrajectoryID, "opencode", "xdg", "config", "opencode", "opencode.json"))
	if err != nil || bytes.Contains(cfg, []byte(`"mcp"`)) {
		t.Errorf("OpenCode config (%v) offers an MCP server although the task has run_tests false:\n%s", err, cfg)
	}
	if _, err := os.Stat(filepath.Join(res.Dir, store.ToolCallsName)); err == nil {
		t.Error("a tool-call record exists although the task has run_tests false")
	}
	end := tr.SessionEnd
	if end.Reason != trace.EndSolved || !strings.Contains(end.Detail, "ground truth") {
		t.Fatalf("session_end %s (%s), want solved by ground truth", end.Reason, end.Detail)
	}

	truth := map[string]trace.GroundTruth{}
	pointed := map[string]bool{end.FinalGitCommit: true}
	searched := false
	for _, p := range partsOf(tr) {
		if len(p.EnvoiCalls) > 0 || strings.Contains(p.Tool, "run_tests") {
			t.Errorf("part %d called run_tests; the script never does", p.Part)
		}
		pointed[p.GitCommit] = true
		for _, g := range p.GroundTruth {
			truth[g.Commit] = g
		}
		if p.Tool == "bash" {
			var c struct {
				State struct {
					Output string `json:"output"`
				} `json:"state"`
			}
			if err := json.Unmarshal(p.Content, &c); err != nil {
				t.Fatalf("bash part %d: %v", p.Part, err)
			}
			if !strings.Contains(c.State.Output, "search-finished") {
				t.Fatalf("the search did not run to the end: %q", c.State.Output)
			}
			if found := strings.TrimSpace(strings.ReplaceAll(c.State.Output, "search-finished", "")); found != "" {
				t.Errorf("the agent found fixtures or traj's records from its sandbox:\n%s", found)
			}
			searched = true
		}
	}
	if !searched {
		t.Fatal("no bash part: the search did not run")
	}
	for _, g := range end.GroundTruth {
		truth[g.Commit] = g
	}
	for c := range pointed {
		g, ok := truth[c]
		if !ok {
			t.Errorf("commit %s has no ground-truth result in the trace", c)
			continue
		}
		if g.Error != "" || g.CacheKey == "" || len(g.Suites) != 1 {
			t.Errorf("ground truth of %s: %+v", c, g)
		}
	}
	if g := truth[end.FinalGitCommit]; !g.Solved || g.Passed != g.Total || g.Total == 0 {
		t.Errorf("final tree's ground truth %+v, want solved", g)
	}
	if !strings.Contains(events.String(), `"type":"ground_truth"`) {
		t.Error("no ground_truth progress event")
	}
	out, err := exec.Command(traj, "trace", "show", res.Dir).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ground truth") || !strings.Contains(string(out), "solved at") {
		t.Errorf("traj trace show: %v\n%s", err, out)
	}

	// replay evaluate: every tree from the cache, the same counts.
	evaluate := func(name string) map[string]any {
		t.Helper()
		dest := filepath.Join(t.TempDir(), name)
		cmd := exec.Command(traj, "replay", "evaluate", res.Dir, "--store", work, "--output", dest)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("replay evaluate: %v\n%s", err, out)
		}
		var got map[string]any
		b, _ := os.ReadFile(dest)
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	check := func(got map[string]any, wantHits int) {
		t.Helper()
		stats := got["stats"].(map[string]any)
		if hits, trees := stats["cache_hits"].(float64), stats["unique_trees"].(float64); int(hits) != wantHits || trees != float64(len(pointed)) {
			t.Errorf("replay evaluate stats %v, want %d cache hits of %d trees", stats, wantHits, len(pointed))
		}
		for c, v := range got["commit_evaluations"].(map[string]any) {
			ce := v.(map[string]any)
			g := truth[c]
			if int64(ce["passed"].(float64)) != g.Passed || int64(ce["total"].(float64)) != g.Total {
				t.Errorf("commit %s: replay %v/%v, ground truth %d/%d", c, ce["passed"], ce["total"], g.Passed, g.Total)
			}
		}
	}
	check(evaluate("eval1.json"), len(pointed))

	// A hand-corrupted entry (a fake score) is refused and evaluated again.
	g := truth[end.FinalGitCommit]
	entry := filepath.Join(work, "evalcache", g.CacheKey+".json")
	b, err := os.ReadFile(entry)
	if err != nil {
		t.Fatalf("the final tree's cache entry: %v", err)
	}
	fake := bytes.Replace(b, []byte(`"passed":true`), []byte(`"passed":false`), 1)
	if bytes.Equal(fake, b) {
		t.Fatal("the cache entry holds no passing case to corrupt")
	}
	if err := os.WriteFile(entry, fake, 0o644); err != nil {
		t.Fatal(err)
	}
	// Without the trajectory's set (one object holding every tree's
	// result, which would serve the true score without reading the
	// entry), evaluate reads the entries one by one.
	if err := os.RemoveAll(filepath.Join(work, "evalcache", "sets")); err != nil {
		t.Fatal(err)
	}
	check(evaluate("eval2.json"), len(pointed)-1)
	if b2, _ := os.ReadFile(entry); bytes.Contains(b2, []byte(`"passed":false`)) && !bytes.Contains(b2, []byte(`"passed":true`)) {
		t.Error("the corrupted entry was not rewritten")
	}
}

// TestGroundTruthDeniesCCompiler: a task with deny_c_compiler scores the
// agent's gcc wrapper 0 (it is not solved), the trace records the rule in
// its environment version, and replay evaluate applies the same rule and
// is served from the cache.
func TestGroundTruthDeniesCCompiler(t *testing.T) {
	t.Parallel()
	res, work := groundTruthRun(t, orchestrator.Options{
		Task: "testdata/tasks/e2e-deny-cc", Script: "testdata/e2e-groundtruth.jsonl", MaxParts: 50,
		Sandbox: launch.SandboxOptions{Provider: sandbox.ProviderBwrap},
	})
	traj := needTraj(t)
	tr := readValidTrace(t, res.Dir)
	if tr.SessionEnd.Reason == trace.EndSolved {
		t.Fatalf("a gcc wrapper was solved with the C compiler hidden: %+v", tr.SessionEnd)
	}
	if v := tr.Environment.Version; !strings.HasSuffix(v, "+deny-c-compiler") {
		t.Errorf("environment version %q does not record the rule", v)
	}
	var final *trace.GroundTruth
	for _, g := range tr.SessionEnd.GroundTruth {
		if g.Commit == tr.SessionEnd.FinalGitCommit {
			final = &g
		}
	}
	for _, p := range partsOf(tr) {
		for _, g := range p.GroundTruth {
			if g.Commit == tr.SessionEnd.FinalGitCommit {
				final = &g
			}
		}
	}
	if final == nil || final.Total == 0 || final.Passed != 0 {
		t.Fatalf("final tree's ground truth %+v, want 0 passed of the smoke tests", final)
	}
	dest := filepath.Join(t.TempDir(), "eval.json")
	out, err := exec.Command(traj, "replay", "evaluate", res.Dir, "--store", work, "--output", dest).CombinedOutput()
	if err != nil {
		t.Fatalf("replay evaluate: %v\n%s", err, out)
	}
	var got struct {
		Stats struct {
			UniqueTrees int `json:"unique_trees"`
			CacheHits   int `json:"cache_hits"`
		} `json:"stats"`
	}
	b, _ := os.ReadFile(dest)
	if err := json.Unmarshal(b, &got); err != nil || got.Stats.CacheHits != got.Stats.UniqueTrees || got.Stats.UniqueTrees == 0 {
		t.Errorf("replay evaluate %+v (%v): want every tree from the cache (same rule, same key)", got.Stats, err)
	}
	out, err = exec.Command(traj, "replay", "evaluate", res.Dir, "--store", work, "--output", dest, "--sandbox", "local").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "deny_c_compiler") {
		t.Errorf("replay evaluate --sandbox local of a deny_c_compiler run: %v\n%s", err, out)
	}
}

// readValidTrace reads a finished trajectory's trace, which must validate.
func readValidTrace(t *testing.T, dir string) *trace.Trace {
	t.Helper()
	path := filepath.Join(dir, "agent_trace.json")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if probs := trace.Validate(f); len(probs) > 0 {
		t.Fatalf("trace does not validate: %v", probs)
	}
	return readTraceFile(t, path)
}

// TestFinishOutlastsGroundTruth: ground truth of the final tree outlasts
// the finish's deadline (build.sh sleeps longer than FinishTimeout); the
// record still closes — session_end, a history bundle git can read, a
// trace that validates — because the record's deadline starts after
// ground truth's, and the tree left unevaluated is said to be so.
func TestFinishOutlastsGroundTruth(t *testing.T) {
	t.Parallel()
	res, _ := groundTruthRun(t, orchestrator.Options{
		Task: "testdata/tasks/e2e-groundtruth", Script: "testdata/e2e-slow-build.jsonl", MaxParts: 4,
		FinishTimeout: 8 * time.Second,
	})
	tr := readValidTrace(t, res.Dir)
	end := tr.SessionEnd
	if end == nil || end.FinalGitCommit == "" {
		t.Fatalf("no session_end with a final commit: %+v", end)
	}
	bundle := filepath.Join(res.Dir, "repo.bundle")
	if out, err := exec.Command("git", "bundle", "verify", bundle).CombinedOutput(); err != nil {
		t.Fatalf("git bundle verify: %v\n%s", err, out)
	}
	if out, err := exec.Command("git", "bundle", "list-heads", bundle).CombinedOutput(); err != nil || !strings.Contains(string(out), end.FinalGitCommit) {
		t.Fatalf("the bundle does not hold the final commit %s: %v\n%s", end.FinalGitCommit, err, out)
	}
	for _, g := range end.GroundTruth {
		if g.Commit == end.FinalGitCommit && g.Error == "" && g.Total > 0 {
			t.Fatalf("the final tree was scored although its build outlasts the deadline: %+v", g)
		}
	}
}

// groundTruthRun records a scripted trajectory with the real OpenCode and
// the public suites for ground truth: o names the task, script and what
// the test varies; the model, store, binaries, fixtures and time limits
// are the same for every ground-truth test. It returns the result and the
// store folder.
func groundTruthRun(t *testing.T, o orchestrator.Options) (*orchestrator.Result, string) {
	t.Helper()
	o.AgentBin, o.TrajBin = needOpenCode(t), needTraj(t)
	if o.TestsDir = os.Getenv("TRAJ_TESTS_DIR"); o.TestsDir == "" {
		t.Skip("TRAJ_TESTS_DIR (the public suites) needed: make test sets it")
	}
	o.Store = t.TempDir()
	// Bounds, not expectations: a run takes 20-100 s, longer beside the
	// other recording tests on a loaded machine (a run cut at 2 minutes
	// there left trees without ground truth).
	o.Model, o.Timeout, o.AbortGrace = "scripted/demo", 5*time.Minute, 5*time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	res, err := orchestrator.Run(ctx, o)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res, o.Store
}

// TestArtifactKeysEndToEnd: with the real OpenCode in bwrap, a task that
// declares its build's artifacts (./cc) has seven trees (two that do not
// build: the empty workspace and build.sh alone) of two compilers:
// ground truth tests each compiler once and serves the trees that only
// change notes from the artifacts' entry, and the trace says which key
// served each tree. `traj replay evaluate` on an empty cache builds every
// tree but tests only the compilers, and its score equals, part by part,
// both the trace's ground truth and a tree-keyed evaluate (--no-cache:
// every tree tested).
func TestArtifactKeysEndToEnd(t *testing.T) {
	t.Parallel()
	res, work := groundTruthRun(t, orchestrator.Options{
		Task: "testdata/tasks/e2e-artifacts", Script: "testdata/e2e-artifacts.jsonl", MaxParts: 50,
		Sandbox: launch.SandboxOptions{Provider: sandbox.ProviderBwrap},
	})
	traj := needTraj(t)
	tr := readValidTrace(t, res.Dir)
	if v := tr.Environment.Version; !strings.HasSuffix(v, "+artifacts=cc") {
		t.Errorf("environment version %q does not record the artifacts", v)
	}
	truth := map[string]trace.GroundTruth{}
	for _, p := range partsOf(tr) {
		for _, g := range p.GroundTruth {
			truth[g.Commit] = g
		}
	}
	for _, g := range tr.SessionEnd.GroundTruth {
		truth[g.Commit] = g
	}
	artifacts := map[string]bool{}
	tested, served, failed := 0, 0, 0
	for c, g := range truth {
		switch {
		case g.Error != "":
			t.Errorf("ground truth of %s: %s", c, g.Error)
		case g.Key == "tree" && strings.Contains(g.KeyWhy, "build failed"):
			failed++
		case g.Key != "artifact" || g.Artifact == "":
			t.Errorf("ground truth of %s: key %q (%s), want the artifacts'", c, g.Key, g.KeyWhy)
		case g.ArtifactCached:
			served++
		default:
			tested++
			artifacts[g.Artifact] = true
		}
	}
	if len(truth) != 7 || failed != 2 || tested != 2 || served != 3 || len(artifacts) != 2 {
		t.Errorf("ground truth of %d trees: %d did not build, %d tested (%d compilers), %d from the artifacts' entry; want 7 trees, 2 failed builds, 2 tested, 3 served",
			len(truth), failed, tested, len(artifacts), served)
	}

	evaluate := func(name string, args ...string) map[string]any {
		t.Helper()
		dest := filepath.Join(t.TempDir(), name)
		cmd := exec.Command(traj, append([]string{"replay", "evaluate", res.Dir, "--store", work, "--sandbox", "bwrap", "--output", dest}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("replay evaluate %v: %v\n%s", args, err, out)
		}
		var got map[string]any
		b, _ := os.ReadFile(dest)
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	// An empty cache: every tree is built, the compilers alone are tested.
	if err := os.RemoveAll(filepath.Join(work, "evalcache")); err != nil {
		t.Fatal(err)
	}
	byArtifact := evaluate("artifact.json")
	stats := byArtifact["stats"].(map[string]any)
	if stats["trees_evaluated"] != 7.0 || stats["artifact_hits"] != 3.0 {
		t.Errorf("evaluate on an empty cache: stats %v, want 7 trees built, 3 served by their artifacts", stats)
	}
	byTree := evaluate("tree.json", "--no-cache")
	for c, v := range byTree["commit_evaluations"].(map[string]any) {
		if ce := v.(map[string]any); ce["source"] != "evaluated" && ce["source"] != "same_tree" || ce["key"] != "tree" {
			t.Errorf("--no-cache evaluate of %s: source %v key %v, want evaluated by tree", c, ce["source"], ce["key"])
		}
	}
	pa, pt := byArtifact["part_evaluations"].(map[string]any), byTree["part_evaluations"].(map[string]any)
	if len(pa) == 0 || len(pa) != len(pt) {
		t.Fatalf("%d parts by artifact, %d by tree", len(pa), len(pt))
	}
	for part, a := range pa {
		a, b := a.(map[string]any), pt[part].(map[string]any)
		if a["passed"] != b["passed"] || a["total"] != b["total"] {
			t.Errorf("part %s: %v/%v by artifact, %v/%v by tree", part, a["passed"], a["total"], b["passed"], b["total"])
		}
		if g, ok := truth[a["commit"].(string)]; ok && (float64(g.Passed) != a["passed"] || float64(g.Total) != a["total"]) {
			t.Errorf("part %s: %v/%v by artifact, ground truth %d/%d", part, a["passed"], a["total"], g.Passed, g.Total)
		}
	}
}
