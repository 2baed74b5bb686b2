package labels_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/labels"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/tracetest"
)

// opts are the thresholds every case below is labelled with: one set,
// so each case shows its own label and no other under the same rules.
var opts = labels.Options{PlateauParts: 6, StallMinutes: 10, RegressionRounds: 2, ImprovingParts: 3}

// basics returns ground truth on "basics" (10 cases) for each part:
// passed[i] cases at part i+1 (-1: no result at that part).
func basics(passed ...int64) map[int][]trace.GroundTruth {
	m := map[int][]trace.GroundTruth{}
	for i, p := range passed {
		if p >= 0 {
			m[i+1] = []trace.GroundTruth{tracetest.GroundTruth(i+1, tracetest.Suite("basics", p, 10))}
		}
	}
	return m
}

// say makes part n a text part saying text.
func say(n int, text string) func(*trace.Part) {
	return func(p *trace.Part) {
		if p.Part != n {
			return
		}
		p.Content, _ = json.Marshal(map[string]any{"id": p.PartID, "type": "text", "messageID": p.MessageID, "sessionID": "ses_root", "text": text})
	}
}

// late puts parts from n on minutes later.
func late(n int, minutes int) func(*trace.Part) {
	return func(p *trace.Part) {
		if p.Part >= n {
			at, _ := time.Parse(time.RFC3339Nano, p.Timestamp)
			p.Timestamp = trace.Timestamp(at.Add(time.Duration(minutes) * time.Minute))
		}
	}
}

// Cases are one trajectory per label that must get exactly that label,
// and a clean one ("") that gets none.
func Cases() []struct {
	Name, Want string
	Part       int
	Spec       tracetest.Spec
} {
	fixed := basics(3, 10)
	fixed[2][0].FixedLike = 2
	gap := map[int][]trace.GroundTruth{
		1: {tracetest.GroundTruth(1, tracetest.Suite("basics", 3, 10), tracetest.Suite("fresh", 1, 10))},
		2: {tracetest.GroundTruth(2, tracetest.Suite("basics", 10, 10), tracetest.Suite("fresh", 2, 10))},
	}
	return []struct {
		Name, Want string
		Part       int
		Spec       tracetest.Spec
	}{
		{"clean", "", 0, tracetest.Spec{Turns: []int{5}, GroundTruth: basics(2, 4, 6, 8, 10), End: trace.EndSolved}},
		{"premature", labels.PrematureStop, 3, tracetest.Spec{Turns: []int{3, 3}, GroundTruth: basics(2, 4, 5, 7, 9, 10), End: trace.EndSolved}},
		{"infeasible", labels.DeclaredInfeasible, 3, tracetest.Spec{Turns: []int{4}, GroundTruth: basics(2, 4, 6, 10), End: trace.EndSolved,
			Edit: say(3, "The preprocessor is too much: I cannot finish it in the budget.")}},
		{"regression", labels.RegressionLoop, 6, tracetest.Spec{Turns: []int{7}, GroundTruth: basics(4, 6, 3, 6, 2, 7, 10), End: trace.EndSolved}},
		{"plateau", labels.Plateau, 2, tracetest.Spec{Turns: []int{10}, GroundTruth: basics(2, 5, -1, -1, -1, -1, -1, -1, -1, 10), End: trace.EndSolved}},
		{"stall-gap", labels.Stall, 3, tracetest.Spec{Turns: []int{4}, GroundTruth: basics(3, 6, 8, 10), End: trace.EndSolved, Edit: late(3, 20)}},
		// The wait before a turn is traj's (ground truth, the next prompt):
		// 20 minutes there is no stall.
		{"wait-between-turns", labels.PrematureStop, 3, tracetest.Spec{Turns: []int{3, 3}, GroundTruth: basics(2, 4, 5, 7, 9, 10), End: trace.EndSolved, Edit: late(4, 20)}},
		{"stall-end", labels.Stall, 2, tracetest.Spec{Turns: []int{2}, GroundTruth: basics(3, 10), End: trace.EndAgentError,
			EndDetail: "stalled: no new part for 10m0s in turn 1, again after sending the turn once more"}},
		{"lost", labels.PassingThenLost, 4, tracetest.Spec{Turns: []int{8}, GroundTruth: basics(4, 8, 10, 6), End: trace.EndPartLimit}},
		{"improving", labels.BudgetExhaustedImproving, 6, tracetest.Spec{Turns: []int{6}, GroundTruth: basics(2, 3, 4, 5, 6, 7), End: trace.EndPartLimit}},
		{"suspect-fixed", labels.Suspect, 2, tracetest.Spec{Turns: []int{2}, GroundTruth: fixed, End: trace.EndSolved}},
		{"suspect-gap", labels.Suspect, 2, tracetest.Spec{Turns: []int{6}, GroundTruth: gap, End: trace.EndPartLimit}},
	}
}

func TestEachLabelAlone(t *testing.T) {
	for _, c := range Cases() {
		t.Run(c.Name, func(t *testing.T) {
			got := labels.Compute(tracetest.Build(c.Spec), nil, opts)
			if c.Want == "" {
				if len(got) != 0 {
					t.Fatalf("clean trajectory labelled %+v", got)
				}
				return
			}
			if len(got) != 1 || got[0].Label != c.Want || got[0].Part != c.Part || got[0].Evidence == "" {
				t.Fatalf("want only %s at part %d with evidence, got %+v", c.Want, c.Part, got)
			}
			// The streamed trace gives the same labels as the one in memory.
			path := tracetest.WriteDir(t, t.TempDir(), c.Spec)
			streamed, err := labels.ComputeFile(path, nil, opts)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(streamed, got) {
				t.Fatalf("streamed %+v, in memory %+v", streamed, got)
			}
		})
	}
}

// TestThresholdsDecide: the same trajectory is or is not labelled as the
// threshold says, and the defaults are documented values.
func TestThresholdsDecide(t *testing.T) {
	plateau := Cases()[4].Spec
	if got := labels.Compute(tracetest.Build(plateau), nil, labels.Options{PlateauParts: 9}); len(got) != 0 {
		t.Fatalf("plateau of 8 parts labelled at threshold 9: %+v", got)
	}
	if got := labels.Compute(tracetest.Build(plateau), nil, labels.Options{PlateauParts: 8}); len(got) != 1 || got[0].Label != labels.Plateau {
		t.Fatalf("plateau of 8 parts at threshold 8: %+v", got)
	}
	d := labels.Defaults()
	if d.PlateauParts != 50 || d.PlateauHours != 2 || d.StallMinutes != 15 || d.RegressionRounds != 2 || d.ImprovingParts != 20 || d.GapThreshold != 0.25 {
		t.Fatalf("defaults changed without the doc: %+v", d)
	}
	// A phrase list replaces the default one.
	inf := Cases()[2].Spec
	if got := labels.Compute(tracetest.Build(inf), nil, labels.Options{Phrases: []string{"out of ideas"}}); len(got) != 0 {
		t.Fatalf("own phrase list still matched the default: %+v", got)
	}
}

// TestEvaluationIsTheScore: with an evaluation report, its per-part
// results are the score, not the ground truth recorded in the run.
func TestEvaluationIsTheScore(t *testing.T) {
	spec := Cases()[0].Spec // clean by its ground truth
	ev := &replay.Output{PartEvaluations: replay.PartMap[*replay.PartEvaluation]{}}
	for part, passed := range map[int]int{1: 2, 2: 9, 3: 9, 4: 5, 5: 5} {
		ev.PartEvaluations[part] = &replay.PartEvaluation{Passed: passed, Failed: 10 - passed, Total: 10,
			Suites: map[string]replay.SuiteSummary{"basics": {Passed: passed, Total: 10}}}
	}
	got := labels.Compute(tracetest.Build(spec), ev, opts)
	if len(got) != 1 || got[0].Label != labels.PassingThenLost || !strings.Contains(got[0].Evidence, "best 9/10 at part 2") {
		t.Fatalf("want passing_then_lost from the evaluation, got %+v", got)
	}
}

// TestSampledBesideFull: a sampled ground truth is no score when a full
// one exists (its sample passing whole is not the suite passing), so it
// cannot make work look lost.
func TestSampledBesideFull(t *testing.T) {
	sampled := tracetest.GroundTruth(2, tracetest.Suite("basics", 5, 5))
	sampled.Sampled = true
	gt := map[int][]trace.GroundTruth{2: {sampled}, 4: {tracetest.GroundTruth(4, tracetest.Suite("basics", 6, 10))}, 5: {tracetest.GroundTruth(5, tracetest.Suite("basics", 7, 10))}}
	if got := labels.Compute(tracetest.Build(tracetest.Spec{Turns: []int{5}, GroundTruth: gt, End: trace.EndAgentError}), nil, opts); len(got) != 0 {
		t.Fatalf("a sampled result beside full ones labelled %+v", got)
	}
	// Sampled alone is the score.
	gt = map[int][]trace.GroundTruth{2: {sampled}, 4: {sampled}}
	gt[4][0].Part, gt[4][0].Passed, gt[4][0].Failed = 4, 3, 2
	got := labels.Compute(tracetest.Build(tracetest.Spec{Turns: []int{5}, GroundTruth: gt, End: trace.EndAgentError}), nil, opts)
	if len(got) != 1 || got[0].Label != labels.PassingThenLost {
		t.Fatalf("sampled results alone: %+v", got)
	}
}
