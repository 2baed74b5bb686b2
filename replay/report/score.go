package report

import (
	"slices"
	"sort"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/trace"
)

// Score sources, best first: a trajectory's score comes from the first
// one it has (Choose). The agent's own run_tests calls are its claim, not
// a measurement: they are the score only when nothing else is known, and
// are always kept apart as the agent's series.
const (
	FromEvaluation  = "evaluation"   // a stored replay evaluate report
	FromGroundTruth = "ground_truth" // traj's evaluations during the run (the trace's ground_truth)
	FromRunTests    = "run_tests"    // the run_tests calls the agent made
)

// Series is a trajectory's score over its parts from one source. It is the
// one answer to "what was the score at part p, and says who": the report,
// the experiment report and the viewer all read it.
type Series struct {
	Source string `json:"source"`
	// Points is the overall pass rate at each part with a result,
	// ascending by part.
	Points []Point `json:"points"`
	// Suites is the pass rate by part per suite (test path).
	Suites map[string][]Point `json:"suites,omitempty"`
	// Latest is the newest counts per suite.
	Latest []SuiteRate `json:"latest"`
	// FreshGap is the public − fresh gap (replay.FreshGap) at each part whose
	// result has both, ascending by part (measured sources only).
	FreshGap []Point `json:"fresh_gap,omitempty"`
	// SolvedAt is the first part whose result passed every case (0: none).
	SolvedAt int `json:"solved_at,omitempty"`
	// Drops are the parts where a suite passed fewer cases than at its
	// previous result (part → suites); Gains the parts where a suite passed
	// more cases than ever before (part → suites).
	Drops map[int][]string `json:"-"`
	Gains map[int][]string `json:"-"`
	// FixedLike is, at each part whose result had any, the cases whose
	// program did what a program ignoring its input does (exit 0 where the
	// case's nonce wanted another code): a suspect part.
	FixedLike map[int]int `json:"-"`
}

// Suspect is the first part whose result had fixed-like cases, and the
// count at the latest result (0, 0: none).
func (s Series) Suspect() (first, latest int) {
	for _, p := range s.Points {
		if n := s.FixedLike[p.Part]; n > 0 && first == 0 {
			first = p.Part
		}
	}
	if n := len(s.Points); n > 0 {
		latest = s.FixedLike[s.Points[n-1].Part]
	}
	return first, latest
}

// Empty reports whether s has no result.
func (s Series) Empty() bool { return len(s.Points) == 0 }

// Rate is the latest overall pass rate.
func (s Series) Rate() (float64, bool) {
	if len(s.Points) == 0 {
		return 0, false
	}
	return s.Points[len(s.Points)-1].Rate, true
}

// Best is the highest pass rate and the first part that reached it.
func (s Series) Best() (rate float64, part int, ok bool) {
	for i, p := range s.Points {
		if i == 0 || p.Rate > rate {
			rate, part = p.Rate, p.Part
		}
	}
	return rate, part, len(s.Points) > 0
}

// At is the score standing at part: the newest result at or before it.
func (s Series) At(part int) (Point, bool) {
	i := sort.Search(len(s.Points), func(i int) bool { return s.Points[i].Part > part })
	if i == 0 {
		return Point{}, false
	}
	return s.Points[i-1], true
}

// Choose returns the first series with a result (sources best first), or
// an empty one.
func Choose(series ...Series) Series {
	for _, s := range series {
		if !s.Empty() {
			return s
		}
	}
	return Series{Points: []Point{}, Latest: []SuiteRate{}}
}

// EvaluationSeries is the score of a stored evaluate report.
func EvaluationSeries(ev *replay.Output) Series {
	s := Series{Source: FromEvaluation, Points: []Point{}, Suites: map[string][]Point{}, Latest: []SuiteRate{},
		Drops: map[int][]string{}, Gains: map[int][]string{}, FixedLike: map[int]int{}}
	if ev == nil {
		return s
	}
	parts := ev.PartEvaluations.Keys()
	for _, part := range parts {
		pe := ev.PartEvaluations[part]
		s.Points = append(s.Points, Point{Part: part, Rate: pe.PassRate})
		if pe.FixedLike > 0 {
			s.FixedLike[part] = pe.FixedLike
		}
		if s.SolvedAt == 0 && pe.Total > 0 && pe.Passed == pe.Total {
			s.SolvedAt = part
		}
		counts := map[string][2]int64{}
		for name, su := range pe.Suites {
			s.Suites[name] = append(s.Suites[name], Point{Part: part, Rate: su.PassRate})
			counts[name] = [2]int64{int64(su.Passed), int64(su.Total)}
		}
		if gap, ok := replay.FreshGap(counts); ok {
			s.FreshGap = append(s.FreshGap, Point{Part: part, Rate: gap})
		}
	}
	if n := len(parts); n > 0 {
		last := parts[n-1]
		for name, su := range ev.PartEvaluations[last].Suites {
			s.Latest = append(s.Latest, SuiteRate{Suite: name, Passed: su.Passed, Total: su.Total, Rate: su.PassRate, Part: last})
		}
		sortSuites(s.Latest)
	}
	for id, a := range ev.TestAttribution {
		if a.FirstPassPart != nil {
			s.Gains[*a.FirstPassPart] = append(s.Gains[*a.FirstPassPart], id)
		}
	}
	for _, r := range replay.Regressions(ev.TestAttribution) {
		s.Drops[r.BrokenAt] = append(s.Drops[r.BrokenAt], r.Test)
	}
	return s
}

// GroundTruthSeries is the score of the trace's ground-truth results (in
// the order they landed; a later result for the same part wins). Results
// with an error carry no counts and are left out. When the run sampled
// (task setting ground_truth.sample), the curve is the sampled results
// only, every tree on the same cases: a sample's counts and a full
// result's are not comparable. A sampled point's rate is each path's
// sample pass rate weighted by the path's case count, known from the full
// results (the final tree's at least); without one, by the sample's.
// "Solved" comes from full results only (a sampled result never is).
func GroundTruthSeries(results []trace.GroundTruth) Series {
	sampled := slices.ContainsFunc(results, func(g trace.GroundTruth) bool { return g.Sampled && g.Error == "" })
	cases := map[string]int64{} // each path's case count, from full results
	byPart := map[int]trace.GroundTruth{}
	solvedAt := 0
	for _, g := range results {
		if g.Error != "" || g.Total <= 0 {
			continue
		}
		if g.Solved && (solvedAt == 0 || g.Part < solvedAt) {
			solvedAt = g.Part
		}
		if !g.Sampled {
			for _, su := range g.Suites {
				cases[su.Path] = su.Total
			}
		}
		if g.Sampled == sampled {
			byPart[g.Part] = g
		}
	}
	parts := make([]int, 0, len(byPart))
	for p := range byPart {
		parts = append(parts, p)
	}
	sort.Ints(parts)
	s := Series{Source: FromGroundTruth, Points: make([]Point, 0, len(parts)), Suites: map[string][]Point{}, Latest: []SuiteRate{},
		Drops: map[int][]string{}, Gains: map[int][]string{}, FixedLike: map[int]int{}}
	prev, best := map[string]int64{}, map[string]int64{}
	for _, part := range parts {
		g := byPart[part]
		s.Points = append(s.Points, Point{Part: part, Rate: groundTruthRate(g, cases)})
		if g.FixedLike > 0 {
			s.FixedLike[part] = int(g.FixedLike)
		}
		counts := map[string][2]int64{}
		for _, su := range g.Suites {
			counts[su.Path] = [2]int64{su.Passed, su.Total}
		}
		if gap, ok := replay.FreshGap(counts); ok {
			s.FreshGap = append(s.FreshGap, Point{Part: part, Rate: gap})
		}
		for _, su := range g.Suites {
			s.Suites[su.Path] = append(s.Suites[su.Path], Point{Part: part, Rate: replay.PassRate(int(su.Passed), int(su.Total))})
			if p, ok := prev[su.Path]; ok && su.Passed < p {
				s.Drops[part] = append(s.Drops[part], su.Path)
			}
			if b, ok := best[su.Path]; su.Passed > 0 && (!ok || su.Passed > b) {
				s.Gains[part] = append(s.Gains[part], su.Path)
			}
			prev[su.Path] = su.Passed
			best[su.Path] = max(best[su.Path], su.Passed)
		}
	}
	s.SolvedAt = solvedAt
	if n := len(parts); n > 0 {
		last := byPart[parts[n-1]]
		for _, su := range last.Suites {
			s.Latest = append(s.Latest, SuiteRate{Suite: su.Path, Passed: int(su.Passed), Total: int(su.Total),
				Rate: replay.PassRate(int(su.Passed), int(su.Total)), Part: parts[n-1]})
		}
		sortSuites(s.Latest)
	}
	return s
}

// groundTruthRate is g's pass rate; for a sampled result, each path's
// sample rate weighted by its case count in cases (when every path's is
// known).
func groundTruthRate(g trace.GroundTruth, cases map[string]int64) float64 {
	if !g.Sampled {
		return replay.PassRate(int(g.Passed), int(g.Total))
	}
	var est float64
	var all int64
	for _, su := range g.Suites {
		n, ok := cases[su.Path]
		if !ok || su.Total <= 0 {
			return replay.PassRate(int(g.Passed), int(g.Total))
		}
		est += float64(n) * float64(su.Passed) / float64(su.Total)
		all += n
	}
	if all == 0 {
		return 0
	}
	return est / float64(all)
}

// RunTestsSeries is the score the agent's run_tests calls claim: calls
// holds them in part order (Part set); after each part with calls, the
// overall rate over the latest result of every path seen so far. A path the
// agent runs for the first time is not a drop; only the same path passing
// fewer cases than at its previous call is.
func RunTestsSeries(calls []SuiteRate) Series {
	s := Series{Source: FromRunTests, Points: []Point{}, Suites: map[string][]Point{}, Latest: []SuiteRate{},
		Drops: map[int][]string{}, Gains: map[int][]string{}}
	var rates TraceRates
	prev, best := map[string]int{}, map[string]int{}
	for i, c := range calls {
		rates.Add(c)
		s.Suites[c.Suite] = append(s.Suites[c.Suite], Point{Part: c.Part, Rate: c.Rate})
		if p, ok := prev[c.Suite]; ok && c.Passed < p {
			s.Drops[c.Part] = appendOnce(s.Drops[c.Part], c.Suite)
		}
		if b, ok := best[c.Suite]; c.Passed > 0 && (!ok || c.Passed > b) {
			s.Gains[c.Part] = appendOnce(s.Gains[c.Part], c.Suite)
		}
		prev[c.Suite] = c.Passed
		best[c.Suite] = max(best[c.Suite], c.Passed)
		if i+1 < len(calls) && calls[i+1].Part == c.Part {
			continue // one point per part, after all its calls
		}
		r, _ := rates.Rate()
		s.Points = append(s.Points, Point{Part: c.Part, Rate: r})
		if s.SolvedAt == 0 && r >= 1 {
			s.SolvedAt = c.Part
		}
	}
	s.Latest = rates.Suites()
	return s
}

func appendOnce(list []string, v string) []string {
	for _, x := range list {
		if x == v {
			return list
		}
	}
	return append(list, v)
}

// Scores is what a trajectory's reader needs to know about its score: the
// score (best source available) and, apart, what the agent's own run_tests
// calls claimed.
type Scores struct {
	Score Series
	Agent Series
}

// TraceScores scores a trace without an evaluation: ground truth when the
// trace has it, else the agent's run_tests calls.
func TraceScores(tr *trace.Trace) Scores {
	var ground []trace.GroundTruth
	var calls []SuiteRate
	for _, turn := range tr.Turns {
		for _, p := range turn.Parts {
			ground = append(ground, p.GroundTruth...)
			for _, c := range p.EnvoiCalls {
				if s, ok := ParseCall(c); ok {
					s.Part = p.Part
					calls = append(calls, s)
				}
			}
		}
	}
	if se := tr.SessionEnd; se != nil {
		ground = append(ground, se.GroundTruth...)
	}
	agent := RunTestsSeries(calls)
	return Scores{Score: Choose(GroundTruthSeries(ground), agent), Agent: agent}
}
