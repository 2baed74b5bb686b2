package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

func ptr(v float64) *float64 { return &v }

func row(id, source string, final float64, curve ...Point) *SummaryFile {
	return &SummaryFile{Trajectory: Trajectory{ID: id, EndReason: "part_limit", Parts: 100, PassRate: ptr(final), RateSource: source, ByPart: curve, Cost: ptr(1)},
		CostByPart: []CostPoint{{Part: 10, Cost: 0.1}, {Part: 50, Cost: 0.5}, {Part: 100, Cost: 1}}}
}

func TestBuildExperiment(t *testing.T) {
	slots := []ExperimentSlot{
		{Harness: "opencode", Model: "m/a", Task: "cc", Repeat: 1, Attempts: []string{"a1", "a1-a2"}},
		{Harness: "opencode", Model: "m/a", Task: "cc", Repeat: 2, Attempts: []string{"a2", "a2-a2"}},
		{Harness: "opencode", Model: "m/b", Task: "cc", Repeat: 1, Attempts: []string{"b1", "b1-a2"}},
		{Harness: "opencode", Model: "m/b", Task: "cc", Repeat: 2, Attempts: []string{"b2", "b2-a2"}},
		{Harness: "opencode", Model: "m/b", Task: "cc", Repeat: 3, Attempts: []string{"b3", "b3-a2"}},
		{Harness: "opencode", Model: "m/b", Task: "cc", Repeat: 4, Attempts: []string{"b4", "b4-a2"}},
	}
	byID := map[string]*SummaryFile{
		// a1 failed once, then its second attempt scored.
		"a1":    {Trajectory: Trajectory{ID: "a1", EndReason: "agent_error"}},
		"a1-a2": row("a1-a2", FromRunTests, 0.6, Point{10, 0.3}, Point{50, 0.6}),
		"a2":    row("a2", FromRunTests, 1.0, Point{10, 0.5}, Point{100, 1}),
		"b1":    row("b1", FromRunTests, 0.2, Point{50, 0.2}),
		"b2":    row("b2", FromRunTests, 1.0, Point{10, 1}),
		// b3 was evaluated offline: its score must not be averaged with the others.
		"b3": row("b3", FromEvaluation, 0.9, Point{50, 0.9}),
		// b4 never started.
	}
	e := buildExperiment("x", slots, byID, ExperimentOptions{})
	if e.Trajectories != 6 || len(e.NotStarted) != 1 || e.NotStarted[0] != "b4" {
		t.Fatalf("trajectories %d, not started %v", e.Trajectories, e.NotStarted)
	}
	if len(e.Groups) != 3 {
		t.Fatalf("want 3 groups (m/a trace, m/b evaluation, m/b trace), got %+v", e.Groups)
	}
	ga, gbEval, gbTrace := e.Groups[0], e.Groups[1], e.Groups[2]
	if ga.Model != "m/a" || ga.Slots != 2 || ga.Attempts != 3 {
		t.Errorf("m/a group: %+v", ga)
	}
	if ga.Final.Mean != 0.8 || ga.Final.Min != 0.6 || ga.Final.Max != 1 || ga.Final.SD < 0.28 || ga.Final.SD > 0.29 {
		t.Errorf("m/a final: %+v", *ga.Final)
	}
	// 25 %: both at part 10 (a1-a2 0.3, a2 0.5); 50 %: parts 50 and 10; 100 %: only a2, at 100.
	if r := ga.Reach[0]; r.Reached != 2 || *r.MeanParts != 10 || *r.MeanCost != 0.1 {
		t.Errorf("reach 25: %+v", r)
	}
	if r := ga.Reach[1]; r.Reached != 2 || *r.MeanParts != 30 {
		t.Errorf("reach 50: %+v", r)
	}
	if r := ga.Reach[3]; r.Reached != 1 || r.Of != 2 || *r.MeanParts != 100 || *r.MeanCost != 1 {
		t.Errorf("reach 100: %+v", r)
	}
	if gbEval.Source != FromEvaluation || gbEval.Slots != 1 || gbTrace.Source != FromRunTests || gbTrace.Slots != 2 {
		t.Errorf("sources mixed: %+v / %+v", gbEval, gbTrace)
	}
	// Paired by repeat, same source only: a vs b on repeats 1 and 2.
	if len(e.Pairs) != 1 {
		t.Fatalf("pairs: %+v", e.Pairs)
	}
	p := e.Pairs[0]
	if p.A != "m/a" || p.B != "m/b" || p.N != 2 || p.AWins != 1 || p.Ties != 1 || p.MeanDiff < 0.199 || p.MeanDiff > 0.201 {
		t.Errorf("pair: %+v", p)
	}
	var text, html bytes.Buffer
	if err := WriteExperimentText(&text, e); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"offline evaluation", "agent's run_tests", "80.0%±28.3 [60.0–100.0]", "m/a vs m/b", "1 not started"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	if err := WriteExperimentHTML(&html, e); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(html.String(), "<svg"); n != 3 {
		t.Errorf("%d charts, want one per group", n)
	}
}

// TestHarnessComparison: three harnesses, each with its own script (a
// variant), two repeats: every two harnesses are compared, paired by task
// and repeat; a slot whose trajectory is a fork is left out of the
// statistics unless asked, and then counts.
func TestHarnessComparison(t *testing.T) {
	var slots []ExperimentSlot
	finals := map[string][]float64{"opencode": {0.5, 0.7}, "claude-code": {0.6, 0.6}, "codex": {0.2, 0.9}}
	byID := map[string]*SummaryFile{}
	for _, h := range []string{"opencode", "claude-code", "codex"} {
		for r := 1; r <= 2; r++ {
			id := fmt.Sprintf("%s-r%d", h, r)
			slots = append(slots, ExperimentSlot{Harness: h, Model: "scripted/demo", Task: "cc", Variant: "script=" + h + ".jsonl", Repeat: r, Attempts: []string{id}})
			byID[id] = row(id, FromGroundTruth, finals[h][r-1], Point{10, finals[h][r-1]})
		}
	}
	// codex's repeat 2 is a fork of another trajectory: not a sample.
	byID["codex-r2"].ForkedFrom = "elsewhere"
	e := buildExperiment("h", slots, byID, ExperimentOptions{})
	if len(e.Groups) != 3 || len(e.LeftOut) != 1 || e.LeftOut[0] != "codex-r2" {
		t.Fatalf("groups %d, left out %v", len(e.Groups), e.LeftOut)
	}
	got := map[string]HarnessPair{}
	for _, p := range e.Harnesses {
		got[p.A+"/"+p.B] = p
	}
	if len(got) != 3 {
		t.Fatalf("harness pairs %+v, want 3", e.Harnesses)
	}
	if p := got["claude-code/opencode"]; p.N != 2 || p.AWins != 1 || p.BWins != 1 || p.Models != "scripted/demo" || p.MeanDiff > 1e-9 || p.MeanDiff < -1e-9 {
		t.Errorf("claude-code vs opencode: %+v", p)
	}
	if p := got["codex/opencode"]; p.N != 1 || p.BWins != 1 || p.MeanA != 0.2 {
		t.Errorf("codex vs opencode without the fork: %+v", p)
	}
	var text, html bytes.Buffer
	if err := WriteExperimentText(&text, e); err != nil {
		t.Fatal(err)
	}
	if err := WriteExperimentHTML(&html, e); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"harness against harness, paired by task and repeat", "codex-r2", "opencode (script=opencode.jsonl)"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	if !strings.Contains(html.String(), `id="harness-comparison"`) || strings.Count(html.String(), "<td>codex</td>") < 1 {
		t.Errorf("HTML lacks the harness comparison table")
	}
	with := buildExperiment("h", slots, byID, ExperimentOptions{WithDerived: true})
	for _, p := range with.Harnesses {
		if p.A == "codex" && p.B == "opencode" && (p.N != 2 || p.AWins != 1) {
			t.Errorf("codex vs opencode with the fork: %+v", p)
		}
	}
	if len(with.LeftOut) != 0 {
		t.Errorf("WithDerived left out %v", with.LeftOut)
	}
}

// TestByHarnessLeavesOutDerived: the report's by-harness statistics do not
// count reruns and forks unless asked; the rows are still there.
func TestByHarnessLeavesOutDerived(t *testing.T) {
	r := Report{Trajectories: []Trajectory{
		{ID: "a", Harness: "codex", PassRate: ptr(0.5)},
		{ID: "a-rerun", Harness: "codex", PassRate: ptr(0.5), RerunOf: "a"},
		{ID: "a-fork", Harness: "codex", PassRate: ptr(1), ForkedFrom: "a"},
	}}
	h := r.ByHarness()[0]
	if h.Trajectories != 1 || h.LeftOut != 2 || *h.MeanPassRate != 0.5 {
		t.Errorf("by harness: %+v", h)
	}
	r.WithDerived = true
	if h := r.ByHarness()[0]; h.Trajectories != 3 || h.LeftOut != 0 {
		t.Errorf("by harness with reruns: %+v", h)
	}
}
