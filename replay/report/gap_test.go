package report_test

import (
	"math"
	"strings"
	"testing"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/report"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/tracetest"
)

// TestFreshGap: the public − fresh gap per checkpoint, from ground truth
// and from an evaluation: public cases pooled, fresh's paths together,
// "all" neither; no point where a side is missing.
func TestFreshGap(t *testing.T) {
	gt, suite := tracetest.GroundTruth, tracetest.Suite
	// A compiler that fits the tests: public climbs to 90 %, fresh stays
	// at the level-1 share.
	spec := tracetest.Spec{Turns: []int{4}, End: trace.EndPartLimit,
		GroundTruth: map[int][]trace.GroundTruth{
			2: {gt(1, suite("basics", 5, 10))},
			3: {gt(2, suite("basics", 8, 10), suite("torture", 10, 10), suite("fresh", 8, 32))},
			4: {gt(3, suite("basics", 9, 10), suite("torture", 9, 10), suite("fresh", 8, 32))},
		}}
	ev := &replay.Output{PartEvaluations: replay.PartMap[*replay.PartEvaluation]{
		2: {Suites: map[string]replay.SuiteSummary{"all": {Passed: 9, Total: 10}, "fresh": {Passed: 1, Total: 32}}},
		4: {Suites: map[string]replay.SuiteSummary{"basics": {Passed: 3, Total: 4}, "fresh/level_1": {Passed: 8, Total: 8}, "fresh/level_2": {Passed: 0, Total: 8}}},
	}}
	for _, tc := range []struct {
		name string
		ev   *replay.Output
		want []report.Point
	}{
		{"ground truth", nil, []report.Point{{Part: 2, Rate: 18.0/20 - 0.25}, {Part: 3, Rate: 18.0/20 - 0.25}}},
		{"evaluation", ev, []report.Point{{Part: 4, Rate: 0.75 - 0.5}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			row := report.Summarize(tracetest.Build(spec), tc.ev)
			if len(row.FreshGap) != len(tc.want) {
				t.Fatalf("gap %v, want %v", row.FreshGap, tc.want)
			}
			for i, p := range row.FreshGap {
				if p.Part != tc.want[i].Part || math.Abs(p.Rate-tc.want[i].Rate) > 1e-9 {
					t.Errorf("gap %v, want %v", row.FreshGap, tc.want)
				}
			}
		})
	}
	var html strings.Builder
	rows := []report.Trajectory{report.Summarize(tracetest.Build(spec), nil)}
	if err := report.WriteHTML(&html, report.Report{Title: "gap", Trajectories: rows}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html.String(), "public − fresh: 65.0 pts at part 3") {
		t.Errorf("the page does not show the gap:\n%s", html.String())
	}
}
