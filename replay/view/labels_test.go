package view

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/labels"
	"github.com/trajlab/traj/trace/store"
)

// TestCurveLabelMarks: the failure labels an evaluation report holds are
// marks on the curve at their part, the label and its evidence their
// line; a label of the whole trajectory (part 0) is no mark.
func TestCurveLabelMarks(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	if err := os.CopyFS(dir, os.DirFS(sharedSample(t))); err != nil {
		t.Fatal(err)
	}
	evPath := filepath.Join(dir, store.TrajectoriesDir, "alpha", store.EvaluationName)
	data, err := os.ReadFile(evPath)
	if err != nil {
		t.Fatal(err)
	}
	var ev replay.Output
	if err := json.Unmarshal(data, &ev); err != nil {
		t.Fatal(err)
	}
	ev.Labels, _ = labels.Marshal([]labels.Label{
		{Label: labels.RegressionLoop, Part: 5, Evidence: "basics broken and fixed 2 times (parts 2→3, 4→5)"},
		{Label: labels.Suspect, Evidence: "whole trajectory"},
	}, labels.Options{})
	if data, err = replay.MarshalIndent(&ev); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(evPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, c := testServer(t, Options{StoreURL: dir})
	var curve Curve
	c.mustGet("/api/t/alpha/curve", &curve)
	var got []Mark
	for _, m := range curve.Marks {
		if m.Kind == "label" {
			got = append(got, m)
		}
	}
	if len(got) != 1 || got[0].Part != 5 || len(got[0].Tests) != 1 || got[0].Tests[0] != "regression_loop: basics broken and fixed 2 times (parts 2→3, 4→5)" {
		t.Fatalf("label marks %+v", got)
	}
}
