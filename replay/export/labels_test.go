package export_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/export"
	"github.com/trajlab/traj/replay/labels"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/tracetest"
)

// TestLabelsTableQueriedByDuckDB exports four trajectories (clean, work
// lost, one that says it gives up (its text as the export's reader read it), one whose evaluation report holds its labels) and reads the
// labels table back with DuckDB: each label with its part and evidence,
// none for the clean one, the evaluation's labels as they were written.
func TestLabelsTableQueriedByDuckDB(t *testing.T) {
	dir := t.TempDir()
	gt := func(passed ...int64) map[int][]trace.GroundTruth {
		m := map[int][]trace.GroundTruth{}
		for i, p := range passed {
			m[i+1] = []trace.GroundTruth{tracetest.GroundTruth(i+1, tracetest.Suite("basics", p, 10))}
		}
		return m
	}
	write := func(id string, s tracetest.Spec) string {
		folder := filepath.Join(dir, id)
		if err := os.MkdirAll(folder, 0o755); err != nil {
			t.Fatal(err)
		}
		s.TrajectoryID = id
		tracetest.WriteDir(t, folder, s)
		return folder
	}
	write("traj-clean", tracetest.Spec{Turns: []int{5}, GroundTruth: gt(2, 4, 6, 8, 10), End: trace.EndSolved})
	write("traj-lost", tracetest.Spec{Turns: []int{30}, GroundTruth: gt(4, 8, 10, 6), End: trace.EndPartLimit})
	write("traj-gaveup", tracetest.Spec{Turns: []int{4}, GroundTruth: gt(2, 4, 6, 10), End: trace.EndSolved, Edit: func(p *trace.Part) {
		if p.Part == 2 {
			p.Content, _ = json.Marshal(map[string]any{"id": p.PartID, "type": "text", "messageID": p.MessageID, "sessionID": "ses_root", "text": "This is infeasible in the time left."})
		}
	}})
	evaluated := write("traj-evaluated", tracetest.Spec{Turns: []int{5}, GroundTruth: gt(2, 4, 6, 8, 10), End: trace.EndSolved})
	set, _ := labels.Marshal([]labels.Label{{Label: labels.Suspect, Part: 3, Evidence: "2 cases did what a program ignoring its input does (fixed_like)"}}, labels.Options{})
	data, _ := replay.MarshalIndent(&replay.Output{TrajectoryID: "traj-evaluated", PartEvaluations: replay.PartMap[*replay.PartEvaluation]{}, Labels: set})
	if err := os.WriteFile(filepath.Join(evaluated, "evaluation.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}

	out := t.TempDir()
	if _, err := export.Run(t.Context(), []string{dir}, export.Options{Format: export.FormatParquet, Out: out, StoreURL: t.TempDir(), Version: "test"}); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(out, "labels", "*.parquet"))
	if len(files) != 4 {
		t.Fatalf("labels files %v: one per trajectory, empty ones too", files)
	}
	res := duckdb(t, `SELECT trajectory_id, label, part, evidence, source FROM read_parquet(`+sqlPath(filepath.Join(out, "labels", "*.parquet"))+`) ORDER BY ALL`)
	rows := res[0]
	if len(rows) != 3 {
		t.Fatalf("labels rows %v", rows)
	}
	want := []map[string]any{
		{"trajectory_id": "traj-evaluated", "label": labels.Suspect, "part": 3.0, "evidence": "2 cases did what a program ignoring its input does (fixed_like)", "source": "evaluate"},
		{"trajectory_id": "traj-gaveup", "label": labels.DeclaredInfeasible, "part": 2.0, "evidence": `text part says "infeasible"`, "source": "computed"},
		{"trajectory_id": "traj-lost", "label": labels.PassingThenLost, "part": 4.0, "evidence": "best 10/10 at part 3, final 6/10 at part 4", "source": "computed"},
	}
	for i, w := range want {
		for k, v := range w {
			got := rows[i][k]
			if f, ok := v.(float64); ok {
				if n, _ := num(t, got); n != f {
					t.Fatalf("row %d %s = %v, want %v", i, k, got, v)
				}
				continue
			}
			if got != v {
				t.Fatalf("row %d %s = %v, want %v", i, k, got, v)
			}
		}
	}
}
