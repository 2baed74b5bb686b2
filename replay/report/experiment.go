package report

import (
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Score sources, as the experiment report names them. A group never mixes
// sources: trajectories of one harness × model × task whose scores come
// from different sources form separate rows.
var sourceNames = map[string]string{
	FromEvaluation:  "offline evaluation",
	FromGroundTruth: "ground truth",
	FromRunTests:    "agent's run_tests",
	"":              "no scores",
}

// SourceName is how a rate source is shown.
func SourceName(src string) string {
	if n, ok := sourceNames[src]; ok {
		return n
	}
	return src
}

// Thresholds are the scores whose first reaching the report measures.
var Thresholds = []float64{0.25, 0.5, 0.9, 1}

// ExperimentSlot is one trajectory slot of an experiment: a combination of
// harness, model and task, one repeat, and its attempts' trajectory ids in
// order (the last one present is the slot's outcome).
type ExperimentSlot struct {
	Harness string
	Model   string
	Task    string
	// Variant names the slot's other parameters ("script=a.jsonl"): slots
	// that differ only in it are separate groups.
	Variant  string
	Repeat   int
	Attempts []string
}

// ExperimentOptions change what the experiment report counts.
type ExperimentOptions struct {
	// WithDerived counts a slot whose latest attempt is a rerun or a fork
	// of another trajectory in the group statistics; by default it is
	// left out (counted in LeftOut), not being a new sample.
	WithDerived bool
}

// Experiment is the report of one experiment.
type Experiment struct {
	Name   string  `json:"name"`
	Source string  `json:"store,omitempty"`
	Groups []Group `json:"groups"`
	Pairs  []Pair  `json:"paired_comparisons"`
	// NotStarted are slots without any recorded attempt.
	NotStarted []string `json:"not_started,omitempty"`
	// Trajectories counts every attempt found, relaunched ones included.
	Trajectories int `json:"trajectories"`
	// Harnesses compares harness against harness (HarnessPair).
	Harnesses []HarnessPair `json:"harness_comparisons"`
	// LeftOut are slots whose latest attempt is a rerun or a fork, not in
	// the statistics (ExperimentOptions.WithDerived).
	LeftOut []string `json:"reruns_and_forks_left_out,omitempty"`
	// LabelCounts are the failure labels of the slots' latest attempts
	// (those in the statistics) by harness and model.
	LabelCounts []LabelCount `json:"label_counts"`
}

// HarnessPair compares two harnesses on one task and score source: the
// final score difference (A − B) over the slots both have, paired by
// task and repeat (the seed), and the mean cost and parts of each over
// those pairs. Slots are paired within a model both harnesses ran; when
// the two share no model (a study pairing each harness with its own
// model), a harness with one model is paired across models (Models says
// which).
type HarnessPair struct {
	Task     string   `json:"task"`
	Source   string   `json:"score_source"`
	A        string   `json:"harness_a"`
	B        string   `json:"harness_b"`
	Models   string   `json:"models"`
	N        int      `json:"pairs"`
	MeanA    float64  `json:"mean_final_a"`
	MeanB    float64  `json:"mean_final_b"`
	MeanDiff float64  `json:"mean_difference"`
	AWins    int      `json:"a_better"`
	BWins    int      `json:"b_better"`
	Ties     int      `json:"ties"`
	CostA    *float64 `json:"mean_cost_a"`
	CostB    *float64 `json:"mean_cost_b"`
	PartsA   float64  `json:"mean_parts_a"`
	PartsB   float64  `json:"mean_parts_b"`
}

// Group is one harness × model × task (× variant) × score source.
type Group struct {
	Harness string `json:"harness"`
	Model   string `json:"model"`
	Task    string `json:"task"`
	Variant string `json:"variant,omitempty"`
	// Source is where the scores come from (RateSource of the rows).
	Source     string   `json:"score_source"`
	Slots      int      `json:"slots"`
	Attempts   int      `json:"attempts"`
	EndReasons []Count  `json:"end_reasons"`
	Final      *Stat    `json:"final_score"`
	Best       *Stat    `json:"best_score"`
	Parts      *Stat    `json:"parts"`
	Cost       *Stat    `json:"cost"`
	Reach      []Reach  `json:"reach"`
	Members    []Member `json:"trajectories"`
}

// Member is one slot's outcome within a group.
type Member struct {
	ID        string   `json:"trajectory_id"`
	Repeat    int      `json:"repeat"`
	Attempts  int      `json:"attempts"`
	EndReason string   `json:"end_reason"`
	Parts     int      `json:"parts"`
	Final     *float64 `json:"final_score"`
	Best      *float64 `json:"best_score"`
	Cost      *float64 `json:"cost"`
	ByPart    []Point  `json:"score_by_part"`
}

// Stat is the mean and spread of a value over a group's repeats.
type Stat struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"`
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
}

// Reach is how many slots reached a score and how many parts (and how much
// cost) it took them, on average.
type Reach struct {
	Threshold float64  `json:"threshold"`
	Reached   int      `json:"reached"`
	Of        int      `json:"of"`
	MeanParts *float64 `json:"mean_parts"`
	MeanCost  *float64 `json:"mean_cost"`
}

// Pair compares two models with the same harness and task and the same
// score source: mean final score difference (A − B) over the repeats both
// have, paired by repeat.
type Pair struct {
	Harness  string  `json:"harness"`
	Task     string  `json:"task"`
	Source   string  `json:"score_source"`
	A        string  `json:"model_a"`
	B        string  `json:"model_b"`
	N        int     `json:"pairs"`
	MeanDiff float64 `json:"mean_difference"`
	AWins    int     `json:"a_better"`
	BWins    int     `json:"b_better"`
	Ties     int     `json:"ties"`
}

// CollectExperiment builds the experiment report of slots from st's
// summaries (see CollectSummaries: summary files, not traces).
func CollectExperiment(ctx context.Context, st Store, name string, slots []ExperimentSlot, opts ExperimentOptions, logger *slog.Logger) (*Experiment, error) {
	var ids []string
	for _, s := range slots {
		ids = append(ids, s.Attempts...)
	}
	sums, err := CollectSummaries(ctx, st, ids, logger)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*SummaryFile, len(sums))
	for _, s := range sums {
		byID[s.ID] = s
	}
	return buildExperiment(name, slots, byID, opts), nil
}

func buildExperiment(name string, slots []ExperimentSlot, byID map[string]*SummaryFile, opts ExperimentOptions) *Experiment {
	e := &Experiment{Name: name, Groups: []Group{}, Pairs: []Pair{}, Harnesses: []HarnessPair{}}
	groups := map[string]*Group{}
	var order []string
	var counted []Trajectory
	for _, s := range slots {
		var latest *SummaryFile
		attempts := 0
		for _, id := range s.Attempts {
			if sum := byID[id]; sum != nil {
				latest = sum
				attempts++
			}
		}
		e.Trajectories += attempts
		if latest == nil {
			if len(s.Attempts) > 0 {
				e.NotStarted = append(e.NotStarted, s.Attempts[0])
			}
			continue
		}
		if latest.Derived() && !opts.WithDerived {
			e.LeftOut = append(e.LeftOut, latest.ID)
			continue
		}
		counted = append(counted, latest.Trajectory)
		key := strings.Join([]string{s.Harness, s.Model, s.Task, s.Variant, latest.RateSource}, "\x00")
		g := groups[key]
		if g == nil {
			g = &Group{Harness: s.Harness, Model: s.Model, Task: s.Task, Variant: s.Variant, Source: latest.RateSource}
			groups[key] = g
			order = append(order, key)
		}
		m := Member{ID: latest.ID, Repeat: s.Repeat, Attempts: attempts, EndReason: latest.EndReason, Parts: latest.Parts,
			Final: latest.PassRate, Cost: latest.Cost, ByPart: latest.ByPart}
		for _, p := range latest.ByPart {
			if m.Best == nil || p.Rate > *m.Best {
				r := p.Rate
				m.Best = &r
			}
		}
		g.Members = append(g.Members, m)
		g.Slots++
		g.Attempts += attempts
		for ti, th := range Thresholds {
			if len(g.Reach) <= ti {
				g.Reach = append(g.Reach, Reach{Threshold: th})
			}
			g.Reach[ti].Of++
			for _, p := range latest.ByPart {
				if p.Rate >= th-1e-9 {
					r := &g.Reach[ti]
					r.Reached++
					r.MeanParts = addMean(r.MeanParts, float64(p.Part), r.Reached)
					if c := latest.CostAt(p.Part); c != nil {
						r.MeanCost = addMean(r.MeanCost, *c, r.Reached)
					}
					break
				}
			}
		}
	}
	for _, k := range order {
		g := groups[k]
		var finals, bests, parts, costs []float64
		reasons := map[string]int{}
		for _, m := range g.Members {
			reasons[m.EndReason]++
			parts = append(parts, float64(m.Parts))
			if m.Final != nil {
				finals = append(finals, *m.Final)
			}
			if m.Best != nil {
				bests = append(bests, *m.Best)
			}
			if m.Cost != nil {
				costs = append(costs, *m.Cost)
			}
		}
		g.Final, g.Best, g.Parts, g.Cost = stat(finals), stat(bests), stat(parts), stat(costs)
		g.EndReasons = Report{Trajectories: membersAsRows(g.Members)}.EndReasons()
		e.Groups = append(e.Groups, *g)
	}
	sort.SliceStable(e.Groups, func(i, j int) bool {
		a, b := e.Groups[i], e.Groups[j]
		if a.Task != b.Task {
			return a.Task < b.Task
		}
		if a.Harness != b.Harness {
			return a.Harness < b.Harness
		}
		if a.Model != b.Model {
			return a.Model < b.Model
		}
		if a.Variant != b.Variant {
			return a.Variant < b.Variant
		}
		return a.Source < b.Source
	})
	e.Pairs = pairs(e.Groups)
	e.Harnesses = harnessPairs(e.Groups)
	e.LabelCounts = Report{Trajectories: counted, WithDerived: true}.LabelCounts()
	return e
}

// harnessPairs compares every two harnesses on each task and score
// source (HarnessPair): members are paired by repeat within a model both
// ran, or, when they share none, across models.
func harnessPairs(groups []Group) []HarnessPair {
	type side struct {
		models map[string]bool
		byKey  map[string]Member // model + repeat → member
		byRep  map[int]Member
		multi  bool // several members at one repeat (more models or variants)
	}
	sides := map[[3]string]*side{} // task, source, harness
	var harnesses []string
	for _, g := range groups {
		if g.Source == "" {
			continue
		}
		k := [3]string{g.Task, g.Source, g.Harness}
		s := sides[k]
		if s == nil {
			s = &side{models: map[string]bool{}, byKey: map[string]Member{}, byRep: map[int]Member{}}
			sides[k] = s
		}
		if !slices.Contains(harnesses, g.Harness) {
			harnesses = append(harnesses, g.Harness)
		}
		s.models[g.Model] = true
		for _, m := range g.Members {
			s.byKey[g.Model+"\x00"+g.Variant+"\x00"+strconv.Itoa(m.Repeat)] = m
			if _, dup := s.byRep[m.Repeat]; dup {
				s.multi = true
			}
			s.byRep[m.Repeat] = m
		}
	}
	sort.Strings(harnesses)
	var keys [][3]string
	for k := range sides {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return strings.Join(keys[i][:], "\x00") < strings.Join(keys[j][:], "\x00") })
	var out []HarnessPair
	for _, ka := range keys {
		for _, hb := range harnesses {
			if hb <= ka[2] {
				continue
			}
			a, b := sides[ka], sides[[3]string{ka[0], ka[1], hb}]
			if b == nil {
				continue
			}
			p := HarnessPair{Task: ka[0], Source: ka[1], A: ka[2], B: hb}
			var pairs [][2]Member
			shared := false
			for k, ma := range a.byKey {
				if mb, ok := b.byKey[k]; ok {
					pairs, shared = append(pairs, [2]Member{ma, mb}), true
				}
			}
			if !shared && !a.multi && !b.multi {
				for r, ma := range a.byRep {
					if mb, ok := b.byRep[r]; ok {
						pairs = append(pairs, [2]Member{ma, mb})
					}
				}
			}
			p.Models = modelsOf(a.models, b.models, shared)
			var costA, costB float64
			nCost := 0
			for _, pr := range pairs {
				ma, mb := pr[0], pr[1]
				if ma.Final == nil || mb.Final == nil {
					continue
				}
				d := *ma.Final - *mb.Final
				p.N++
				n := float64(p.N)
				p.MeanDiff += (d - p.MeanDiff) / n
				p.MeanA += (*ma.Final - p.MeanA) / n
				p.MeanB += (*mb.Final - p.MeanB) / n
				p.PartsA += (float64(ma.Parts) - p.PartsA) / n
				p.PartsB += (float64(mb.Parts) - p.PartsB) / n
				if ma.Cost != nil && mb.Cost != nil {
					nCost++
					costA += (*ma.Cost - costA) / float64(nCost)
					costB += (*mb.Cost - costB) / float64(nCost)
				}
				switch {
				case d > 1e-9:
					p.AWins++
				case d < -1e-9:
					p.BWins++
				default:
					p.Ties++
				}
			}
			if nCost > 0 {
				p.CostA, p.CostB = &costA, &costB
			}
			if p.N > 0 {
				out = append(out, p)
			}
		}
	}
	return out
}

// modelsOf says which models a harness pair compared: the shared ones, or
// each side's.
func modelsOf(a, b map[string]bool, shared bool) string {
	list := func(m map[string]bool, only map[string]bool) string {
		var out []string
		for k := range m {
			if only == nil || only[k] {
				out = append(out, k)
			}
		}
		sort.Strings(out)
		return strings.Join(out, ", ")
	}
	if shared {
		return list(a, b)
	}
	if la, lb := list(a, nil), list(b, nil); la != lb {
		return la + " vs " + lb
	}
	return list(a, nil)
}

// addMean folds v into a running mean of n values.
func addMean(mean *float64, v float64, n int) *float64 {
	m := v
	if mean != nil {
		m = *mean + (v-*mean)/float64(n)
	}
	return &m
}

func membersAsRows(ms []Member) []Trajectory {
	rows := make([]Trajectory, len(ms))
	for i, m := range ms {
		rows[i].EndReason = m.EndReason
	}
	return rows
}

func stat(v []float64) *Stat {
	if len(v) == 0 {
		return nil
	}
	s := &Stat{N: len(v), Min: v[0], Max: v[0]}
	for _, x := range v {
		s.Mean += x
		s.Min, s.Max = math.Min(s.Min, x), math.Max(s.Max, x)
	}
	s.Mean /= float64(len(v))
	if len(v) > 1 {
		var ss float64
		for _, x := range v {
			ss += (x - s.Mean) * (x - s.Mean)
		}
		s.SD = math.Sqrt(ss / float64(len(v)-1))
	}
	return s
}

// pairs compares every two models that share harness, task and source,
// pairing trajectories by repeat.
func pairs(groups []Group) []Pair {
	var out []Pair
	for i := range groups {
		for j := range groups {
			a, b := groups[i], groups[j]
			if a.Model >= b.Model || a.Harness != b.Harness || a.Task != b.Task || a.Variant != b.Variant || a.Source != b.Source || a.Source == "" {
				continue
			}
			byRepeat := map[int]*float64{}
			for _, m := range b.Members {
				byRepeat[m.Repeat] = m.Final
			}
			p := Pair{Harness: a.Harness, Task: a.Task, Source: a.Source, A: a.Model, B: b.Model}
			for _, m := range a.Members {
				fb, ok := byRepeat[m.Repeat]
				if !ok || m.Final == nil || fb == nil {
					continue
				}
				d := *m.Final - *fb
				p.N++
				p.MeanDiff += (d - p.MeanDiff) / float64(p.N)
				switch {
				case d > 1e-9:
					p.AWins++
				case d < -1e-9:
					p.BWins++
				default:
					p.Ties++
				}
			}
			if p.N > 0 {
				out = append(out, p)
			}
		}
	}
	return out
}

// WriteExperimentText writes the group table and paired comparisons.
func WriteExperimentText(w io.Writer, e *Experiment) error {
	fmt.Fprintf(w, "experiment %s: %d slots with results, %d trajectories (attempts included)", e.Name, slotCount(e), e.Trajectories)
	if len(e.NotStarted) > 0 {
		fmt.Fprintf(w, ", %d not started", len(e.NotStarted))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "HARNESS\tMODEL\tTASK\tSCORES FROM\tN\tATTEMPTS\tEND REASONS\tFINAL mean±sd [min–max]\tBEST mean±sd\tREACH 25/50/90/100%: n (mean parts)\tPARTS mean\tCOST mean")
	for _, g := range e.Groups {
		var reasons []string
		for _, c := range g.EndReasons {
			reasons = append(reasons, fmt.Sprintf("%s %d", c.Label, c.N))
		}
		var reach []string
		for _, r := range g.Reach {
			s := fmt.Sprintf("%d/%d", r.Reached, r.Of)
			if r.MeanParts != nil {
				s += fmt.Sprintf(" (%.0f)", *r.MeanParts)
			}
			reach = append(reach, s)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", withVariant(g.Harness, g.Variant), g.Model, g.Task, SourceName(g.Source), g.Slots, g.Attempts,
			strings.Join(reasons, ", "), fmtStatPct(g.Final, true), fmtStatPct(g.Best, false), strings.Join(reach, " · "),
			fmtStatNum(g.Parts, 0), fmtStatNum(g.Cost, 4))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if len(e.Harnesses) > 0 {
		fmt.Fprintln(w, "\nharness against harness, paired by task and repeat:")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "TASK\tSCORES FROM\tA\tB\tMODELS\tPAIRS\tFINAL A\tFINAL B\tMEAN A − B\tA BETTER\tB BETTER\tTIES\tPARTS A/B\tCOST A/B")
		for _, p := range e.Harnesses {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%.1f%%\t%.1f%%\t%+.1f points\t%d\t%d\t%d\t%.0f/%.0f\t%s/%s\n", p.Task, SourceName(p.Source), p.A, p.B, p.Models, p.N,
				p.MeanA*100, p.MeanB*100, p.MeanDiff*100, p.AWins, p.BWins, p.Ties, p.PartsA, p.PartsB, fmtCost(p.CostA), fmtCost(p.CostB))
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
	}
	if len(e.LeftOut) > 0 {
		fmt.Fprintf(w, "left out of the statistics: %d slots whose trajectory is a rerun or a fork (%s)\n", len(e.LeftOut), strings.Join(e.LeftOut, ", "))
	}
	for _, p := range e.Pairs {
		fmt.Fprintf(w, "%s vs %s (%s, %s, %s): %d pairs, mean final difference %+.1f points; %s better %d, %s better %d, ties %d\n",
			p.A, p.B, p.Harness, p.Task, SourceName(p.Source), p.N, p.MeanDiff*100, p.A, p.AWins, p.B, p.BWins, p.Ties)
	}
	return nil
}

// withVariant is a harness named with its group's variant, if any.
func withVariant(h, variant string) string {
	if variant == "" {
		return h
	}
	return h + " (" + variant + ")"
}

func fmtCost(c *float64) string {
	if c == nil {
		return "—"
	}
	return fmt.Sprintf("$%.4f", *c)
}

func slotCount(e *Experiment) int {
	n := 0
	for _, g := range e.Groups {
		n += g.Slots
	}
	return n
}

func fmtStatPct(s *Stat, rng bool) string {
	if s == nil {
		return "—"
	}
	out := fmt.Sprintf("%.1f%%±%.1f", s.Mean*100, s.SD*100)
	if rng {
		out += fmt.Sprintf(" [%.1f–%.1f]", s.Min*100, s.Max*100)
	}
	return out
}

func fmtStatNum(s *Stat, prec int) string {
	if s == nil {
		return "—"
	}
	return strconv.FormatFloat(s.Mean, 'f', prec, 64)
}

// WriteExperimentJSON writes the experiment report as indented JSON.
func WriteExperimentJSON(w io.Writer, e *Experiment) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(e); err != nil {
		return fmt.Errorf("write report JSON: %w", err)
	}
	return nil
}

// WriteExperimentHTML writes a self-contained page: the group table, one
// chart per group with every repeat's score curve overlaid, and the paired
// comparisons.
func WriteExperimentHTML(w io.Writer, e *Experiment) error {
	type groupView struct {
		Group
		Chart template.HTML
	}
	var gv []groupView
	for _, g := range e.Groups {
		var ss []series
		for i, m := range g.Members {
			ss = append(ss, series{Name: fmt.Sprintf("repeat %d (%s)", m.Repeat, m.EndReason), Points: m.ByPart, Color: color(i), End: m.Parts})
		}
		title := fmt.Sprintf("%s × %s × %s — %s", g.Harness, g.Model, g.Task, SourceName(g.Source))
		gv = append(gv, groupView{Group: g, Chart: lineChart(title, ss, 540, 240, true)})
	}
	err := experimentTmpl.Execute(w, struct {
		*Experiment
		Views []groupView
		Slots int
	}{e, gv, slotCount(e)})
	if err != nil {
		return fmt.Errorf("write report HTML: %w", err)
	}
	return nil
}

var experimentTmpl = template.Must(template.New("experiment").Funcs(template.FuncMap{
	"thresholds": func() []float64 { return Thresholds },
	"stat":       fmtStatPct,
	"num":        fmtStatNum,
	"source":     SourceName,
	"pct":        func(v float64) string { return strconv.FormatFloat(v*100, 'f', 0, 64) + "%" },
	"pct1":       func(v float64) string { return strconv.FormatFloat(v*100, 'f', 1, 64) + "%" },
	"cost":       fmtCost,
	"diff":       func(v float64) string { return fmt.Sprintf("%+.1f", v*100) },
	"reach": func(r Reach) string {
		s := fmt.Sprintf("%d/%d", r.Reached, r.Of)
		if r.MeanParts != nil {
			s += fmt.Sprintf(" · %.0f parts", *r.MeanParts)
		}
		if r.MeanCost != nil {
			s += fmt.Sprintf(" · $%.4f", *r.MeanCost)
		}
		return s
	},
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>experiment {{.Name}}</title>
<style>
body{font:14px/1.4 system-ui,"DejaVu Sans",sans-serif;color:#1b1f24;margin:24px auto;max-width:1140px;padding:0 16px}
h1{font-size:22px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d8dee4}
table{border-collapse:collapse;width:100%;font-size:13px}th,td{text-align:left;padding:5px 8px;border-bottom:1px solid #eaeef2;vertical-align:top}
th{background:#f6f8fa}.grid-charts{display:flex;flex-wrap:wrap;gap:12px}.card{border:1px solid #d8dee4;border-radius:6px;padding:6px}
svg.chart{display:block;font:11px system-ui,"DejaVu Sans",sans-serif}svg .title{font-size:12px;font-weight:600}
svg .grid{stroke:#eaeef2}svg .frame{fill:none;stroke:#afb8c1}svg .tick{stroke:#afb8c1}svg .ylab{text-anchor:end;fill:#57606a}
svg .xlab,svg .axis{text-anchor:middle;fill:#57606a}svg .line{fill:none}svg .empty{text-anchor:middle;fill:#8c959f}
.muted{color:#8c959f}
</style></head><body>
<h1>experiment {{.Name}}</h1>
<p class="muted">{{.Slots}} slots with results · {{.Trajectories}} trajectories (relaunched attempts included){{if .NotStarted}} · {{len .NotStarted}} not started{{end}}. Scores from different sources are never combined: each source is its own row.</p>
<h2>By harness × model × task</h2>
<table><thead><tr><th>harness</th><th>model</th><th>task</th><th>scores from</th><th>n</th><th>attempts</th><th>end reasons</th><th>final</th><th>best</th>{{range $t := thresholds}}<th>reach {{pct $t}}</th>{{end}}<th>cost</th></tr></thead><tbody>
{{range .Groups}}<tr><td>{{.Harness}}{{if .Variant}}<br><span class="muted">{{.Variant}}</span>{{end}}</td><td>{{.Model}}</td><td>{{.Task}}</td><td>{{source .Source}}</td><td>{{.Slots}}</td><td>{{.Attempts}}</td><td>{{range .EndReasons}}{{.Label}} {{.N}}<br>{{end}}</td><td>{{stat .Final true}}</td><td>{{stat .Best false}}</td>{{range .Reach}}<td>{{reach .}}</td>{{end}}<td>{{num .Cost 4}}</td></tr>
{{end}}</tbody></table>
<h2>Score by part, repeats overlaid</h2>
<div class="grid-charts">{{range .Views}}<div class="card">{{.Chart}}</div>{{end}}</div>
<h2>Harness against harness</h2>
<p class="muted">Paired by task and repeat (within a model both ran, else across each harness's own model); reruns and forks {{if .LeftOut}}({{len .LeftOut}}) {{end}}are left out unless asked.</p>
<table id="harness-comparison"><thead><tr><th>task</th><th>scores from</th><th>harness A</th><th>harness B</th><th>models</th><th>pairs</th><th>final A</th><th>final B</th><th>mean A − B (points)</th><th>A better</th><th>B better</th><th>ties</th><th>parts A / B</th><th>cost A / B</th></tr></thead><tbody>
{{range .Harnesses}}<tr><td>{{.Task}}</td><td>{{source .Source}}</td><td>{{.A}}</td><td>{{.B}}</td><td>{{.Models}}</td><td>{{.N}}</td><td>{{pct1 .MeanA}}</td><td>{{pct1 .MeanB}}</td><td>{{diff .MeanDiff}}</td><td>{{.AWins}}</td><td>{{.BWins}}</td><td>{{.Ties}}</td><td>{{printf "%.0f" .PartsA}} / {{printf "%.0f" .PartsB}}</td><td>{{cost .CostA}} / {{cost .CostB}}</td></tr>
{{else}}<tr><td colspan="14" class="muted">no two harnesses share a task and score source</td></tr>{{end}}</tbody></table>
<h2>Paired comparisons</h2>
<table><thead><tr><th>harness</th><th>task</th><th>scores from</th><th>model A</th><th>model B</th><th>pairs</th><th>mean A − B (points)</th><th>A better</th><th>B better</th><th>ties</th></tr></thead><tbody>
{{range .Pairs}}<tr><td>{{.Harness}}</td><td>{{.Task}}</td><td>{{source .Source}}</td><td>{{.A}}</td><td>{{.B}}</td><td>{{.N}}</td><td>{{diff .MeanDiff}}</td><td>{{.AWins}}</td><td>{{.BWins}}</td><td>{{.Ties}}</td></tr>
{{else}}<tr><td colspan="10" class="muted">no two models share a harness, task and score source</td></tr>{{end}}</tbody></table>
</body></html>
`))
