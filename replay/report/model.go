// Package report summarises trajectories for people: one row per
// trajectory (agent, model, parts, turns, end reason, duration, tokens,
// cost, latest pass rate per suite) and charts (pass rate by part, end
// reasons), written as a self-contained HTML page (inline CSS and SVG, no
// scripts, no network), CSV or JSON. Where a result holds the generated
// fresh suite beside public ones, the row carries the public − fresh gap
// per checkpoint (replay.FreshGap; JSON fresh_gap_by_part, a line in the page).
// The fork sweeps stored beside the trajectories (`traj sweep`,
// CollectSweeps) follow as value tables: per swept part the forks' value
// (mean, spread, share solved) and the decisive part (JSON sweeps).
// `traj report` is Run (run.go): a Request names the store, or an
// experiment's slots (ExperimentRequest, found by the orchestrator's
// experiment handler), the files and the label thresholds.
package report

import (
	"encoding/json"
	"slices"
	"sort"
	"time"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/labels"
	"github.com/trajlab/traj/replay/sweepvalue"
	"github.com/trajlab/traj/trace"
)

// Report is a set of trajectories.
type Report struct {
	Title        string       `json:"title"`
	Source       string       `json:"source,omitempty"`
	Trajectories []Trajectory `json:"trajectories"`
	// WithDerived counts reruns and forks in the group statistics (by
	// harness): by default they are left out, as a rerun repeats its
	// source and a fork inherits its source's parts, so neither is a new
	// sample. Every trajectory still has its own row.
	WithDerived bool `json:"with_reruns_and_forks,omitempty"`
	// Sweeps are the fork sweeps of the report's trajectories
	// (replay/sweepvalue, CollectSweeps).
	Sweeps []*sweepvalue.Result `json:"sweeps,omitempty"`
}

// Derived says whether t is a rerun or a fork of another trajectory.
func (t Trajectory) Derived() bool { return t.RerunOf != "" || t.ForkedFrom != "" }

// Trajectory is one trajectory's summary.
type Trajectory struct {
	ID string `json:"trajectory_id"`
	// Folder is where the trace was read: its store folder
	// (trajectories/<id>/) or its folder on disk.
	Folder string `json:"folder,omitempty"`
	// TraceID is the trace's own trajectory_id when it disagrees with the
	// name of its folder; ID is then the folder's name, so two folders
	// cannot pose as one trajectory.
	TraceID string `json:"trace_id,omitempty"`
	// Agent is the trace's agent field verbatim ("opencode@1.18.33");
	// Harness and HarnessVersion are it parsed by trace.ParseAgent, so rows
	// group by harness whatever version recorded them.
	Agent           string        `json:"agent"`
	Harness         string        `json:"harness"`
	HarnessVersion  string        `json:"harness_version,omitempty"`
	Model           string        `json:"model"`
	Task            string        `json:"task,omitempty"`
	Parts           int           `json:"parts"`
	Turns           int           `json:"turns"`
	EndReason       string        `json:"end_reason"`
	StartedAt       string        `json:"started_at"`
	EndedAt         string        `json:"ended_at,omitempty"`
	DurationSeconds *float64      `json:"duration_seconds"`
	Tokens          *trace.Tokens `json:"tokens"`
	Cost            *float64      `json:"cost"`
	// TokensSource says whose totals Tokens and Cost are: "model_gateway"
	// (the model-call record's sums) or absent (older traces: the harness's); the
	// harness's own counts and the gateway's usage no part claims beside.
	TokensSource  string              `json:"tokens_source,omitempty"`
	HarnessTokens *trace.Tokens       `json:"harness_tokens,omitempty"`
	HarnessCost   *float64            `json:"harness_cost,omitempty"`
	Unattributed  *trace.Unattributed `json:"unattributed,omitempty"`
	// Suites is the latest pass rate per suite (test path).
	Suites []SuiteRate `json:"suites"`
	// PassRate is the latest overall pass rate over Suites; nil when no
	// test results are known.
	PassRate *float64 `json:"pass_rate"`
	// RateSource says where the rates come from: FromEvaluation, else
	// FromGroundTruth, else FromRunTests (see Choose).
	RateSource string `json:"rate_source,omitempty"`
	// BestRate is the highest pass rate, first reached at BestPart;
	// SolvedAt is the first part whose result passed every case (0: none).
	BestRate *float64 `json:"best_pass_rate"`
	BestPart int      `json:"best_part,omitempty"`
	SolvedAt int      `json:"solved_at,omitempty"`
	// SuspectPart is the first part whose result had cases that did what
	// a program ignoring its input does (Series.FixedLike); FixedLike is
	// their count at the latest result. A compiler that falls back to a
	// fixed program where it cannot compile shows here, not in its score.
	SuspectPart int `json:"suspect_part,omitempty"`
	FixedLike   int `json:"fixed_like,omitempty"`
	// ByPart is the overall pass rate after each part that has one.
	ByPart []Point `json:"pass_rate_by_part"`
	// SuiteByPart is the pass rate by part per suite.
	SuiteByPart map[string][]Point `json:"suite_pass_rate_by_part,omitempty"`
	// FreshGap is the public suites' pass rate minus the fresh suite's at
	// each part whose result has both (report.FreshSuite): a large gap
	// says the compiler fits the public tests rather than the language.
	FreshGap []Point `json:"fresh_gap_by_part,omitempty"`
	// AgentByPart and AgentSuites are what the agent's own run_tests calls
	// claimed: a separate series, never the score when another source
	// exists.
	AgentByPart []Point     `json:"agent_run_tests_by_part,omitempty"`
	AgentSuites []SuiteRate `json:"agent_run_tests_suites,omitempty"`
	// Regressions are the evaluation's pass → fail transitions.
	Regressions []replay.Regression `json:"regressions,omitempty"`
	// RerunOf and ForkedFrom name the trajectory this one reran or
	// branched from (the trace's lineage); ForkPart is the fork point:
	// parts 1..ForkPart are the source's.
	RerunOf    string `json:"rerun_of,omitempty"`
	ForkedFrom string `json:"forked_from,omitempty"`
	ForkPart   int    `json:"fork_part,omitempty"`
	// Labels are the failure labels (replay/labels) with their evidence:
	// the evaluation report's when it holds them, else computed with the
	// default thresholds (`traj report --labels` computes them again).
	Labels []labels.Label `json:"labels,omitempty"`
}

// SuiteRate is one suite's latest counts.
type SuiteRate struct {
	Suite  string  `json:"suite"`
	Passed int     `json:"passed"`
	Total  int     `json:"total"`
	Rate   float64 `json:"rate"`
	// Part is the part the counts are from.
	Part int `json:"part"`
}

// Point is a pass rate at a part.
type Point struct {
	Part int     `json:"part"`
	Rate float64 `json:"rate"`
}

// Summarize builds a trajectory's row from its trace and, when given, its
// evaluate report (which then supplies the pass rates).
func Summarize(tr *trace.Trace, ev *replay.Output) Trajectory {
	agent := trace.ParseAgent(tr.Agent)
	t := Trajectory{
		ID: tr.TrajectoryID, Agent: tr.Agent, Model: tr.AgentModel, Task: tr.Task,
		Harness: agent.Name, HarnessVersion: agent.Version,
		Turns: len(tr.Turns), StartedAt: tr.StartedAt, Suites: []SuiteRate{}, ByPart: []Point{},
	}
	if l := tr.RerunOf; l != nil {
		t.RerunOf = l.TrajectoryID
	}
	if l := tr.ForkedFrom; l != nil {
		t.ForkedFrom, t.ForkPart = l.TrajectoryID, l.Part
	}
	var usage trace.Usage
	lastTime := ""
	for _, turn := range tr.Turns {
		for _, p := range turn.Parts {
			t.Parts++
			usage.AddPart(&p)
			if p.Timestamp != "" {
				lastTime = p.Timestamp
			}
		}
	}
	if se := tr.SessionEnd; se != nil {
		t.EndReason = se.Reason
		t.EndedAt = se.EndedAt
		if se.TotalTurns > 0 {
			t.Turns = se.TotalTurns
		}
	} else {
		t.EndReason = "running"
	}
	usage.End(tr.SessionEnd)
	t.Tokens, t.Cost = usage.Tokens(), usage.Cost()
	if usage.FromGateway() {
		t.TokensSource = "model_gateway"
		t.HarnessTokens, t.HarnessCost, t.Unattributed = usage.HarnessTokens(), usage.HarnessCost(), usage.Unattributed()
	}
	end := t.EndedAt
	if end == "" {
		end = lastTime
	}
	if d, ok := duration(t.StartedAt, end); ok {
		t.DurationSeconds = &d
	}
	sc := TraceScores(tr)
	if ev != nil {
		sc.Score = EvaluationSeries(ev)
	}
	t.setScores(sc)
	if ev != nil {
		t.Regressions = replay.Regressions(ev.TestAttribution)
	}
	t.Labels = labelsOf(tr, ev)
	return t
}

// setScores fills t's rates from sc.
func (t *Trajectory) setScores(sc Scores) {
	s := sc.Score
	t.RateSource, t.ByPart, t.SolvedAt, t.BestRate, t.BestPart, t.PassRate = "", []Point{}, 0, nil, 0, nil
	t.SuspectPart, t.FixedLike = 0, 0
	t.Suites, t.SuiteByPart, t.FreshGap = []SuiteRate{}, nil, nil
	if !s.Empty() {
		t.RateSource, t.ByPart, t.Suites, t.SolvedAt, t.FreshGap = s.Source, s.Points, s.Latest, s.SolvedAt, s.FreshGap
		if len(s.Suites) > 0 {
			t.SuiteByPart = s.Suites
		}
		r, _ := s.Rate()
		t.PassRate = &r
		b, part, _ := s.Best()
		t.BestRate, t.BestPart = &b, part
	}
	t.SuspectPart, t.FixedLike = s.Suspect()
	t.AgentByPart, t.AgentSuites = nil, nil
	if !sc.Agent.Empty() {
		t.AgentByPart, t.AgentSuites = sc.Agent.Points, sc.Agent.Latest
	}
}

func duration(start, end string) (float64, bool) {
	s, err1 := time.Parse(time.RFC3339Nano, start)
	e, err2 := time.Parse(time.RFC3339Nano, end)
	if err1 != nil || err2 != nil || e.Before(s) {
		return 0, false
	}
	return e.Sub(s).Seconds(), true
}

// TraceRates follows a trajectory's pass rates through its run_tests
// calls: the latest result per suite (test path), and the overall rate over
// the latest result of every suite seen so far. The report and the viewer
// both score a trajectory without an evaluation this way.
type TraceRates struct {
	latest map[string]SuiteRate
}

// Add records one call's result (s.Part is the part that made it).
func (r *TraceRates) Add(s SuiteRate) {
	if r.latest == nil {
		r.latest = map[string]SuiteRate{}
	}
	r.latest[s.Suite] = s
}

// Rate is the overall pass rate now; ok is false before any result.
func (r *TraceRates) Rate() (rate float64, ok bool) {
	if len(r.latest) == 0 {
		return 0, false
	}
	passed, total := 0, 0
	for _, s := range r.latest {
		passed += s.Passed
		total += s.Total
	}
	return replay.PassRate(passed, total), true
}

// Suites is the latest result per suite, by suite name.
func (r *TraceRates) Suites() []SuiteRate {
	out := make([]SuiteRate, 0, len(r.latest))
	for _, s := range r.latest {
		out = append(out, s)
	}
	sortSuites(out)
	return out
}

// ParseCall reads one run_tests call as a suite result (Part unset); ok is
// false for a call without counts.
func ParseCall(c trace.EnvoiCall) (SuiteRate, bool) {
	passed, _, total, ok := c.Counts()
	if !ok {
		return SuiteRate{}, false
	}
	suite := c.Path
	if suite == "" {
		var r struct {
			Path string `json:"path"`
		}
		_ = json.Unmarshal(c.Result, &r)
		suite = r.Path
	}
	if suite == "" {
		suite = "all"
	}
	return SuiteRate{Suite: suite, Passed: passed, Total: total, Rate: replay.PassRate(passed, total)}, true
}

func sortSuites(s []SuiteRate) {
	sort.Slice(s, func(i, j int) bool { return s[i].Suite < s[j].Suite })
}

// EndReasons counts trajectories per end reason, most frequent first.
func (r Report) EndReasons() []Count {
	m := map[string]int{}
	for _, t := range r.Trajectories {
		m[t.EndReason]++
	}
	out := make([]Count, 0, len(m))
	for k, v := range m {
		out = append(out, Count{Label: k, N: v})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].N != out[j].N {
			return out[i].N > out[j].N
		}
		return out[i].Label < out[j].Label
	})
	return out
}

// HarnessRow is one harness's trajectories in a report: how many, the
// versions that recorded them, and their latest pass rates.
type HarnessRow struct {
	Harness      string   `json:"harness"`
	Versions     []string `json:"versions"`
	Trajectories int      `json:"trajectories"`
	// Scored is how many have a pass rate; MeanPassRate is over those.
	Scored       int      `json:"scored"`
	MeanPassRate *float64 `json:"mean_pass_rate"`
	Solved       int      `json:"solved"`
	// LeftOut counts the reruns and forks not in the row's statistics
	// (Report.WithDerived).
	LeftOut int `json:"reruns_and_forks_left_out,omitempty"`
}

// ByHarness groups r's trajectories by harness name (not by the raw agent
// field, which carries the version), most trajectories first.
func (r Report) ByHarness() []HarnessRow {
	idx := map[string]int{}
	var rows []HarnessRow
	sums := []float64{}
	for _, t := range r.Trajectories {
		name := t.Harness
		if name == "" {
			name = trace.ParseAgent(t.Agent).Name
		}
		i, ok := idx[name]
		if !ok {
			i = len(rows)
			idx[name] = i
			rows = append(rows, HarnessRow{Harness: name, Versions: []string{}})
			sums = append(sums, 0)
		}
		h := &rows[i]
		if t.Derived() && !r.WithDerived {
			h.LeftOut++
			continue
		}
		h.Trajectories++
		if v := t.HarnessVersion; v != "" && !slices.Contains(h.Versions, v) {
			h.Versions = append(h.Versions, v)
		}
		if t.PassRate != nil {
			h.Scored++
			sums[i] += *t.PassRate
		}
		if t.SolvedAt > 0 {
			h.Solved++
		}
	}
	for i := range rows {
		sort.Strings(rows[i].Versions)
		if rows[i].Scored > 0 {
			m := sums[i] / float64(rows[i].Scored)
			rows[i].MeanPassRate = &m
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].Trajectories != rows[j].Trajectories {
			return rows[i].Trajectories > rows[j].Trajectories
		}
		return rows[i].Harness < rows[j].Harness
	})
	return rows
}

// Count is a labelled number.
type Count struct {
	Label string `json:"label"`
	N     int    `json:"n"`
}
