package view

import (
	"math"
	"slices"
	"sort"
	"strconv"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/labels"
	"github.com/trajlab/traj/replay/report"
)

// Score sources, as the report names them.
const (
	fromEvaluation  = report.FromEvaluation
	fromGroundTruth = report.FromGroundTruth
	fromRunTests    = report.FromRunTests
)

// evalData is a stored evaluate report reduced to what the pages show.
type evalData struct {
	series report.Series
	tests  []testRow
	// fixed: part → tests that passed again there.
	fixed map[int][]string
	// labels are the failure labels the report holds (replay/labels).
	labels []labels.Label
}

// testRow is one test's attribution.
type testRow struct {
	Test         string `json:"test"`
	FirstPass    *int   `json:"first_pass"`
	BrokenAt     []int  `json:"broken_at"`
	FixedAt      []int  `json:"fixed_at"`
	PassingAtEnd bool   `json:"passing_at_end"`
}

func newEvalData(out *replay.Output) *evalData {
	e := &evalData{series: report.EvaluationSeries(out), fixed: map[int][]string{}}
	for id, a := range out.TestAttribution {
		for _, p := range a.FixedAt {
			e.fixed[p] = append(e.fixed[p], id)
		}
		e.tests = append(e.tests, testRow{Test: id, FirstPass: a.FirstPassPart, BrokenAt: a.BrokenAt, FixedAt: a.FixedAt, PassingAtEnd: a.PassingAtEnd})
	}
	sort.Slice(e.tests, func(i, j int) bool { return e.tests[i].Test < e.tests[j].Test })
	if set, ok := labels.Stored(out); ok {
		e.labels = set.Labels
	}
	e.normalize()
	return e
}

// normalize makes every empty list and map of e non-nil, as the reduction
// makes them and the pages expect them ([] in JSON, not null): the cache
// folder's encoding does not tell the two apart.
func (e *evalData) normalize() {
	s := &e.series
	if s.Points == nil {
		s.Points = []report.Point{}
	}
	if s.Latest == nil {
		s.Latest = []report.SuiteRate{}
	}
	for _, m := range []*map[int][]string{&s.Drops, &s.Gains, &e.fixed} {
		if *m == nil {
			*m = map[int][]string{}
		}
	}
	if s.Suites == nil {
		s.Suites = map[string][]report.Point{}
	}
	if e.tests == nil {
		e.tests = []testRow{}
	}
	for i := range e.tests {
		if e.tests[i].BrokenAt == nil {
			e.tests[i].BrokenAt = []int{}
		}
		if e.tests[i].FixedAt == nil {
			e.tests[i].FixedAt = []int{}
		}
	}
}

// scores is the trajectory's score (a stored evaluation, else the trace's
// ground truth, else the agent's run_tests calls) and, apart, the agent's
// run_tests series; report.Series owns the rules.
func (s *snapshot) scores() report.Scores {
	ix := s.ix
	calls := make([]report.SuiteRate, len(ix.Calls))
	for i, c := range ix.Calls {
		calls[i] = report.SuiteRate{Suite: c.Suite, Passed: c.Passed, Total: c.Total, Rate: replay.PassRate(c.Passed, c.Total), Part: c.Part}
	}
	agent := report.RunTestsSeries(calls)
	ground := ix.Ground
	if ix.End != nil && len(ix.End.GroundTruth) > 0 {
		ground = append(ground[:len(ground):len(ground)], ix.End.GroundTruth...)
	}
	var ev report.Series
	if s.eval != nil {
		ev = s.eval.series
	}
	return report.Scores{Score: report.Choose(ev, report.GroundTruthSeries(ground), agent), Agent: agent}
}

// Curve is a trajectory's score over its parts, downsampled for drawing.
type Curve struct {
	// Source is where the score comes from: evaluation, ground_truth or
	// run_tests (the agent's own calls, when nothing else is known).
	Source string `json:"source"`
	// Points are [part, unix ms, rate] triples.
	Points [][3]float64 `json:"points"`
	// Suites are per-suite [part, unix ms, rate] triples.
	Suites map[string][][3]float64 `json:"suites"`
	// Marks are regressions and first passes.
	Marks []Mark `json:"marks"`
	// Latest is the latest result per suite.
	Latest []report.SuiteRate `json:"latest"`
	Rate   *float64           `json:"rate"`
	// Best is the highest rate, first reached at BestPart; SolvedAt the
	// first part whose result passed every case (0: none).
	Best     *float64 `json:"best"`
	BestPart int      `json:"best_part,omitempty"`
	SolvedAt int      `json:"solved_at,omitempty"`
	// SuspectPart and FixedLike: report.Series.Suspect.
	SuspectPart int `json:"suspect_part,omitempty"`
	FixedLike   int `json:"fixed_like,omitempty"`
	// FreshGap is the public − fresh gap (replay.FreshGap, through
	// report.Series.FreshGap) as [part, unix ms, gap] triples, at each
	// checkpoint whose result has both sides; absent without a fresh suite.
	FreshGap [][3]float64 `json:"fresh_gap,omitempty"`
	// Agent is the overall rate the agent's run_tests calls claimed, when
	// the score comes from elsewhere: a separate series, never the score.
	Agent [][3]float64 `json:"agent,omitempty"`
	// Milestones is, per pass rate in milestoneRates, the first part that
	// reached it (absent: never), from every point, not the downsampled.
	Milestones map[string]int `json:"milestones"`
	// gap is the latest FreshGap point, before downsampling (the summary's).
	gap *report.Point
}

// milestoneRates are the pass rates parts-to-milestone is reported for.
var milestoneRates = []float64{0.25, 0.5, 0.75, 0.9, 1}

func milestones(parts []int, rates []float64) map[string]int {
	out := map[string]int{}
	for _, m := range milestoneRates {
		for i, r := range rates {
			if r >= m-1e-9 {
				out[strconv.FormatFloat(m, 'f', -1, 64)] = parts[i]
				break
			}
		}
	}
	return out
}

// Mark is a part where tests broke or first passed.
type Mark struct {
	Part  int      `json:"part"`
	Time  int64    `json:"time"`
	Kind  string   `json:"kind"` // regression | first_pass | label (Tests: "label: evidence")
	Tests []string `json:"tests"`
	Count int      `json:"count"`
}

// maxPoints bounds a curve sent to the browser: a 50,000-part trajectory
// still draws from at most this many points per line.
const maxPoints = 1500

// curve computes the score curve of s with its source.
func (s *snapshot) curve() Curve {
	c := Curve{Suites: map[string][][3]float64{}, Points: [][3]float64{}, Marks: []Mark{}, Latest: []report.SuiteRate{}, Milestones: map[string]int{}}
	ix := s.ix
	at := func(part int) float64 {
		if i, ok := ix.Find(part); ok {
			return float64(ix.Parts[i].Time)
		}
		return 0
	}
	sc := s.scores()
	sr := sc.Score
	if sr.Empty() {
		return c
	}
	c.Source = sr.Source
	parts, rates := split(sr.Points)
	c.Points = downsample(parts, rates, at)
	c.Milestones = milestones(parts, rates)
	for name, pts := range sr.Suites {
		ps, rs := split(pts)
		c.Suites[name] = downsample(ps, rs, at)
	}
	c.Latest = sr.Latest
	r, _ := sr.Rate()
	c.Rate = &r
	b, bp, _ := sr.Best()
	c.Best, c.BestPart, c.SolvedAt = &b, bp, sr.SolvedAt
	c.SuspectPart, c.FixedLike = sr.Suspect()
	if len(sr.FreshGap) > 0 {
		ps, gs := split(sr.FreshGap)
		c.FreshGap = downsample(ps, gs, at)
		c.gap = &sr.FreshGap[len(sr.FreshGap)-1]
	}
	if sr.Source != fromRunTests && !sc.Agent.Empty() {
		ps, rs := split(sc.Agent.Points)
		c.Agent = downsample(ps, rs, at)
	}
	c.Marks = append(c.Marks, marks(sr.Drops, "regression", at)...)
	c.Marks = append(c.Marks, marks(sr.Gains, "first_pass", at)...)
	if s.eval != nil {
		// Failure labels at their part, the label and its evidence as
		// the mark's one line.
		for _, l := range s.eval.labels {
			if l.Part > 0 {
				c.Marks = append(c.Marks, Mark{Part: l.Part, Time: int64(at(l.Part)), Kind: "label", Count: 1, Tests: []string{l.Label + ": " + l.Evidence}})
			}
		}
	}
	sort.Slice(c.Marks, func(i, j int) bool { return c.Marks[i].Part < c.Marks[j].Part })
	return c
}

func split(pts []report.Point) ([]int, []float64) {
	parts, rates := make([]int, len(pts)), make([]float64, len(pts))
	for i, p := range pts {
		parts[i], rates[i] = p.Part, p.Rate
	}
	return parts, rates
}

// downsample keeps at most maxPoints points: the first and last, and per
// bucket the lowest and highest rate, so dips and peaks stay visible.
func downsample(parts []int, rates []float64, at func(int) float64) [][3]float64 {
	out := make([][3]float64, 0, min(len(parts), maxPoints))
	keep := func(i int) {
		if math.IsNaN(rates[i]) {
			return
		}
		out = append(out, [3]float64{float64(parts[i]), at(parts[i]), rates[i]})
	}
	if len(parts) <= maxPoints {
		for i := range parts {
			keep(i)
		}
		return out
	}
	buckets := maxPoints / 2
	per := float64(len(parts)) / float64(buckets)
	for b := range buckets {
		lo, hi := int(float64(b)*per), int(float64(b+1)*per)
		hi = min(hi, len(parts))
		mn, mx := -1, -1
		for i := lo; i < hi; i++ {
			if math.IsNaN(rates[i]) {
				continue
			}
			if mn < 0 || rates[i] < rates[mn] {
				mn = i
			}
			if mx < 0 || rates[i] > rates[mx] {
				mx = i
			}
		}
		if mn < 0 {
			continue
		}
		if mn > mx {
			mn, mx = mx, mn
		}
		keep(mn)
		if mx != mn {
			keep(mx)
		}
	}
	if last := len(parts) - 1; len(out) == 0 || out[len(out)-1][0] != float64(parts[last]) {
		keep(last)
	}
	return out
}

// maxMarkTests bounds the test names sent with one mark.
const maxMarkTests = 20

func marks(m map[int][]string, kind string, at func(int) float64) []Mark {
	out := make([]Mark, 0, len(m))
	for part, tests := range m {
		tests = slices.Sorted(slices.Values(tests)) // m is shared by requests: sort a copy
		mk := Mark{Part: part, Time: int64(at(part)), Kind: kind, Count: len(tests), Tests: tests}
		if len(tests) > maxMarkTests {
			mk.Tests = tests[:maxMarkTests]
		}
		out = append(out, mk)
	}
	return out
}
