package labels

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/sandbox/agent"
	"github.com/trajlab/traj/sandbox/harness/recorded"
	"github.com/trajlab/traj/trace"
)

// The label kinds (see the package doc for each rule).
const (
	PrematureStop            = "premature_stop"
	DeclaredInfeasible       = "declared_infeasible"
	RegressionLoop           = "regression_loop"
	Plateau                  = "plateau"
	Stall                    = "stall"
	PassingThenLost          = "passing_then_lost"
	BudgetExhaustedImproving = "budget_exhausted_improving"
	Suspect                  = "suspect"
)

// Kinds lists every label kind, in the order reports show them.
var Kinds = []string{PrematureStop, DeclaredInfeasible, RegressionLoop, Plateau, Stall, PassingThenLost, BudgetExhaustedImproving, Suspect}

// Label is one failure label with the evidence that triggered it.
type Label struct {
	Label string `json:"label"`
	// Part is where the label shows on the curve; 0: the whole trajectory.
	Part     int    `json:"part,omitempty"`
	Evidence string `json:"evidence"`
}

// Options are the thresholds of the rules. Zero fields take Defaults'.
type Options struct {
	// PlateauParts and PlateauHours: no new best for this many parts, or
	// this long, is a plateau (default 50 parts, 2 hours).
	PlateauParts int     `json:"plateau_parts"`
	PlateauHours float64 `json:"plateau_hours"`
	// StallMinutes: no part for this long is a stall (default 15).
	StallMinutes float64 `json:"stall_minutes"`
	// RegressionRounds: a test path broken and fixed this many times is a
	// regression loop (default 2).
	RegressionRounds int `json:"regression_rounds"`
	// ImprovingParts: a new best within this many parts of a budget's end
	// is "still improving" (default 20).
	ImprovingParts int `json:"improving_parts"`
	// LostMargin: the best pass rate above the final by more than this is
	// work lost (default 0: any drop).
	LostMargin float64 `json:"lost_margin"`
	// GapThreshold: a public − fresh pass-rate gap above this is suspect
	// (default 0.25).
	GapThreshold float64 `json:"gap_threshold"`
	// Phrases are what a text part says when the agent declares it cannot
	// finish (default DefaultPhrases).
	Phrases []string `json:"phrases,omitempty"`
}

// DefaultPhrases are the declarations of infeasibility looked for in text
// parts, lower case.
var DefaultPhrases = []string{
	"cannot finish", "can't finish", "cannot complete", "can't complete", "unable to complete",
	"unable to finish", "not feasible", "infeasible", "impossible to complete", "cannot be completed",
	"i give up", "giving up", "beyond what i can",
}

// Defaults returns the documented thresholds.
func Defaults() Options {
	return Options{PlateauParts: 50, PlateauHours: 2, StallMinutes: 15, RegressionRounds: 2,
		ImprovingParts: 20, GapThreshold: 0.25, Phrases: DefaultPhrases}
}

// withDefaults fills o's zero fields from Defaults.
func (o Options) withDefaults() Options {
	d := Defaults()
	if o.PlateauParts <= 0 {
		o.PlateauParts = d.PlateauParts
	}
	if o.PlateauHours <= 0 {
		o.PlateauHours = d.PlateauHours
	}
	if o.StallMinutes <= 0 {
		o.StallMinutes = d.StallMinutes
	}
	if o.RegressionRounds <= 0 {
		o.RegressionRounds = d.RegressionRounds
	}
	if o.ImprovingParts <= 0 {
		o.ImprovingParts = d.ImprovingParts
	}
	if o.GapThreshold <= 0 {
		o.GapThreshold = d.GapThreshold
	}
	if len(o.Phrases) == 0 {
		o.Phrases = d.Phrases
	}
	return o
}

// Set is the labels of one trajectory and the options they were computed
// with: what evaluation.json's "labels" holds.
type Set struct {
	Options Options `json:"options"`
	Labels  []Label `json:"labels"`
}

// Observer gathers what the rules need from a trace, one part at a
// time (trace.Scan's callbacks), so a long trace is never held whole.
type Observer struct {
	reader   agent.Reader
	times    []partTime
	said     []Label // text parts that matched a phrase, with the phrase
	phrases  []string
	turnEnds []int // the last part of every turn that ended
	// turnStarts are the first parts of the turns: the wait before one is
	// traj's between turns (ground truth, the next prompt), no stall.
	turnStarts map[int]bool
	gts        []trace.GroundTruth
	end        *trace.SessionEnd
	lastPart   int
}

type partTime struct {
	part int
	at   time.Time
}

// NewObserver returns an observer for a trace whose agent field is
// agentField (the harness's reader reads its text parts).
func NewObserver(agentField string, o Options) *Observer {
	o = o.withDefaults()
	ph := make([]string, len(o.Phrases))
	for i, p := range o.Phrases {
		ph[i] = strings.ToLower(p)
	}
	return &Observer{reader: recorded.Reader(agentField), phrases: ph, turnStarts: map[int]bool{}}
}

// Part takes one part; a text part's text is read by the harness's
// reader.
func (b *Observer) Part(p *trace.Part) {
	text := ""
	if p.PartType == string(agent.KindText) && len(p.Content) > 0 {
		ap, _ := b.reader.Part(p.PartID, agent.KindText, p.Content)
		text = ap.Text
	}
	b.PartRead(p, text)
}

// PartRead is Part for a caller that has read the part's text already
// (the export's reader): text is the text of a text part, else ignored.
func (b *Observer) PartRead(p *trace.Part, text string) {
	b.lastPart = max(b.lastPart, p.Part)
	if at, err := time.Parse(time.RFC3339Nano, p.Timestamp); err == nil {
		b.times = append(b.times, partTime{p.Part, at})
	}
	for _, g := range p.GroundTruth {
		b.gts = append(b.gts, keep(g))
	}
	if p.PartType != string(agent.KindText) || text == "" {
		return
	}
	lower := strings.ToLower(text)
	for _, ph := range b.phrases {
		if strings.Contains(lower, ph) {
			b.said = append(b.said, Label{Label: DeclaredInfeasible, Part: p.Part, Evidence: fmt.Sprintf("text part says %q", ph)})
			return
		}
	}
}

// keep is what the rules use of g, in memory of its own: a caller may
// reuse the memory of a part it read (the export's reader does).
func keep(g trace.GroundTruth) trace.GroundTruth {
	k := trace.GroundTruth{Part: g.Part, Passed: g.Passed, Failed: g.Failed, Total: g.Total,
		Solved: g.Solved, Sampled: g.Sampled, FixedLike: g.FixedLike, Error: strings.Clone(g.Error)}
	for _, s := range g.Suites {
		s.Path = strings.Clone(s.Path)
		k.Suites = append(k.Suites, s)
	}
	return k
}

// Turn takes one turn's own fields (its parts went to Part).
func (b *Observer) Turn(t *trace.Turn) {
	if t.PartStart != nil {
		b.turnStarts[*t.PartStart] = true
	}
	if t.EndedAt != "" && t.PartEnd != nil {
		b.turnEnds = append(b.turnEnds, *t.PartEnd)
	}
}

// End takes the trace's top-level fields.
func (b *Observer) End(t *trace.Trace) {
	b.end = t.SessionEnd
	if t.SessionEnd != nil {
		for _, g := range t.SessionEnd.GroundTruth {
			b.gts = append(b.gts, keep(g))
		}
	}
}

// Compute labels an in-memory trace; ev (may be nil) is its evaluation.
func Compute(tr *trace.Trace, ev *replay.Output, o Options) []Label {
	b := NewObserver(tr.Agent, o)
	for _, turn := range tr.Turns {
		for i := range turn.Parts {
			b.Part(&turn.Parts[i])
		}
		b.Turn(&turn)
	}
	b.End(tr)
	return b.Labels(ev, o)
}

// ComputeFile labels the trace at path, streamed.
func ComputeFile(path string, ev *replay.Output, o Options) ([]Label, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("label %q: %w", path, err)
	}
	defer f.Close()
	ls, err := ComputeReader(f, ev, o)
	if err != nil {
		return nil, fmt.Errorf("label %q: %w", path, err)
	}
	return ls, nil
}

// point is the score after a part.
type point struct {
	part          int
	passed, total int64
	suites        map[string][2]int64 // passed, total
	fixedLike     int64
	sampled       bool
}

func (p point) rate() float64 {
	if p.total <= 0 {
		return 0
	}
	return float64(p.passed) / float64(p.total)
}

// solved: every case of the result passed (a sampled result whose sample
// passed whole counts: the rules ask whether tests were failing).
func (p point) solved() bool { return p.total > 0 && p.passed == p.total }

// series is the score by part: the evaluation's, else the ground truth's
// (full results; sampled ones only when there is no full one).
func (b *Observer) series(ev *replay.Output) []point {
	var pts []point
	if ev != nil && len(ev.PartEvaluations) > 0 {
		for _, k := range ev.PartEvaluations.Keys() {
			pe := ev.PartEvaluations[k]
			if pe == nil || pe.Total == 0 {
				continue
			}
			p := point{part: k, passed: int64(pe.Passed), total: int64(pe.Total), fixedLike: int64(pe.FixedLike), suites: map[string][2]int64{}}
			for path, s := range pe.Suites {
				p.suites[path] = [2]int64{int64(s.Passed), int64(s.Total)}
			}
			pts = append(pts, p)
		}
		return pts
	}
	byPart := map[int]point{}
	full := false
	for _, g := range b.gts {
		if g.Error != "" || g.Total == 0 {
			continue
		}
		p := point{part: g.Part, passed: g.Passed, total: g.Total, fixedLike: g.FixedLike, sampled: g.Sampled, suites: map[string][2]int64{}}
		for _, s := range g.Suites {
			p.suites[s.Path] = [2]int64{s.Passed, s.Total}
		}
		full = full || !g.Sampled
		if old, ok := byPart[g.Part]; ok && !old.sampled && p.sampled {
			continue
		}
		byPart[g.Part] = p
	}
	for _, p := range byPart {
		if full && p.sampled {
			continue
		}
		pts = append(pts, p)
	}
	slices.SortFunc(pts, func(a, c point) int { return a.part - c.part })
	return pts
}

// at is the latest point at or before part (ok false: none).
func at(pts []point, part int) (point, bool) {
	i, _ := slices.BinarySearchFunc(pts, part+1, func(p point, t int) int { return p.part - t })
	if i == 0 {
		return point{}, false
	}
	return pts[i-1], true
}

// budgetEnds are the end reasons of a budget reached.
var budgetEnds = []string{trace.EndPartLimit, trace.EndTimeout, trace.EndTokenLimit, trace.EndCostLimit}

// Labels applies the rules to what was observed; ev (may be nil) is the
// trajectory's evaluation. The labels come in Kinds order, then by part.
func (b *Observer) Labels(ev *replay.Output, o Options) []Label {
	o = o.withDefaults()
	pts := b.series(ev)
	out := []Label{}
	// premature_stop: every turn but the last that ended unsolved.
	for i, last := range b.turnEnds {
		if i == len(b.turnEnds)-1 && last >= b.lastPart {
			continue
		}
		p, ok := at(pts, last)
		if ok && !p.solved() {
			out = append(out, Label{PrematureStop, last, fmt.Sprintf("turn ended at part %d with %d/%d passing and parts left", last, p.passed, p.total)})
		}
	}
	out = append(out, b.said...)
	out = append(out, regressions(pts, o)...)
	out = append(out, b.plateaus(pts, o)...)
	out = append(out, b.stalls(o)...)
	if len(pts) > 0 {
		best, final := pts[0], pts[len(pts)-1]
		for _, p := range pts {
			if p.rate() > best.rate() {
				best = p
			}
		}
		if best.rate()-final.rate() > o.LostMargin && best.rate() > final.rate() {
			out = append(out, Label{PassingThenLost, final.part, fmt.Sprintf("best %d/%d at part %d, final %d/%d at part %d", best.passed, best.total, best.part, final.passed, final.total, final.part)})
		}
		if b.end != nil && slices.Contains(budgetEnds, b.end.Reason) && !final.solved() {
			lastBest, bestRate := 0, -1.0
			for _, p := range pts {
				if p.rate() > bestRate {
					lastBest, bestRate = p.part, p.rate()
				}
			}
			if lastBest > 1 && b.lastPart-lastBest < o.ImprovingParts && lastBest != pts[0].part {
				out = append(out, Label{BudgetExhaustedImproving, b.lastPart, fmt.Sprintf("ended %s at part %d; new best %.1f%% at part %d", b.end.Reason, b.lastPart, 100*bestRate, lastBest)})
			}
		}
	}
	out = append(out, suspects(pts, o)...)
	return out
}

// regressions finds test paths whose passing count fell and came back
// at least o.RegressionRounds times.
func regressions(pts []point, o Options) []Label {
	paths := map[string]bool{}
	for _, p := range pts {
		for path := range p.suites {
			paths[path] = true
		}
	}
	var out []Label
	for _, path := range slices.Sorted(func(yield func(string) bool) {
		for k := range paths {
			if !yield(k) {
				return
			}
		}
	}) {
		rounds, high, broken, brokeAt := 0, int64(-1), false, 0
		var where []string
		for _, p := range pts {
			c, ok := p.suites[path]
			if !ok {
				continue
			}
			switch {
			case !broken && high >= 0 && c[0] < high:
				broken, brokeAt = true, p.part
			case broken && c[0] >= high:
				broken = false
				rounds++
				where = append(where, fmt.Sprintf("%d→%d", brokeAt, p.part))
				if rounds == o.RegressionRounds {
					out = append(out, Label{RegressionLoop, p.part, fmt.Sprintf("%s broken and fixed %d times (parts %s)", path, rounds, strings.Join(where, ", "))})
				}
			}
			if !broken {
				high = max(high, c[0])
			}
		}
	}
	return out
}

// plateaus finds spans without a new best, unsolved, of at least
// o.PlateauParts parts or o.PlateauHours hours.
func (b *Observer) plateaus(pts []point, o Options) []Label {
	if len(pts) == 0 {
		return nil
	}
	var out []Label
	check := func(from point, until int) {
		if from.solved() {
			return
		}
		parts := until - from.part
		hours := b.between(from.part, until).Hours()
		if parts >= o.PlateauParts || hours >= o.PlateauHours {
			out = append(out, Label{Plateau, from.part, fmt.Sprintf("no new test passing from part %d to part %d (%d parts, %.1f h) at %d/%d", from.part, until, parts, hours, from.passed, from.total)})
		}
	}
	best := pts[0]
	for _, p := range pts[1:] {
		if p.rate() > best.rate() {
			check(best, p.part)
			best = p
		}
	}
	check(best, b.lastPart)
	return out
}

// between is the time from part a's timestamp to part c's (the parts
// come in order, so their times are found by binary search).
func (b *Observer) between(a, c int) time.Duration {
	find := func(part int) (time.Time, bool) {
		i, ok := slices.BinarySearchFunc(b.times, part, func(t partTime, p int) int { return t.part - p })
		if !ok {
			return time.Time{}, false
		}
		return b.times[i].at, true
	}
	ta, okA := find(a)
	tc, okC := find(c)
	if !okA || !okC {
		return 0
	}
	return tc.Sub(ta)
}

// stalls finds gaps between parts of one turn of at least
// o.StallMinutes, and a run
// that ended because a turn stalled.
func (b *Observer) stalls(o Options) []Label {
	var out []Label
	limit := time.Duration(o.StallMinutes * float64(time.Minute))
	for i := 1; i < len(b.times); i++ {
		if b.turnStarts[b.times[i].part] {
			continue
		}
		if gap := b.times[i].at.Sub(b.times[i-1].at); gap >= limit {
			out = append(out, Label{Stall, b.times[i].part, fmt.Sprintf("no part for %s after part %d", gap.Round(time.Second), b.times[i-1].part)})
		}
	}
	if b.end != nil && strings.HasPrefix(b.end.Detail, "stalled") {
		out = append(out, Label{Stall, b.lastPart, "run ended: " + b.end.Detail})
	}
	return out
}

// suspects finds the first result with fixed_like cases and the first
// whose public − fresh gap is above o.GapThreshold.
func suspects(pts []point, o Options) []Label {
	var out []Label
	for _, p := range pts {
		if p.fixedLike > 0 {
			out = append(out, Label{Suspect, p.part, fmt.Sprintf("%d cases did what a program ignoring its input does (fixed_like)", p.fixedLike)})
			break
		}
	}
	for _, p := range pts {
		if gap, ok := Gap(p.suites); ok && gap > o.GapThreshold {
			out = append(out, Label{Suspect, p.part, fmt.Sprintf("public − fresh pass rate %.2f above %.2f", gap, o.GapThreshold)})
			break
		}
	}
	return out
}

// FreshSuite is the C environment's generated suite
// (environment/ccompiler/fresh; replay.FreshSuite).
const FreshSuite = replay.FreshSuite

// Gap is the public − fresh gap of one result, given each path's passed
// and total: replay.FreshGap, the one rule the report, the export and the
// viewer use too.
func Gap(counts map[string][2]int64) (gap float64, ok bool) { return replay.FreshGap(counts) }

// ParseSettings reads thresholds given as name=value pairs (the JSON
// names of Options' fields, e.g. plateau_parts=30): what the --labels
// flag of `traj report` and `traj replay evaluate` takes. An unknown
// name or a value of the wrong type is an error.
func ParseSettings(kv map[string]string) (Options, error) {
	var o Options
	if len(kv) == 0 {
		return o, nil
	}
	var b strings.Builder
	b.WriteByte('{')
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		if _, err := strconv.ParseFloat(kv[k], 64); err != nil || k == "phrases" {
			return o, fmt.Errorf("labels setting %s=%q: not a number", k, kv[k])
		}
		fmt.Fprintf(&b, "%q:%s", k, kv[k])
	}
	b.WriteByte('}')
	dec := json.NewDecoder(strings.NewReader(b.String()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		return o, fmt.Errorf("labels settings: %w (known: plateau_parts, plateau_hours, stall_minutes, regression_rounds, improving_parts, lost_margin, gap_threshold)", err)
	}
	return o, nil
}

// Marshal is the Set of labels computed with o, as evaluation.json
// holds it (o with its defaults filled in, so the file says what was
// used).
func Marshal(ls []Label, o Options) (json.RawMessage, error) {
	return json.Marshal(Set{Options: o.withDefaults(), Labels: ls})
}

// Stored reads the Set an evaluation report holds; ok is false when it
// holds none or one that does not decode.
func Stored(ev *replay.Output) (Set, bool) {
	var s Set
	if ev == nil || len(ev.Labels) == 0 || json.Unmarshal(ev.Labels, &s) != nil {
		return s, false
	}
	return s, true
}

// ComputeReader labels the trace read from r, streamed.
func ComputeReader(r io.Reader, ev *replay.Output, o Options) ([]Label, error) {
	b := NewObserver("", o)
	err := trace.Scan(r, trace.Visitor{
		OnHeader: func(h *trace.Header) error { b = NewObserver(h.Agent, o); return nil },
		OnPart:   func(_ int, p *trace.Part) error { b.Part(p); return nil },
		OnTurn:   func(_ int, t *trace.Turn) error { b.Turn(t); return nil },
		OnEnd:    func(t *trace.Trace) error { b.End(t); return nil },
	})
	if err != nil {
		return nil, err
	}
	return b.Labels(ev, o), nil
}
