package orchestrator_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trajlab/traj/environment/ccompiler"
	"github.com/trajlab/traj/orchestrator"
	"github.com/trajlab/traj/trace"
)

// TestSampledGroundTruthIsNotSolvedBySampleAlone is the attack on sampled
// ground truth, with the real OpenCode and the real evaluation sandbox:
// the sample is public (a pure function of the suite, size and seed), so
// the agent writes a ./cc that compiles with gcc every case of the sample
// (nonces included: it picks cases by file name) and refuses every other
// case of basics. Its sample
// scores 100 %; the run must not end solved: the tree is evaluated in
// full, which fails. Every result says whether it was sampled and its
// sample size; `traj replay evaluate` afterwards evaluates only the trees
// never run in full (the full results are under its cache key).
func TestSampledGroundTruthIsNotSolvedBySampleAlone(t *testing.T) {
	t.Parallel()
	const size, seed = 10, 3
	dir := os.Getenv("TRAJ_TESTS_DIR")
	if dir == "" {
		t.Skip("TRAJ_TESTS_DIR (the public suites) needed: make test sets it")
	}
	env, err := ccompiler.New(ccompiler.Config{TestsDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	samplePath, ok := env.SamplePath("basics", size, seed)
	if !ok {
		t.Fatal("basics is not sampled")
	}
	sampled, err := env.CaseNames(samplePath)
	if err != nil || len(sampled) != size {
		t.Fatalf("sample %s: %v %v", samplePath, sampled, err)
	}
	all, err := env.CaseNames("basics")
	if err != nil {
		t.Fatal(err)
	}
	// Source file names of the sample's cases, and of the others.
	allow, deny := map[string]bool{}, map[string]bool{}
	for _, name := range all {
		srcs, err := env.CaseSources("basics", name)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range srcs {
			if slices.Contains(sampled, name) {
				allow[path.Base(s)] = true
			} else {
				deny[path.Base(s)] = true
			}
		}
	}
	var refused []string
	for n := range deny {
		if !allow[n] {
			refused = append(refused, n)
		}
	}
	slices.Sort(refused)
	if len(refused) == 0 {
		t.Fatal("no case outside the sample to refuse")
	}
	cc := "#!/bin/sh\nfor a in \"$@\"; do case \"$(basename \"$a\")\" in " + strings.Join(refused, "|") +
		") echo refused >&2; exit 1;; esac; done\nexec gcc \"$@\"\n"

	task := t.TempDir()
	os.WriteFile(filepath.Join(task, "task.json"), []byte(`{"name": "e2e-sampled", "environment": "c-compiler",
 "test_paths": ["basics"], "run_tests": false,
 "ground_truth": {"sample": {"size": 10, "seed": 3}}}`), 0o644)
	os.WriteFile(filepath.Join(task, "prompt.md"), []byte("Write build.sh producing ./cc.\n"), 0o644)
	line := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b) + "\n"
	}
	write := func(file, content string) map[string]any {
		return map[string]any{"tools": []any{map[string]any{"name": "write", "args": map[string]any{"filePath": file, "content": content}}}}
	}
	script := filepath.Join(t.TempDir(), "sampled.jsonl")
	os.WriteFile(script, []byte(line(write("cc.sh", cc))+
		line(write("build.sh", "#!/bin/sh\nset -e\ncp cc.sh cc\nchmod +x cc\n"))+
		line(map[string]any{"text": "Done."})), 0o644)

	res, work := groundTruthRun(t, orchestrator.Options{Task: task, Script: script, MaxParts: 20})
	tr := readValidTrace(t, res.Dir)
	end := tr.SessionEnd
	if end.Reason == trace.EndSolved {
		t.Fatalf("solved by a compiler that passes only the sample: %+v", end)
	}
	var results []trace.GroundTruth
	for _, p := range partsOf(tr) {
		results = append(results, p.GroundTruth...)
	}
	results = append(results, end.GroundTruth...)
	full, sampledTrees := map[string]trace.GroundTruth{}, map[string]bool{}
	var finalSample *trace.GroundTruth
	for _, g := range results {
		if g.Error != "" || len(g.Suites) != 1 {
			t.Errorf("ground truth %+v", g)
			continue
		}
		if g.Sampled {
			sampledTrees[g.Tree] = true
			if g.Solved || g.Suites[0].SampleSize != size || g.Total != size || g.SampleSeed != seed {
				t.Errorf("sampled result %+v", g)
			}
			if g.Commit == end.FinalGitCommit {
				finalSample = &g
			}
			continue
		}
		if g.Suites[0].SampleSize != 0 || g.Total != int64(len(all)) {
			t.Errorf("full result %+v", g)
		}
		full[g.Tree] = g
	}
	if finalSample == nil || finalSample.Passed != size {
		t.Fatalf("the final tree's sample: %+v, want all %d passed (the attack works on the sample)", finalSample, size)
	}
	f, ok := full[finalSample.Tree]
	if !ok || f.Solved {
		t.Fatalf("the final tree in full: %+v (found %v), want evaluated and not solved", f, ok)
	}
	if f.Passed == f.Total {
		t.Fatalf("the final tree passes in full: %+v", f)
	}

	// replay evaluate: the trees run in full come from the cache, the
	// others (sampled only) are evaluated now.
	dest := filepath.Join(t.TempDir(), "eval.json")
	out, err := exec.Command(needTraj(t), "replay", "evaluate", res.Dir, "--store", work, "--output", dest).CombinedOutput()
	if err != nil {
		t.Fatalf("replay evaluate: %v\n%s", err, out)
	}
	var got struct {
		Stats struct {
			UniqueTrees int `json:"unique_trees"`
			CacheHits   int `json:"cache_hits"`
		} `json:"stats"`
		Commits map[string]struct {
			Tree   string `json:"tree"`
			Source string `json:"source"`
			Passed int64  `json:"passed"`
		} `json:"commit_evaluations"`
	}
	b, _ := os.ReadFile(dest)
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	trees := map[string]bool{}
	for c, ce := range got.Commits {
		trees[ce.Tree] = true
		if g, ok := full[ce.Tree]; ok && ce.Passed != g.Passed {
			t.Errorf("commit %s: replay passed %d, ground truth in full %d", c, ce.Passed, g.Passed)
		}
	}
	inFull := 0
	for tree := range trees {
		if _, ok := full[tree]; ok {
			inFull++
		} else if !sampledTrees[tree] {
			t.Errorf("tree %s: replay evaluates it, ground truth never did", tree)
		}
	}
	if got.Stats.UniqueTrees != len(trees) || got.Stats.CacheHits != inFull || inFull == 0 || inFull == len(trees) {
		t.Errorf("replay evaluate %+v: want exactly the %d of %d trees run in full from the cache, the others evaluated",
			got.Stats, inFull, len(trees))
	}
	t.Logf("final tree: sample %d/%d, full %d/%d; trees: %d sampled, %d in full; replay evaluate: %d of %d from the cache",
		finalSample.Passed, finalSample.Total, f.Passed, f.Total, len(sampledTrees), len(full), got.Stats.CacheHits, got.Stats.UniqueTrees)
}
