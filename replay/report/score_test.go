package report_test

import (
	"slices"
	"testing"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/report"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/tracetest"
)

// TestScoreSource attacks "the score says where it comes from and the
// agent's claims never stand in for a measurement".
func TestScoreSource(t *testing.T) {
	gt, suite, rt := tracetest.GroundTruth, tracetest.Suite, tracetest.RunTests
	// The agent claims 10/10 on basics and then widens its path to a
	// suite it fails: its overall rate falls, but nothing regressed.
	calls := map[int][]trace.EnvoiCall{2: {rt("basics", 10, 0)}, 3: {rt("basics", 10, 0), rt("wacct", 0, 50)}}
	ev := &replay.Output{PartEvaluations: replay.PartMap[*replay.PartEvaluation]{
		4: {Passed: 3, Total: 4, PassRate: 0.75, Suites: map[string]replay.SuiteSummary{"basics": {Passed: 3, Total: 4, PassRate: 0.75}}},
	}}
	tests := []struct {
		name       string
		spec       tracetest.Spec
		ev         *replay.Output
		source     string
		rate, best float64
		bestPart   int
		solvedAt   int
		byPart     []report.Point
		agentParts int
	}{
		{
			name:   "run_tests only: the agent's claim, no drop for a widened path",
			spec:   tracetest.Spec{Turns: []int{4}, End: trace.EndPartLimit, EnvoiCalls: calls},
			source: report.FromRunTests, rate: 10.0 / 60, best: 1, bestPart: 2, solvedAt: 2,
			byPart: []report.Point{{Part: 2, Rate: 1}, {Part: 3, Rate: 10.0 / 60}}, agentParts: 2,
		},
		{
			// Results land newest first; session_end holds the final
			// tree's 195/196, which the agent's 10/10 must not replace.
			name: "ground truth wins over run_tests, in part order, session_end's included",
			spec: tracetest.Spec{Turns: []int{4}, End: trace.EndPartLimit, EnvoiCalls: calls,
				GroundTruth: map[int][]trace.GroundTruth{
					3: {gt(2, suite("basics", 9, 10), suite("wacct", 100, 186))},
					4: {gt(3, suite("basics", 10, 10), suite("wacct", 180, 186)), {Part: 3, Error: "build timed out"}},
				},
				EndGroundTruth: []trace.GroundTruth{gt(4, suite("basics", 10, 10), suite("wacct", 185, 186))}},
			source: report.FromGroundTruth, rate: 195.0 / 196, best: 195.0 / 196, bestPart: 4,
			byPart:     []report.Point{{Part: 2, Rate: 109.0 / 196}, {Part: 3, Rate: 190.0 / 196}, {Part: 4, Rate: 195.0 / 196}},
			agentParts: 2,
		},
		{
			name: "ground truth solved at its first all-pass part",
			spec: tracetest.Spec{Turns: []int{4}, End: trace.EndSolved,
				GroundTruth: map[int][]trace.GroundTruth{2: {gt(1, suite("basics", 2, 4))}, 4: {gt(3, suite("basics", 4, 4))}}},
			source: report.FromGroundTruth, rate: 1, best: 1, bestPart: 3, solvedAt: 3,
			byPart: []report.Point{{Part: 1, Rate: 0.5}, {Part: 3, Rate: 1}},
		},
		{
			// A sampled run: the curve is the sampled results (weighted by
			// the suites' sizes from the full results), the full result of
			// part 3 does not replace its sampled point, and only the full
			// result of part 4 solves; part 3's 10/10 sample does not.
			name: "sampled ground truth: one kind of result per curve, solved only in full",
			spec: tracetest.Spec{Turns: []int{4}, End: trace.EndSolved,
				GroundTruth: map[int][]trace.GroundTruth{
					2: {sampledGT(2, suite("basics", 5, 10), suite("wacct", 10, 10))},
					3: {sampledGT(3, suite("basics", 10, 10), suite("wacct", 10, 10)), gt(3, suite("basics", 60, 68), suite("wacct", 78, 78))},
				},
				EndGroundTruth: []trace.GroundTruth{sampledGT(4, suite("basics", 10, 10), suite("wacct", 10, 10)), gt(4, suite("basics", 68, 68), suite("wacct", 78, 78))}},
			source: report.FromGroundTruth, rate: 1, best: 1, bestPart: 3, solvedAt: 4,
			byPart: []report.Point{{Part: 2, Rate: (68*0.5 + 78) / 146.0}, {Part: 3, Rate: 1}, {Part: 4, Rate: 1}},
		},
		{
			name: "a stored evaluation wins over ground truth",
			spec: tracetest.Spec{Turns: []int{4}, End: trace.EndPartLimit, EnvoiCalls: calls,
				GroundTruth: map[int][]trace.GroundTruth{4: {gt(3, suite("basics", 4, 4))}}},
			ev:     ev,
			source: report.FromEvaluation, rate: 0.75, best: 0.75, bestPart: 4,
			byPart: []report.Point{{Part: 4, Rate: 0.75}}, agentParts: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := report.Summarize(tracetest.Build(tt.spec), tt.ev)
			if s.RateSource != tt.source || s.PassRate == nil || *s.PassRate != tt.rate {
				t.Fatalf("source %q rate %v, want %q %v", s.RateSource, deref(s.PassRate), tt.source, tt.rate)
			}
			if s.BestRate == nil || *s.BestRate != tt.best || s.BestPart != tt.bestPart || s.SolvedAt != tt.solvedAt {
				t.Errorf("best %v at %d, solved at %d; want %v at %d, solved at %d", deref(s.BestRate), s.BestPart, s.SolvedAt, tt.best, tt.bestPart, tt.solvedAt)
			}
			if !slices.Equal(s.ByPart, tt.byPart) {
				t.Errorf("by part %v, want %v", s.ByPart, tt.byPart)
			}
			if len(s.AgentByPart) != tt.agentParts {
				t.Errorf("agent series %v, want %d points", s.AgentByPart, tt.agentParts)
			}
		})
	}
}

func TestSeriesDropsAndAt(t *testing.T) {
	rt := func(part int, suite string, passed, total int) report.SuiteRate {
		return report.SuiteRate{Suite: suite, Passed: passed, Total: total, Rate: replay.PassRate(passed, total), Part: part}
	}
	s := report.RunTestsSeries([]report.SuiteRate{rt(2, "basics", 5, 10), rt(3, "basics", 10, 10), rt(3, "wacct", 0, 50), rt(7, "basics", 8, 10)})
	if len(s.Drops) != 1 || !slices.Equal(s.Drops[7], []string{"basics"}) {
		t.Errorf("drops %v: only basics at part 7 passed fewer than before", s.Drops)
	}
	if !slices.Equal(s.Gains[2], []string{"basics"}) || !slices.Equal(s.Gains[3], []string{"basics"}) || len(s.Gains) != 2 {
		t.Errorf("gains %v", s.Gains)
	}
	for _, tt := range []struct {
		part int
		want float64
		ok   bool
	}{{1, 0, false}, {2, 0.5, true}, {5, 10.0 / 60, true}, {7, 8.0 / 60, true}, {99, 8.0 / 60, true}} {
		if p, ok := s.At(tt.part); ok != tt.ok || p.Rate != tt.want {
			t.Errorf("At(%d) = %v %v, want %v %v", tt.part, p, ok, tt.want, tt.ok)
		}
	}
}

// sampledGT is a sampled ground truth: every suite's counts are of its
// sample; never solved.
func sampledGT(part int, suites ...trace.SuiteCount) trace.GroundTruth {
	for i := range suites {
		suites[i].SampleSize = suites[i].Total
	}
	g := tracetest.GroundTruth(part, suites...)
	g.Sampled, g.SampleSeed, g.Solved = true, 1, false
	return g
}

func deref(f *float64) any {
	if f == nil {
		return nil
	}
	return *f
}

// A part whose ground truth counted fixed-like cases makes the
// trajectory suspect from that part; the latest count is kept.
func TestSuspectFromFixedLike(t *testing.T) {
	gt := []trace.GroundTruth{
		{Part: 2, Passed: 1, Total: 4, Suites: []trace.SuiteCount{{Path: "torture", Passed: 1, Total: 4}}},
		{Part: 5, Passed: 1, Total: 4, FixedLike: 3, Suites: []trace.SuiteCount{{Path: "torture", Passed: 1, Total: 4, FixedLike: 3}}},
		{Part: 9, Passed: 2, Total: 4, FixedLike: 2, Suites: []trace.SuiteCount{{Path: "torture", Passed: 2, Total: 4, FixedLike: 2}}},
	}
	if first, latest := report.GroundTruthSeries(gt).Suspect(); first != 5 || latest != 2 {
		t.Errorf("suspect part %d, fixed-like %d; want 5 and 2", first, latest)
	}
	if first, latest := report.GroundTruthSeries(gt[:1]).Suspect(); first != 0 || latest != 0 {
		t.Errorf("a clean run is suspect: part %d, %d", first, latest)
	}
}
