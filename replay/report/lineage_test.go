package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/trajlab/traj/trace"
)

// TestLineage: a fork's row says where it came from, its chart draws its
// source's curve (dashed) behind its own curve from the fork point on,
// and marks the fork point; a rerun's row says what it reran.
func TestLineage(t *testing.T) {
	src := Summarize(&trace.Trace{TrajectoryID: "src", Agent: "opencode@1", AgentModel: "scripted/demo"}, nil)
	src.ByPart = []Point{{Part: 2, Rate: 0.2}, {Part: 5, Rate: 0.5}, {Part: 9, Rate: 0.9}}
	src.Parts = 10
	fork := Summarize(&trace.Trace{TrajectoryID: "fork", Agent: "opencode@1", AgentModel: "scripted/demo",
		ForkedFrom: &trace.Lineage{TrajectoryID: "src", Part: 6}}, nil)
	fork.ByPart = []Point{{Part: 2, Rate: 0.2}, {Part: 5, Rate: 0.5}, {Part: 8, Rate: 0.7}}
	fork.Parts = 12
	re := Summarize(&trace.Trace{TrajectoryID: "re", Agent: "opencode@1", RerunOf: &trace.Lineage{TrajectoryID: "src"}}, nil)
	if fork.ForkedFrom != "src" || fork.ForkPart != 6 || re.RerunOf != "src" {
		t.Fatalf("lineage not read: fork %q@%d, rerun %q", fork.ForkedFrom, fork.ForkPart, re.RerunOf)
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, Report{Title: "t", Trajectories: []Trajectory{src, fork, re}}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{"forked from src at part 6", "rerun of src", `stroke-dasharray="5 3"><title>source src</title>`,
		"fork at part 6</title>", ">fork at 6<"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	var csvOut bytes.Buffer
	if err := WriteCSV(&csvOut, Report{Trajectories: []Trajectory{fork}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(csvOut.String(), ",,src,6") {
		t.Errorf("CSV row without rerun_of, forked_from, fork_part: %s", csvOut.String())
	}
}

// TestFromPart: the fork's own curve starts at the fork point with the
// rate in effect there.
func TestFromPart(t *testing.T) {
	pts := []Point{{Part: 2, Rate: 0.2}, {Part: 5, Rate: 0.5}, {Part: 8, Rate: 0.7}}
	for _, tc := range []struct {
		at   int
		want []Point
	}{
		{6, []Point{{Part: 6, Rate: 0.5}, {Part: 8, Rate: 0.7}}},
		{1, []Point{{Part: 2, Rate: 0.2}, {Part: 5, Rate: 0.5}, {Part: 8, Rate: 0.7}}},
		{9, []Point{{Part: 9, Rate: 0.7}}},
	} {
		got := fromPart(pts, tc.at)
		if len(got) != len(tc.want) {
			t.Fatalf("at %d: %v, want %v", tc.at, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("at %d: %v, want %v", tc.at, got, tc.want)
			}
		}
	}
}
