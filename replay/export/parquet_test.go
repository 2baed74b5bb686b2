package export_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/export"
	"github.com/trajlab/traj/sandbox/gateway/model"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/tracetest"
)

// demoStore builds a store holding the demo trajectory (recorded with the
// real OpenCode and the scripted demo model, evaluated by traj replay
// evaluate: testdata/demo) and two synthetic ones, one with an evaluation
// report written in evaluate's format.
func demoStore(t *testing.T) string {
	t.Helper()
	st := t.TempDir()
	demo := filepath.Join(st, store.TrajectoriesDir, "demo")
	for _, name := range []string{store.TraceName, store.EvaluationName, store.BundleName} {
		copyFile(t, filepath.Join("testdata", "demo", name), filepath.Join(demo, name))
	}
	for _, id := range []string{"syn-a", "syn-b"} {
		dir := filepath.Join(st, store.TrajectoriesDir, id)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		tracetest.WriteDir(t, dir, tracetest.Spec{
			TrajectoryID: id, Turns: []int{3, 4}, PartSize: 3000, End: trace.EndPartLimit,
			EnvoiCalls: map[int][]trace.EnvoiCall{2: {tracetest.RunTests("basics", 3, 5)}, 6: {tracetest.RunTests("wacct", 7, 1)}},
		})
	}
	writeEvaluation(t, filepath.Join(st, store.TrajectoriesDir, "syn-a", store.EvaluationName), "syn-a", 7)
	writeModelCalls(t, filepath.Join(st, store.TrajectoriesDir, "syn-a", store.ModelCallsName), 5)
	return st
}

// writeModelCalls writes a model gateway record of n calls, in the
// gateway's own line type.
func writeModelCalls(t *testing.T, path string, n int) {
	t.Helper()
	var b []byte
	for i := 1; i <= n; i++ {
		cost := 0.001 * float64(i)
		parts := i - 1
		c := model.Call{Seq: i, StartedAt: tracetest.Time(i), LatencyMS: 120.5, API: "chat_completions", Method: "POST",
			Path: "/v1/chat/completions", Status: 200, Model: "demo", Stream: true,
			Request:    model.Digest{SHA256: fmt.Sprintf("%064x", i), Bytes: 1000 * i},
			ResponseID: fmt.Sprintf("chatcmpl-%d", i), ToolCallIDs: []string{fmt.Sprintf("call_%d", i)},
			Tokens: &trace.Tokens{Input: int64(100 * i), Output: int64(10 * i), CacheRead: 7},
			Cost:   &cost, PartsBefore: &parts, Response: "data: {}\n\n"}
		line, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		b = append(append(b, line...), '\n')
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeEvaluation writes an evaluate report for a tracetest trajectory of
// n parts: part i is at commit tracetest.Commit(i) and passes i of 10
// basics cases; case k first passes at part k.
func writeEvaluation(t *testing.T, path, id string, n int) {
	t.Helper()
	out := replay.Output{TrajectoryID: id, CommitEvaluations: map[string]*replay.CommitEvaluation{},
		PartToCommit: replay.PartMap[string]{}, PartEvaluations: replay.PartMap[*replay.PartEvaluation]{},
		TestAttribution: map[string]*replay.Attribution{}}
	for i := 1; i <= n; i++ {
		c := tracetest.Commit(i)
		passed := min(i, 10)
		out.CommitEvaluations[c] = &replay.CommitEvaluation{Tree: fmt.Sprintf("%040d", i), Passed: passed, Failed: 10 - passed, Total: 10,
			PassRate: float64(passed) / 10, Parts: []int{i}, Source: replay.SourceEvaluated,
			Suites: map[string]replay.SuiteResult{"basics": {Passed: passed, Failed: 10 - passed, Total: 10}}}
		out.PartToCommit[i] = c
		out.PartEvaluations[i] = &replay.PartEvaluation{Commit: c, Passed: passed, Failed: 10 - passed, Total: 10, PassRate: float64(passed) / 10}
	}
	for k := 1; k <= 10; k++ {
		a := &replay.Attribution{BrokenAt: []int{}, FixedAt: []int{}}
		if k <= n {
			p := k
			a.FirstPassPart, a.PassingAtEnd = &p, true
		}
		out.TestAttribution[fmt.Sprintf("basics/smoke/t%02d.c", k)] = a
	}
	out.CommitsEvaluated = n
	data, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// expected is what a trajectory's trace says, read with the trace package.
type expected struct {
	parts  int
	tokens trace.Tokens
	cost   float64
	eval   *replay.Output
}

func expect(t *testing.T, dir string) expected {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, store.TraceName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := trace.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	var u trace.Usage
	var e expected
	for _, turn := range tr.Turns {
		for i := range turn.Parts {
			u.AddPart(&turn.Parts[i])
			e.parts++
		}
	}
	u.End(tr.SessionEnd)
	if tok := u.Tokens(); tok != nil {
		e.tokens = *tok
	}
	if c := u.Cost(); c != nil {
		e.cost = *c
	}
	if data, err := os.ReadFile(filepath.Join(dir, store.EvaluationName)); err == nil {
		e.eval = &replay.Output{}
		if err := json.Unmarshal(data, e.eval); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func TestParquetQueriedByDuckDB(t *testing.T) {
	st := demoStore(t)
	out := filepath.Join(t.TempDir(), "export")
	ctx := context.Background()
	sum, err := export.Run(ctx, []string{st}, export.Options{Format: export.FormatParquet, Out: out, StoreURL: st})
	if err != nil {
		t.Fatalf("export: %v", err)
	}
	if sum.Exported != 3 || sum.Failed != 0 {
		t.Fatalf("summary %+v, want 3 exported", sum)
	}
	table := func(name string) string {
		return "read_parquet(" + sqlPath(filepath.Join(out, name, "*.parquet")) + ")"
	}
	res := duckdb(t,
		// 0: per trajectory: parts, token and cost sums over the parts table.
		`SELECT trajectory_id, count(*) AS n, count(DISTINCT part) AS distinct_parts, min(part) AS first, max(part) AS last,
		   sum(tokens_input) AS ti, sum(tokens_output) AS tout, sum(tokens_reasoning) AS tr,
		   sum(tokens_cache_read) AS tcr, sum(tokens_cache_write) AS tcw, sum(cost_usd) AS cost
		 FROM `+table("parts")+` GROUP BY trajectory_id ORDER BY trajectory_id`,
		// 1: the trajectories table.
		`SELECT trajectory_id, parts, tokens_input AS ti, tokens_output AS tout, tokens_reasoning AS tr,
		   tokens_cache_read AS tcr, tokens_cache_write AS tcw, cost_usd AS cost, evaluated, harness, subagent_sessions
		 FROM `+table("trajectories")+` ORDER BY trajectory_id`,
		// 2: parts joined to their commit's evaluate results, summed over suites.
		`SELECT p.trajectory_id, p.part, sum(e.passed) AS passed, sum(e.total) AS total, count(*) AS suites
		 FROM `+table("parts")+` p JOIN `+table("evaluations")+` e
		   ON p.trajectory_id = e.trajectory_id AND p.commit = e.commit AND e.source = 'evaluate'
		 GROUP BY p.trajectory_id, p.part ORDER BY p.trajectory_id, p.part`,
		// 3: tests per trajectory.
		`SELECT trajectory_id, count(*) AS n, count(first_pass_part) AS passed_once FROM `+table("tests")+` GROUP BY trajectory_id ORDER BY trajectory_id`,
		// 4: run_tests calls per trajectory.
		`SELECT trajectory_id, count(*) AS n FROM `+table("evaluations")+` WHERE source = 'run_tests' GROUP BY trajectory_id ORDER BY trajectory_id`,
		// 5: sub-agent parts and checkpoints with line counts in the demo.
		`SELECT count(*) FILTER (WHERE subagent) AS sub, count(*) FILTER (WHERE committed) AS commits,
		   count(*) FILTER (WHERE committed AND lines_added > 0) AS with_lines, count(*) FILTER (WHERE tool IS NOT NULL) AS tools
		 FROM `+table("parts")+` WHERE trajectory_id = 'demo'`,
		// 6: the model-call record of syn-a.
		`SELECT trajectory_id, count(*) AS n, sum(tokens_input) AS ti, sum(tokens_output) AS tout,
		   sum(tokens_cache_read) AS tcr, sum(cost_usd) AS cost, max(seq) AS last
		 FROM `+table("model_calls")+` GROUP BY trajectory_id`,
	)
	ids := []string{"demo", "syn-a", "syn-b"}
	byID := func(rows []map[string]any) map[string]map[string]any {
		m := map[string]map[string]any{}
		for _, r := range rows {
			m[r["trajectory_id"].(string)] = r
		}
		return m
	}
	parts, trajs, tests, calls := byID(res[0]), byID(res[1]), byID(res[3]), byID(res[4])
	joined := map[string]map[int]map[string]any{}
	for _, r := range res[2] {
		id := r["trajectory_id"].(string)
		p, _ := num(t, r["part"])
		if joined[id] == nil {
			joined[id] = map[int]map[string]any{}
		}
		joined[id][int(p)] = r
	}
	for _, id := range ids {
		want := expect(t, filepath.Join(st, store.TrajectoriesDir, id))
		eq := func(what string, got any, w float64) {
			t.Helper()
			g, _ := num(t, got)
			if math.Abs(g-w) > 1e-9 {
				t.Errorf("%s %s = %v, want %v", id, what, g, w)
			}
		}
		p, tr := parts[id], trajs[id]
		if p == nil || tr == nil {
			t.Fatalf("%s missing from parts or trajectories", id)
		}
		eq("parts rows", p["n"], float64(want.parts))
		eq("distinct parts", p["distinct_parts"], float64(want.parts))
		eq("first part", p["first"], 1)
		eq("last part", p["last"], float64(want.parts))
		eq("trajectories.parts", tr["parts"], float64(want.parts))
		for _, row := range []map[string]any{p, tr} {
			eq("tokens input", row["ti"], float64(want.tokens.Input))
			eq("tokens output", row["tout"], float64(want.tokens.Output))
			eq("tokens reasoning", row["tr"], float64(want.tokens.Reasoning))
			eq("tokens cache read", row["tcr"], float64(want.tokens.CacheRead))
			eq("tokens cache write", row["tcw"], float64(want.tokens.CacheWrite))
			eq("cost", row["cost"], want.cost)
		}
		if want.tokens.Total() == 0 {
			t.Errorf("%s: the trace reports no tokens; the sums check nothing", id)
		}
		if want.eval == nil {
			if tr["evaluated"] != false || len(joined[id]) != 0 {
				t.Errorf("%s has no evaluation report, but evaluated=%v and %d parts join", id, tr["evaluated"], len(joined[id]))
			}
			continue
		}
		if tr["evaluated"] != true {
			t.Errorf("%s: evaluated = %v", id, tr["evaluated"])
		}
		// Every part joins its commit's results, and the suites sum to the
		// part's counts in the report.
		if len(joined[id]) != want.parts {
			t.Errorf("%s: %d parts join evaluations, want %d", id, len(joined[id]), want.parts)
		}
		for part, pe := range want.eval.PartEvaluations {
			r := joined[id][part]
			if r == nil {
				continue
			}
			eq(fmt.Sprintf("part %d passed", part), r["passed"], float64(pe.Passed))
			eq(fmt.Sprintf("part %d total", part), r["total"], float64(pe.Total))
		}
		eq("tests", tests[id]["n"], float64(len(want.eval.TestAttribution)))
	}
	eq := func(what string, got any, w float64) {
		t.Helper()
		if g, _ := num(t, got); g != w {
			t.Errorf("%s = %v, want %v", what, g, w)
		}
	}
	eq("syn-a run_tests rows", calls["syn-a"]["n"], 2)
	demo := res[5][0]
	// The demo's sub-agent (a task that writes README.md) made 5 parts;
	// 9 parts changed files, 8 of them adding lines (part 20 rebuilt a
	// binary, scratch/ret, and nothing else).
	eq("demo sub-agent parts", demo["sub"], 5)
	eq("demo subagent_sessions", trajs["demo"]["subagent_sessions"], 1)
	eq("demo checkpoints", demo["commits"], 9)
	eq("demo checkpoints with lines added", demo["with_lines"], 8)
	totals, err := model.ReadRecord(filepath.Join(st, store.TrajectoriesDir, "syn-a", store.ModelCallsName), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res[6]) != 1 || res[6][0]["trajectory_id"] != "syn-a" {
		t.Fatalf("model_calls rows by trajectory: %v, want syn-a only", res[6])
	}
	mc := res[6][0]
	eq("model calls", mc["n"], float64(totals.Calls))
	eq("model calls last seq", mc["last"], float64(totals.Calls))
	eq("model calls tokens input", mc["ti"], float64(totals.Tokens.Input))
	eq("model calls tokens output", mc["tout"], float64(totals.Tokens.Output))
	eq("model calls tokens cache read", mc["tcr"], float64(totals.Tokens.CacheRead))
	if c, _ := num(t, mc["cost"]); math.Abs(c-totals.Cost) > 1e-9 {
		t.Errorf("model calls cost %v, want %v", c, totals.Cost)
	}
	if trajs["demo"]["harness"] != "opencode" {
		t.Errorf("demo harness %v", trajs["demo"]["harness"])
	}
}

func TestParquetIncremental(t *testing.T) {
	st := demoStore(t)
	out := filepath.Join(t.TempDir(), "export")
	ctx := context.Background()
	opts := export.Options{Format: export.FormatParquet, Out: out, StoreURL: st}
	if _, err := export.Run(ctx, []string{st}, opts); err != nil {
		t.Fatal(err)
	}
	partsFile := func(id string) string { return filepath.Join(out, export.TableParts, id+".parquet") }
	stamp := func(id string) time.Time {
		fi, err := os.Stat(partsFile(id))
		if err != nil {
			t.Fatal(err)
		}
		return fi.ModTime()
	}
	before := map[string]time.Time{"demo": stamp("demo"), "syn-a": stamp("syn-a"), "syn-b": stamp("syn-b")}

	// Nothing changed: nothing is written.
	sum, err := export.Run(ctx, []string{st}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Exported != 0 || sum.Unchanged != 3 {
		t.Fatalf("second export: %+v, want 3 unchanged", sum)
	}
	// syn-b gains an evaluation report: only syn-b is written again.
	time.Sleep(10 * time.Millisecond)
	writeEvaluation(t, filepath.Join(st, store.TrajectoriesDir, "syn-b", store.EvaluationName), "syn-b", 7)
	sum, err = export.Run(ctx, []string{st}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Exported != 1 || sum.Unchanged != 2 {
		t.Fatalf("after a change: %+v, want 1 exported, 2 unchanged", sum)
	}
	for id, was := range before {
		if changed := !stamp(id).Equal(was); changed != (id == "syn-b") {
			t.Errorf("%s rewritten = %v", id, changed)
		}
	}
	// A removed output file is written again; --full rewrites everything.
	if err := os.Remove(partsFile("demo")); err != nil {
		t.Fatal(err)
	}
	if sum, err = export.Run(ctx, []string{st}, opts); err != nil || sum.Exported != 1 {
		t.Fatalf("after removing a file: %+v, %v", sum, err)
	}
	opts.Full = true
	if sum, err = export.Run(ctx, []string{st}, opts); err != nil || sum.Exported != 3 {
		t.Fatalf("--full: %+v, %v", sum, err)
	}
	// The trajectory is gone from the store: --prune removes its files.
	if err := os.RemoveAll(filepath.Join(st, store.TrajectoriesDir, "syn-a")); err != nil {
		t.Fatal(err)
	}
	opts.Full, opts.Prune = false, true
	if sum, err = export.Run(ctx, []string{st}, opts); err != nil || sum.Pruned != 1 || sum.Unchanged != 2 {
		t.Fatalf("--prune: %+v, %v", sum, err)
	}
	if _, err := os.Stat(partsFile("syn-a")); !os.IsNotExist(err) {
		t.Errorf("pruned trajectory's parts file: %v", err)
	}
}
