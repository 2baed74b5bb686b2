package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/trajlab/traj/replay/export"
	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/trace/store"
)

// TestScoresWithoutEvaluate records a trajectory (OpenCode, the demo
// script, bwrap; ground truth scores its checkpoints on the host) and,
// before any traj replay evaluate, exports it and reports it: the
// trajectories row carries the final and best scores from the trace's
// ground truth with score_source "ground_truth", the tests table is
// filled from the per-case results the run cached in the store (source
// "ground_truth"), and the report says its rates come from ground truth.
// Then the cache is emptied: the scores stay (the trace holds them), the
// tests table is empty rather than wrong.
func TestScoresWithoutEvaluate(t *testing.T) {
	t.Parallel() // with the other recording tests: see main_test.go
	traj := trajExe(t)
	requireSandbox(t, sandbox.ProviderBwrap)
	st := t.TempDir()
	task, _ := filepath.Abs("../../orchestrator/testdata/tasks/e2e")
	script, _ := filepath.Abs("../../sandbox/scripted/demo/c-compiler.jsonl")
	out, code := trajRun(t, traj, "run", "--task", task, "--model", "scripted/demo", "--script", script, "--max-parts", "16",
		"--store", st, "--trajectory-id", "gt", "--sandbox", "bwrap", "--quiet")
	if code != 0 {
		t.Fatalf("traj run: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(st, "trajectories", "gt", "evaluation.json")); err == nil {
		t.Fatal("the run wrote an evaluation.json: the test needs a trajectory without one")
	}
	exportRows := func(name string) ([]export.TrajectoryRow, []export.TestRow) {
		dir := filepath.Join(t.TempDir(), name)
		if out, code := trajRun(t, traj, "export", "gt", "--store", st, "--format", "parquet", "--out", dir); code != 0 {
			t.Fatalf("export: exit %d\n%s", code, out)
		}
		read := func(table string) string {
			files, _ := filepath.Glob(filepath.Join(dir, table, "*.parquet"))
			if len(files) != 1 {
				t.Fatalf("%s table files %v", table, files)
			}
			return files[0]
		}
		trs, err := parquet.ReadFile[export.TrajectoryRow](read(export.TableTrajectories))
		if err != nil || len(trs) != 1 {
			t.Fatalf("trajectories table: %d rows, %v", len(trs), err)
		}
		tests, err := parquet.ReadFile[export.TestRow](read(export.TableTests))
		if err != nil {
			t.Fatalf("tests table: %v", err)
		}
		return trs, tests
	}
	trs, tests := exportRows("with-cache")
	r := trs[0]
	if r.Evaluated || r.ScoreSource == nil || *r.ScoreSource != "ground_truth" || r.FinalPassRate == nil || r.FinalTotal == nil || *r.FinalTotal == 0 || r.BestPart == nil {
		t.Fatalf("trajectories row without evaluate: evaluated %v, score_source %v, final %v of %v, best part %v; want ground-truth scores",
			r.Evaluated, r.ScoreSource, r.FinalPassRate, r.FinalTotal, r.BestPart)
	}
	passingAtEnd := int64(0)
	for _, row := range tests {
		if row.Source != "ground_truth" || row.Suite == "" {
			t.Errorf("tests row %+v: want source ground_truth and a suite", row)
		}
		if row.PassingAtEnd {
			passingAtEnd++
		}
	}
	if int64(len(tests)) != *r.FinalTotal || passingAtEnd != *r.FinalPassed {
		t.Errorf("tests table: %d cases, %d passing at the end; the final ground truth: %d of %d", len(tests), passingAtEnd, *r.FinalPassed, *r.FinalTotal)
	}

	// The report labels its rates by source.
	rep := filepath.Join(t.TempDir(), "report.json")
	if out, code := trajRun(t, traj, "report", "--store", st, "--json", rep); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, out)
	}
	var doc struct {
		Trajectories []struct {
			ID         string   `json:"trajectory_id"`
			RateSource string   `json:"rate_source"`
			PassRate   *float64 `json:"pass_rate"`
		} `json:"trajectories"`
	}
	b, _ := os.ReadFile(rep)
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Trajectories) != 1 {
		t.Fatalf("report JSON: %v, %s", err, b)
	}
	if tr := doc.Trajectories[0]; tr.RateSource != "ground_truth" || tr.PassRate == nil || *tr.PassRate != *r.FinalPassRate {
		t.Errorf("report: rate %v from %q; Parquet's final %v from ground truth", tr.PassRate, tr.RateSource, *r.FinalPassRate)
	}

	// Without the cached results: scores from the trace, no tests rows.
	if err := os.RemoveAll(filepath.Join(st, strings.TrimSuffix(store.EvalCacheDir, "/"))); err != nil {
		t.Fatal(err)
	}
	trs, tests = exportRows("without-cache")
	if trs[0].ScoreSource == nil || *trs[0].ScoreSource != "ground_truth" || len(tests) != 0 {
		t.Errorf("without the cache: score_source %v, %d tests rows; want ground_truth and none", trs[0].ScoreSource, len(tests))
	}
}
