package report

import (
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"math"
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
	Harness  string
	Model    string
	Task     string
	Repeat   int
	Attempts []string
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
}

// Group is one harness × model × task × score source.
type Group struct {
	Harness string `json:"harness"`
	Model   string `json:"model"`
	Task    string `json:"task"`
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
func CollectExperiment(ctx context.Context, st Store, name string, slots []ExperimentSlot, logger *slog.Logger) (*Experiment, error) {
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
	return buildExperiment(name, slots, byID), nil
}

func buildExperiment(name string, slots []ExperimentSlot, byID map[string]*SummaryFile) *Experiment {
	e := &Experiment{Name: name, Groups: []Group{}, Pairs: []Pair{}}
	groups := map[string]*Group{}
	var order []string
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
		key := strings.Join([]string{s.Harness, s.Model, s.Task, latest.RateSource}, "\x00")
		g := groups[key]
		if g == nil {
			g = &Group{Harness: s.Harness, Model: s.Model, Task: s.Task, Source: latest.RateSource}
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
		return a.Source < b.Source
	})
	e.Pairs = pairs(e.Groups)
	return e
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
			if a.Model >= b.Model || a.Harness != b.Harness || a.Task != b.Task || a.Source != b.Source || a.Source == "" {
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", g.Harness, g.Model, g.Task, SourceName(g.Source), g.Slots, g.Attempts,
			strings.Join(reasons, ", "), fmtStatPct(g.Final, true), fmtStatPct(g.Best, false), strings.Join(reach, " · "),
			fmtStatNum(g.Parts, 0), fmtStatNum(g.Cost, 4))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	for _, p := range e.Pairs {
		fmt.Fprintf(w, "%s vs %s (%s, %s, %s): %d pairs, mean final difference %+.1f points; %s better %d, %s better %d, ties %d\n",
			p.A, p.B, p.Harness, p.Task, SourceName(p.Source), p.N, p.MeanDiff*100, p.A, p.AWins, p.B, p.BWins, p.Ties)
	}
	return nil
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
{{range .Groups}}<tr><td>{{.Harness}}</td><td>{{.Model}}</td><td>{{.Task}}</td><td>{{source .Source}}</td><td>{{.Slots}}</td><td>{{.Attempts}}</td><td>{{range .EndReasons}}{{.Label}} {{.N}}<br>{{end}}</td><td>{{stat .Final true}}</td><td>{{stat .Best false}}</td>{{range .Reach}}<td>{{reach .}}</td>{{end}}<td>{{num .Cost 4}}</td></tr>
{{end}}</tbody></table>
<h2>Score by part, repeats overlaid</h2>
<div class="grid-charts">{{range .Views}}<div class="card">{{.Chart}}</div>{{end}}</div>
<h2>Paired comparisons</h2>
<table><thead><tr><th>harness</th><th>task</th><th>scores from</th><th>model A</th><th>model B</th><th>pairs</th><th>mean A − B (points)</th><th>A better</th><th>B better</th><th>ties</th></tr></thead><tbody>
{{range .Pairs}}<tr><td>{{.Harness}}</td><td>{{.Task}}</td><td>{{source .Source}}</td><td>{{.A}}</td><td>{{.B}}</td><td>{{.N}}</td><td>{{diff .MeanDiff}}</td><td>{{.AWins}}</td><td>{{.BWins}}</td><td>{{.Ties}}</td></tr>
{{else}}<tr><td colspan="10" class="muted">no two models share a harness, task and score source</td></tr>{{end}}</tbody></table>
</body></html>
`))
