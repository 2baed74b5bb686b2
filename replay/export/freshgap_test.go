package export_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/export"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/tracetest"
)

// TestParquetFreshGap: the public − fresh gap (replay.FreshGap) on every
// suite row of an evaluated commit or a ground-truth result that has both
// sides, null where one side is missing, and the final result's on the
// trajectories row; from the evaluation report when there is one, else
// from the trace's ground truth (as score_source). Values read back with
// DuckDB.
func TestParquetFreshGap(t *testing.T) {
	st := t.TempDir()
	gt, suite := tracetest.GroundTruth, tracetest.Suite
	// "gt": ground truth only. Part 2 has no fresh suite (no gap); part 3
	// is 18/20 public against 8/32 fresh; part 4 pools fresh's levels.
	gtSpec := tracetest.Spec{TrajectoryID: "gt", Turns: []int{4}, End: trace.EndPartLimit,
		GroundTruth: map[int][]trace.GroundTruth{
			2: {gt(2, suite("basics", 5, 10))},
			3: {gt(3, suite("basics", 9, 10), suite("torture", 9, 10), suite("fresh", 8, 32))},
			4: {gt(4, suite("basics", 10, 10), suite("fresh/level_1", 8, 8), suite("fresh/level_2", 0, 8))},
		}}
	// "ev": an evaluation report (it wins over the same ground truth):
	// part 1 public only, part 2 3/4 public against 1/4 fresh.
	evSpec := gtSpec
	evSpec.TrajectoryID = "ev"
	for _, s := range []tracetest.Spec{gtSpec, evSpec} {
		dir := filepath.Join(st, store.TrajectoriesDir, s.TrajectoryID)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		tracetest.WriteDir(t, dir, s)
	}
	ev := replay.Output{TrajectoryID: "ev", CommitEvaluations: map[string]*replay.CommitEvaluation{},
		PartToCommit: replay.PartMap[string]{}, PartEvaluations: replay.PartMap[*replay.PartEvaluation]{}}
	for part, suites := range map[int]map[string]replay.SuiteResult{
		1: {"basics": {Passed: 2, Failed: 2, Total: 4}},
		2: {"basics": {Passed: 3, Failed: 1, Total: 4}, "fresh": {Passed: 1, Failed: 3, Total: 4}},
	} {
		c := tracetest.Commit(part)
		ce := &replay.CommitEvaluation{Tree: fmt.Sprintf("%040d", part), Parts: []int{part}, Source: replay.SourceEvaluated, Suites: suites}
		pe := &replay.PartEvaluation{Commit: c, Suites: map[string]replay.SuiteSummary{}}
		for name, s := range suites {
			ce.Passed, ce.Failed, ce.Total = ce.Passed+s.Passed, ce.Failed+s.Failed, ce.Total+s.Total
			pe.Suites[name] = replay.SuiteSummary{Passed: s.Passed, Failed: s.Failed, Total: s.Total, PassRate: replay.PassRate(s.Passed, s.Total)}
		}
		ce.PassRate = replay.PassRate(ce.Passed, ce.Total)
		pe.Passed, pe.Failed, pe.Total, pe.PassRate = ce.Passed, ce.Failed, ce.Total, ce.PassRate
		ev.CommitEvaluations[c], ev.PartToCommit[part], ev.PartEvaluations[part] = ce, c, pe
	}
	data, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(st, store.TrajectoriesDir, "ev", store.EvaluationName), data, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "export")
	sum, err := export.Run(context.Background(), []string{st}, export.Options{Format: export.FormatParquet, Out: out, StoreURL: st})
	if err != nil || sum.Exported != 2 {
		t.Fatalf("export: %+v, %v", sum, err)
	}
	table := func(name string) string {
		return "read_parquet(" + sqlPath(filepath.Join(out, name, "*.parquet")) + ")"
	}
	res := duckdb(t,
		`SELECT trajectory_id || ' ' || source || ' ' || part || ' ' || suite AS k, fresh_gap FROM `+table("evaluations")+
			` WHERE source <> 'run_tests'`,
		`SELECT trajectory_id AS k, final_fresh_gap AS fresh_gap, score_source FROM `+table("trajectories"))
	rows := map[string]any{}
	for _, q := range res {
		for _, r := range q {
			rows[r["k"].(string)] = r["fresh_gap"]
		}
	}
	none := math.NaN()
	for k, want := range map[string]float64{
		"gt ground_truth 2 basics":        none,
		"gt ground_truth 3 basics":        0.9 - 0.25,
		"gt ground_truth 3 torture":       0.9 - 0.25,
		"gt ground_truth 3 fresh":         0.9 - 0.25,
		"gt ground_truth 4 basics":        0.5,
		"gt ground_truth 4 fresh/level_1": 0.5,
		"gt ground_truth 4 fresh/level_2": 0.5,
		"ev ground_truth 3 fresh":         0.9 - 0.25,
		"ev evaluate 1 basics":            none,
		"ev evaluate 2 basics":            0.5,
		"ev evaluate 2 fresh":             0.5,
		"gt":                              0.5, // the final ground truth, part 4
		"ev":                              0.5, // the evaluation's last part, 2
	} {
		got, ok := rows[k]
		if !ok {
			t.Errorf("%s: no row", k)
			continue
		}
		if math.IsNaN(want) {
			if got != nil {
				t.Errorf("%s: fresh_gap %v, want null", k, got)
			}
			continue
		}
		if g, _ := num(t, got); got == nil || math.Abs(g-want) > 1e-9 {
			t.Errorf("%s: fresh_gap %v, want %v", k, got, want)
		}
	}
	for _, r := range res[1] {
		if want := map[string]string{"gt": "ground_truth", "ev": "evaluate"}[r["k"].(string)]; r["score_source"] != want {
			t.Errorf("%s: score_source %v, want %s", r["k"], r["score_source"], want)
		}
	}
}
