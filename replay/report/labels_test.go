package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/labels"
	"github.com/trajlab/traj/replay/report"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store/local"
	"github.com/trajlab/traj/trace/tracetest"
)

// basicsGT is ground truth on "basics" (10 cases): passed[i] at part i+1.
func basicsGT(passed ...int64) map[int][]trace.GroundTruth {
	m := map[int][]trace.GroundTruth{}
	for i, p := range passed {
		m[i+1] = []trace.GroundTruth{tracetest.GroundTruth(i+1, tracetest.Suite("basics", p, 10))}
	}
	return m
}

// TestReportLabels: a folder of three trajectories (clean, work lost,
// cut while improving) reports each one's labels with part and evidence,
// counts them by harness and model in text and JSON, takes the labels an
// evaluation report holds over its own, and computes them again with
// other thresholds (report --labels).
func TestReportLabels(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	write := func(id string, s tracetest.Spec) string {
		s.TrajectoryID = id
		folder := filepath.Join(dir, id)
		if err := os.MkdirAll(folder, 0o755); err != nil {
			t.Fatal(err)
		}
		tracetest.WriteDir(t, folder, s)
		return folder
	}
	write("traj-clean", tracetest.Spec{Turns: []int{5}, GroundTruth: basicsGT(2, 4, 6, 8, 10), End: trace.EndSolved})
	write("traj-lost", tracetest.Spec{Turns: []int{30}, GroundTruth: basicsGT(4, 8, 10, 6), End: trace.EndPartLimit})
	improving := write("traj-improving", tracetest.Spec{Turns: []int{6}, GroundTruth: basicsGT(2, 3, 4, 5, 6, 7), End: trace.EndPartLimit})

	trajs, err := report.CollectFolders(ctx, dir, nil)
	if err != nil || len(trajs) != 3 {
		t.Fatalf("collect: %d trajectories, %v", len(trajs), err)
	}
	want := map[string]string{"traj-clean": "", "traj-lost": labels.PassingThenLost + "@4", "traj-improving": labels.BudgetExhaustedImproving + "@6"}
	check := func(trajs []report.Trajectory, want map[string]string) {
		t.Helper()
		for _, tj := range trajs {
			var got []string
			for _, l := range tj.Labels {
				if l.Evidence == "" {
					t.Fatalf("%s: label without evidence %+v", tj.ID, l)
				}
				got = append(got, l.Label+"@"+itoa(l.Part))
			}
			if strings.Join(got, ",") != want[tj.ID] {
				t.Fatalf("%s labelled %v, want %q", tj.ID, got, want[tj.ID])
			}
		}
	}
	check(trajs, want)

	r := report.Report{Title: "labels", Trajectories: trajs}
	var js bytes.Buffer
	if err := report.WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		LabelCounts []report.LabelCount `json:"label_counts"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.LabelCounts) != 2 || doc.LabelCounts[0] != (report.LabelCount{Harness: "opencode", Model: "scripted/test-model", Label: labels.PassingThenLost, Trajectories: 1, Of: 3}) ||
		doc.LabelCounts[1].Label != labels.BudgetExhaustedImproving {
		t.Fatalf("label counts %+v", doc.LabelCounts)
	}
	var txt bytes.Buffer
	if err := report.WriteText(&txt, r); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"best 10/10 at part 3, final 6/10 at part 4", "budget_exhausted_improving  1 of 3"} {
		if !strings.Contains(txt.String(), s) {
			t.Fatalf("text report lacks %q:\n%s", s, txt.String())
		}
	}

	var page bytes.Buffer
	if err := report.WriteHTML(&page, r); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"<h2>Failure labels</h2>", "<td>passing_then_lost</td><td class=\"num\">1 of 3</td>", "best 10/10 at part 3, final 6/10 at part 4"} {
		if !strings.Contains(page.String(), s) {
			t.Fatalf("HTML report lacks %q", s)
		}
	}

	// Thresholds given to the report decide again, from the traces.
	o, err := labels.ParseSettings(map[string]string{"lost_margin": "0.5", "improving_parts": "1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := report.Relabel(ctx, nil, trajs, o, nil); err != nil {
		t.Fatal(err)
	}
	check(trajs, map[string]string{"traj-improving": labels.BudgetExhaustedImproving + "@6"})
	if _, err := labels.ParseSettings(map[string]string{"plateau_part": "3"}); err == nil {
		t.Fatal("an unknown threshold name is accepted")
	}

	// An evaluation report's labels are the trajectory's.
	set, _ := labels.Marshal([]labels.Label{{Label: labels.Stall, Part: 2, Evidence: "no part for 20m0s after part 1"}}, labels.Options{})
	ev := replay.Output{TrajectoryID: "traj-improving", PartEvaluations: replay.PartMap[*replay.PartEvaluation]{}, Labels: set}
	data, _ := replay.MarshalIndent(&ev)
	if err := os.WriteFile(filepath.Join(improving, "evaluation.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	trajs, err = report.CollectFolders(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	check(trajs, map[string]string{"traj-lost": labels.PassingThenLost + "@4", "traj-improving": labels.Stall + "@2"})
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestExperimentLabelCounts: an experiment's report counts the labels of
// each slot's latest attempt by harness and model, never a replaced one.
func TestExperimentLabelCounts(t *testing.T) {
	dir := t.TempDir()
	st, err := local.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for id, s := range map[string]tracetest.Spec{
		"x-lost":      {Turns: []int{30}, GroundTruth: basicsGT(4, 8, 10, 6), End: trace.EndPartLimit},
		"x-lost-a2":   {Turns: []int{5}, GroundTruth: basicsGT(2, 4, 6, 8, 10), End: trace.EndSolved},
		"x-improving": {Turns: []int{6}, GroundTruth: basicsGT(2, 3, 4, 5, 6, 7), End: trace.EndPartLimit},
	} {
		s.TrajectoryID = id
		folder := filepath.Join(dir, "trajectories", id)
		if err := os.MkdirAll(folder, 0o755); err != nil {
			t.Fatal(err)
		}
		tracetest.WriteDir(t, folder, s)
	}
	slots := []report.ExperimentSlot{
		{Harness: "opencode", Model: "scripted/test-model", Task: "c-compiler", Repeat: 1, Attempts: []string{"x-lost", "x-lost-a2"}},
		{Harness: "opencode", Model: "scripted/test-model", Task: "c-compiler", Repeat: 2, Attempts: []string{"x-improving"}},
	}
	var e *report.Experiment
	e, err = report.CollectExperiment(ctx, st, "x", slots, report.ExperimentOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.LabelCounts) != 1 || e.LabelCounts[0].Label != labels.BudgetExhaustedImproving || e.LabelCounts[0].Of != 2 {
		t.Fatalf("experiment label counts %+v", e.LabelCounts)
	}
}
