package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/labels"
	"github.com/trajlab/traj/replay/replaytest"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/tracetest"
)

// storeWith copies built trajectories into a local store folder.
func storeWith(t *testing.T, tjs ...*replaytest.Trajectory) string {
	t.Helper()
	dir := t.TempDir()
	for _, tj := range tjs {
		copyInto(t, dir, tj)
	}
	return dir
}

func traj(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

func TestReplayCommands(t *testing.T) {
	t.Parallel() // with the other long tests: see main_test.go
	tj := replaytest.Build(t, "traj-cli", replaytest.AttributionScriptBreaking("for_loop"), 3, true)
	st := storeWith(t, tj)
	work := t.TempDir()

	t.Run("verify", func(t *testing.T) {
		code, out, errOut := traj(t, "replay", "verify", "--trajectory-id", tj.ID, "--store", st)
		if code != 0 || !strings.Contains(out, "ok (10 parts") {
			t.Fatalf("verify: code %d\n%s%s", code, out, errOut)
		}
		// Loose files work too.
		if code, out, errOut := traj(t, "replay", "verify", "--trace", tj.TracePath, "--bundle", tj.BundlePath, "--store", st); code != 0 {
			t.Fatalf("verify loose files: code %d\n%s%s", code, out, errOut)
		}
	})

	t.Run("verify lists problems", func(t *testing.T) {
		bad := filepath.Join(work, "bad")
		if err := os.MkdirAll(bad, 0o755); err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(tj.TracePath)
		// Point part 4 at a commit the bundle lacks.
		data = bytes.ReplaceAll(data, []byte(tj.Commits[3]), []byte(strings.Repeat("e", 40)))
		os.WriteFile(filepath.Join(bad, "agent_trace.json"), data, 0o644)
		b, _ := os.ReadFile(tj.BundlePath)
		os.WriteFile(filepath.Join(bad, "repo.bundle"), b, 0o644)
		code, out, _ := traj(t, "replay", "verify", "--trajectory-id", bad, "--store", st)
		if code != 1 || !strings.Contains(out, "part 4: git_commit "+strings.Repeat("e", 40)+" is not in the bundle") || !strings.Contains(out, "part 5: commit_before") {
			t.Fatalf("verify of a broken trace: code %d\n%s", code, out)
		}
	})

	t.Run("evaluate keeps the others when a commit is missing", func(t *testing.T) {
		bad := filepath.Join(work, "missing-commit")
		if err := os.MkdirAll(bad, 0o755); err != nil {
			t.Fatal(err)
		}
		missing := strings.Repeat("e", 40)
		data, _ := os.ReadFile(tj.TracePath)
		data = bytes.ReplaceAll(data, []byte(tj.Commits[3]), []byte(missing))
		os.WriteFile(filepath.Join(bad, "agent_trace.json"), data, 0o644)
		b, _ := os.ReadFile(tj.BundlePath)
		os.WriteFile(filepath.Join(bad, "repo.bundle"), b, 0o644)
		out := filepath.Join(work, "eval-missing.json")
		code, _, errOut := traj(t, "replay", "evaluate", "--trajectory-id", bad, "--store", st, "--tests", "basics/control_flow", "--no-cache", "--output", out)
		if code != 1 || !strings.Contains(errOut, missing) {
			t.Fatalf("evaluate with a missing commit: code %d\n%s", code, errOut)
		}
		var ev replay.Output
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatalf("no output written: %v", err)
		}
		if err := json.Unmarshal(data, &ev); err != nil {
			t.Fatal(err)
		}
		if ce := ev.CommitEvaluations[missing]; ce == nil || ce.Source != replay.SourceFailed || ev.PartEvaluations[4].Error == "" {
			t.Fatalf("missing commit: %+v", ce)
		}
		if pe := ev.PartEvaluations[3]; pe == nil || pe.Error != "" || pe.Total == 0 {
			t.Fatalf("part 3 was not evaluated: %+v", pe)
		}
	})

	t.Run("checkout-part", func(t *testing.T) {
		dest := filepath.Join(work, "repo_part_5")
		summary := filepath.Join(work, "repo_part_5.json")
		code, out, errOut := traj(t, "replay", "checkout-part", "--trajectory-id", tj.ID, "--store", st, "--part", "5", "--checkout-dest", dest, "--output", summary)
		if code != 0 {
			t.Fatalf("code %d\n%s%s", code, out, errOut)
		}
		var sum replay.CheckoutSummary
		data, _ := os.ReadFile(summary)
		if err := json.Unmarshal(data, &sum); err != nil || sum.Commit != tj.Commits[4] || sum.Part != 5 || sum.TrajectoryID != tj.ID || sum.Dest != dest {
			t.Fatalf("summary %s (%v)", data, err)
		}
		if got, want := replaytest.Git(t, dest, "ls-tree", "-r", "HEAD"), replaytest.Git(t, tj.Work, "ls-tree", "-r", tj.Commits[4]); got != want {
			t.Fatalf("tree differs:\n%s\nwant\n%s", got, want)
		}
		if st := replaytest.Git(t, dest, "status", "--porcelain"); st != "" {
			t.Fatalf("status not clean: %s", st)
		}
		code, _, errOut = traj(t, "replay", "checkout-part", "--trajectory-id", tj.ID, "--store", st, "--part", "11", "--checkout-dest", filepath.Join(work, "x"))
		if code != 2 || !strings.Contains(errOut, "parts 1..10") {
			t.Fatalf("part 11: code %d %s", code, errOut)
		}
		code, _, errOut = traj(t, "replay", "checkout-part", "--trajectory-id", tj.ID, "--store", st, "--part", "2", "--checkout-dest", dest)
		if code != 2 || !strings.Contains(errOut, "--force") {
			t.Fatalf("non-empty dest: code %d %s", code, errOut)
		}
		inside := filepath.Join(st, "trajectories", tj.ID, "checkout")
		code, _, errOut = traj(t, "replay", "checkout-part", "--trajectory-id", tj.ID, "--store", st, "--part", "2", "--checkout-dest", inside)
		if code != 2 || !strings.Contains(errOut, "inside the trajectory's source folder") {
			t.Fatalf("dest inside the store: code %d %s", code, errOut)
		}
	})

	t.Run("evaluate twice and report", func(t *testing.T) {
		out1 := filepath.Join(work, "eval1.json")
		html := filepath.Join(work, "eval.html")
		args := []string{"replay", "evaluate", "--trajectory-id", tj.ID, "--store", st, "--tests", "basics/control_flow", "--workers", "2"}
		t0 := time.Now()
		code, _, errOut := traj(t, append(args, "--output", out1, "--html", html)...)
		first := time.Since(t0)
		if code != 0 {
			t.Fatalf("evaluate: code %d\n%s", code, errOut)
		}
		var o1 map[string]json.RawMessage
		data, _ := os.ReadFile(out1)
		if err := json.Unmarshal(data, &o1); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"commits_evaluated", "commit_evaluations", "part_to_commit", "part_evaluations", "test_attribution"} {
			if _, ok := o1[k]; !ok {
				t.Fatalf("output lacks %q", k)
			}
		}
		var ev replay.Output
		json.Unmarshal(data, &ev)
		if ev.Stats.TreesEvaluated != 6 || ev.Stats.CacheHits != 0 || len(ev.PartToCommit) != 10 {
			t.Fatalf("first evaluate stats %+v", ev.Stats)
		}
		if a := ev.TestAttribution["basics/control_flow/for_loop.c"]; a == nil || *a.FirstPassPart != 3 || a.BrokenAt[0] != 5 || a.FixedAt[0] != 8 {
			t.Fatalf("attribution %+v", a)
		}
		entries, _ := filepath.Glob(filepath.Join(st, "evalcache", "*.json"))
		if len(entries) != 6 {
			t.Fatalf("store holds %d cache entries, want 6", len(entries))
		}
		if sets, _ := filepath.Glob(filepath.Join(st, "evalcache", "sets", "*.set")); len(sets) != 1 {
			t.Fatalf("store holds %d evaluation cache sets, want the trajectory's", len(sets))
		}
		if _, err := os.Stat(filepath.Join(st, filepath.FromSlash(store.EvaluationKey(tj.ID)))); err != nil {
			t.Fatal("evaluation report not kept in the store")
		}

		out2 := filepath.Join(work, "eval2.json")
		t0 = time.Now()
		code, _, errOut = traj(t, append(args, "--output", out2)...)
		second := time.Since(t0)
		if code != 0 {
			t.Fatalf("second evaluate: code %d\n%s", code, errOut)
		}
		var ev2 replay.Output
		data, _ = os.ReadFile(out2)
		json.Unmarshal(data, &ev2)
		if ev2.Stats.TreesEvaluated != 0 || ev2.Stats.CacheHits != 6 {
			t.Fatalf("second evaluate stats %+v", ev2.Stats)
		}
		t.Logf("evaluate: first %v, second (cache) %v", first, second)
		// A third into the same file: the cache serves every tree, the
		// inputs are the same, the report is left as it is (and kept in
		// the store as it is).
		kept := filepath.Join(st, filepath.FromSlash(store.EvaluationKey(tj.ID)))
		os.Remove(kept)
		code, _, errOut = traj(t, append(args, "--output", out2)...)
		if again, _ := os.ReadFile(out2); code != 0 || !strings.Contains(errOut, "unchanged") || !bytes.Equal(again, data) {
			t.Fatalf("third evaluate: code %d, report the same %v\n%s", code, bytes.Equal(again, data), errOut)
		}
		if stored, _ := os.ReadFile(kept); !bytes.Equal(stored, data) {
			t.Fatal("the unchanged report is not kept beside the trajectory")
		}
		// A report changed by hand is built again.
		os.WriteFile(out2, bytes.Replace(data, []byte(`"cache_hits": 6`), []byte(`"cache_hits": 60`), 1), 0o644)
		code, _, errOut = traj(t, append(args, "--output", out2)...)
		var ev3 replay.Output
		again, _ := os.ReadFile(out2)
		if err := json.Unmarshal(again, &ev3); code != 0 || err != nil || strings.Contains(errOut, "unchanged") || ev3.Stats.CacheHits != 6 || ev3.InputsDigest != ev2.InputsDigest || ev3.InputsDigest == "" {
			t.Fatalf("evaluate over an edited report: code %d, %+v\n%s", code, ev3.Stats, errOut)
		}
		// The labels are in the report, with the thresholds they were
		// computed with; other thresholds relabel it from what was
		// recorded, without evaluating anything, and the same ones again
		// leave it as it is.
		if set, ok := labels.Stored(&ev3); !ok || set.Options.PlateauParts != 50 {
			t.Fatalf("report without labels or with other thresholds: %s", ev3.Labels)
		}
		code, _, errOut = traj(t, append(args, "--output", out2, "--labels", "plateau_parts=1")...)
		var ev4 replay.Output
		relabelled, _ := os.ReadFile(out2)
		json.Unmarshal(relabelled, &ev4)
		set, ok := labels.Stored(&ev4)
		if code != 0 || strings.Contains(errOut, "unchanged") || !ok || set.Options.PlateauParts != 1 || ev4.InputsDigest != ev3.InputsDigest || replay.ReportDigest(relabelled) != ev3.InputsDigest {
			t.Fatalf("relabel: code %d, labels %s, digest %q (was %q)\n%s", code, ev4.Labels, ev4.InputsDigest, ev3.InputsDigest, errOut)
		}
		plateaus := 0
		for _, l := range set.Labels {
			if l.Label == labels.Plateau {
				plateaus++
			}
		}
		if plateaus == 0 {
			t.Fatalf("plateau_parts=1 found no plateau: %+v", set.Labels)
		}
		code, _, errOut = traj(t, append(args, "--output", out2, "--labels", "plateau_parts=1")...)
		if again, _ := os.ReadFile(out2); code != 0 || !strings.Contains(errOut, "unchanged") || !bytes.Equal(again, relabelled) {
			t.Fatalf("same thresholds again: code %d\n%s", code, errOut)
		}
		if code, _, errOut = traj(t, append(args, "--output", out2, "--labels", "plateau=1")...); code != 2 {
			t.Fatalf("an unknown threshold: code %d\n%s", code, errOut)
		}

		page, _ := os.ReadFile(html)
		for _, want := range []string{"<svg", "pass rate by part", "Regressions", "basics/control_flow/for_loop.c"} {
			if !bytes.Contains(page, []byte(want)) {
				t.Fatalf("evaluate --html lacks %q", want)
			}
		}

		rep := filepath.Join(work, "report")
		code, stdout, errOut := traj(t, "report", "--store", st, "--html", rep+".html", "--csv", rep+".csv", "--json", rep+".json")
		if code != 0 || !strings.Contains(stdout, tj.ID) {
			t.Fatalf("report: code %d\n%s%s", code, stdout, errOut)
		}
		csv, _ := os.ReadFile(rep + ".csv")
		if !strings.Contains(string(csv), tj.ID+",opencode,opencode,,scripted/tiny,c-compiler,10,") || !strings.Contains(string(csv), ",evaluation,") {
			t.Fatalf("csv:\n%s", csv)
		}
	})
}

// TestSampleReport builds a small store of three trajectories (two
// evaluated with the real C-compiler environment, one in the original
// recorder's shape with only run_tests calls), evaluates the first two and
// renders the batch report. With TRAJ_REPORT_SAMPLE_DIR set it leaves the
// store and report.html there (make report-png screenshots it).
func TestSampleReport(t *testing.T) {
	t.Parallel() // with the other long tests: see main_test.go
	climb := replaytest.BuildSpec(t, replaytest.Spec{ID: "traj-climb", TurnSize: 4, TrajFields: true, EndReason: "solved", Model: "scripted/climber",
		Changes: replaytest.ProgressScript(20, map[int][]string{
			5: {"goto", "if_else"}, 7: {"while_sum"}, 9: {"do_while", "for_loop"}, 11: {"+for_loop"},
			13: {"for_loop", "break_continue"}, 16: {"nested_loops"}, 19: {"switch", "switch_fallthrough"},
		})})
	stall := replaytest.BuildSpec(t, replaytest.Spec{ID: "traj-stall", TurnSize: 3, TrajFields: true, Model: "scripted/staller",
		Changes: replaytest.ProgressScript(14, map[int][]string{4: {"goto"}, 8: {"if_else", "while_sum"}, 12: {"+goto"}})})
	orig := make([]replaytest.Change, 8)
	orig[0].Write = map[string]string{"README.md": "x\n"}
	orig[2].Calls = []trace.EnvoiCall{tracetest.RunTests("basics", 10, 60)}
	orig[5].Calls = []trace.EnvoiCall{tracetest.RunTests("basics", 31, 39), tracetest.RunTests("wacct/chapter_1", 4, 20)}
	orig[7].Calls = []trace.EnvoiCall{tracetest.RunTests("basics", 44, 26)}
	original := replaytest.BuildSpec(t, replaytest.Spec{ID: "traj-original", TurnSize: 4, Changes: orig, EndReason: "agent_error", Model: "opencode/gpt-5-nano"})

	dir := os.Getenv("TRAJ_REPORT_SAMPLE_DIR")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.RemoveAll(filepath.Join(dir, "store")); err != nil {
		t.Fatal(err)
	}
	st := filepath.Join(dir, "store")
	if err := os.MkdirAll(st, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tj := range []*replaytest.Trajectory{climb, stall, original} {
		copyInto(t, st, tj)
	}
	for _, id := range []string{"traj-climb", "traj-stall"} {
		code, _, errOut := traj(t, "replay", "evaluate", "--trajectory-id", id, "--store", st, "--tests", "basics/control_flow",
			"--output", filepath.Join(dir, id+".json"), "--html", filepath.Join(dir, id+".html"))
		if code != 0 {
			t.Fatalf("evaluate %s: %d\n%s", id, code, errOut)
		}
	}
	html := filepath.Join(dir, "report.html")
	code, stdout, errOut := traj(t, "report", "--store", st, "--html", html, "--title", "traj sample report")
	if code != 0 {
		t.Fatalf("report: %d\n%s", code, errOut)
	}
	for _, want := range []string{"traj-climb", "traj-stall", "solved", "agent_error"} {
		if !strings.Contains(stdout, want) {
			t.Fatalf("report table lacks %q:\n%s", want, stdout)
		}
	}
	page, _ := os.ReadFile(html)
	if n := bytes.Count(page, []byte("<svg")); n != 5 {
		t.Fatalf("report has %d charts, want 5", n)
	}
	// The climb's final state passes everything; the stall's regression at
	// part 12 shows in its evaluation.
	var climbEval, stallEval replay.Output
	data, _ := os.ReadFile(filepath.Join(dir, "traj-climb.json"))
	json.Unmarshal(data, &climbEval)
	if pe := climbEval.PartEvaluations[20]; pe == nil || pe.Passed != pe.Total || pe.Total != 9 {
		t.Fatalf("climb part 20: %+v", pe)
	}
	if a := climbEval.TestAttribution["basics/control_flow/for_loop.c"]; a == nil || *a.FirstPassPart != 9 || a.BrokenAt[0] != 11 || a.FixedAt[0] != 13 {
		t.Fatalf("climb for_loop: %+v", a)
	}
	data, _ = os.ReadFile(filepath.Join(dir, "traj-stall.json"))
	json.Unmarshal(data, &stallEval)
	if regs := replay.Regressions(stallEval.TestAttribution); len(regs) != 1 || regs[0].Test != "basics/control_flow/goto.c" || regs[0].BrokenAt != 12 {
		t.Fatalf("stall regressions: %+v", regs)
	}
}

func copyInto(t *testing.T, st string, tj *replaytest.Trajectory) {
	t.Helper()
	for key, src := range map[string]string{store.TraceKey(tj.ID): tj.TracePath, store.BundleKey(tj.ID): tj.BundlePath} {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(st, filepath.FromSlash(key))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Read-only replay commands on a trajectory folder or loose files never
// create the default store (./runs): only evaluate caches there.
func TestReadOnlyReplayMakesNoStore(t *testing.T) {
	tj := replaytest.Build(t, "traj-ro", replaytest.AttributionScript()[:4], 2, true)
	cwd := t.TempDir()
	t.Chdir(cwd)
	t.Setenv("TRAJ_STORE", "")
	loose := []string{"--trace", tj.TracePath, "--bundle", tj.BundlePath}
	folder := []string{"--trajectory-id", tj.Dir}
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"verify loose files", append([]string{"replay", "verify"}, loose...)},
		{"verify folder", append([]string{"replay", "verify"}, folder...)},
		{"checkout-part loose files", append([]string{"replay", "checkout-part", "--part", "2", "--checkout-dest", filepath.Join(t.TempDir(), "co")}, loose...)},
		{"checkout-part folder", append([]string{"replay", "checkout-part", "--part", "3", "--checkout-dest", filepath.Join(t.TempDir(), "co")}, folder...)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if code, out, errOut := traj(t, tt.args...); code != 0 {
				t.Fatalf("code %d\n%s%s", code, out, errOut)
			}
			if _, err := os.Stat(filepath.Join(cwd, "runs")); !os.IsNotExist(err) {
				t.Fatalf("./runs appeared (stat: %v)", err)
			}
		})
	}
}
