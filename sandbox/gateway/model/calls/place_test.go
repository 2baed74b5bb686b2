package calls

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/trajlab/traj/trace"
)

func before(n int) *int { return &n }

// raceLagged is failure injection: calls whose parts_before lag the
// trace's attribution by one or two, as a harness that asks for its next
// answer the instant a command ends, before traj recorded that part
// (Codex on a loaded machine), leaves them. Parts 1..3 came from call 1,
// 4..5 from call 2 (its parts_before says 1: two short), 6 from call 4
// (says 4: one short); call 3 is a side request no part names (says 0,
// recorded between calls 2 and 4).
func raceLagged() ([]Call, []int) {
	cs := []Call{
		{Seq: 1, PartsBefore: before(0)},
		{Seq: 2, PartsBefore: before(1)},
		{Seq: 3, PartsBefore: before(0)},
		{Seq: 4, PartsBefore: before(4)},
	}
	return cs, []int{1, 1, 1, 2, 2, 4}
}

// TestPlacementRaceLagged attacks the fork and comparison with
// parts_before that lag: each call is placed by the parts the trace
// attributes to it, so a fork at part P plays exactly the calls whose
// parts are all ≤ P, the fork point is the end of P's response, and the
// response ends are 3 and 5.
func TestPlacementRaceLagged(t *testing.T) {
	cs, attributed := raceLagged()
	pl := PlaceParts(attributed)
	for _, tc := range []struct {
		p      int
		fork   int   // the fork point of a fork at p
		played []int // the seqs a fork at p plays
	}{
		{p: 1, fork: 3, played: []int{1}},
		{p: 2, fork: 3, played: []int{1}},
		{p: 3, fork: 3, played: []int{1}},
		{p: 4, fork: 5, played: []int{1, 2, 3}},
		{p: 5, fork: 5, played: []int{1, 2, 3}},
		{p: 6, fork: 6, played: []int{1, 2, 3, 4}},
	} {
		fork := pl.ForkPoint(cs, tc.p, 6)
		var played []int
		for _, c := range cs {
			if pl.StartedBefore(c, fork) {
				played = append(played, c.Seq)
			}
		}
		if fork != tc.fork || !slices.Equal(played, tc.played) {
			t.Errorf("fork at part %d: point %d plays %v; want %d, %v", tc.p, fork, played, tc.fork, tc.played)
		}
	}
	if ends := pl.Ends(cs); len(ends) != 2 || !ends[3] || !ends[5] {
		t.Errorf("response ends %v, want 3 and 5", ends)
	}
	// The side request (seq 3, parts_before 0) is placed no earlier than
	// call 2 started, which was recorded before it.
	if n, _ := pl.Before(cs[2]); n != 3 {
		t.Errorf("side request placed after %d parts, want 3", n)
	}
}

// TestPlacementOldTrace: a trace without the attribution (recorded
// before it) keeps reading: parts_before places each call; a call
// without one is never played by a fork.
func TestPlacementOldTrace(t *testing.T) {
	cs := []Call{{Seq: 1, PartsBefore: before(0)}, {Seq: 2, PartsBefore: before(2)}, {Seq: 3}}
	pl := PlaceParts([]int{0, 0, 0})
	if pl.Attributed() {
		t.Fatal("a trace naming no call counts as attributed")
	}
	if got := pl.ForkPoint(cs, 1, 4); got != 2 {
		t.Errorf("fork point %d, want 2", got)
	}
	if !pl.StartedBefore(cs[0], 2) || pl.StartedBefore(cs[1], 2) || pl.StartedBefore(cs[2], 9) {
		t.Error("parts_before not followed")
	}
	if ends := pl.Ends(cs); len(ends) != 1 || !ends[2] {
		t.Errorf("response ends %v, want 2", ends)
	}
}

// TestPlace reads the attribution from a trace file: its parts'
// model_call.seq, in part order across turns, 0 for a part with none.
func TestPlace(t *testing.T) {
	pc := func(seq int) *trace.PartCall { return &trace.PartCall{Seq: seq} }
	tr := trace.Trace{TrajectoryID: "t", Agent: "codex", Turns: []trace.Turn{
		{Turn: 1, Parts: []trace.Part{{Part: 1, PartType: "text"}, {Part: 2, PartType: "text", ModelCall: pc(1)}}},
		{Turn: 2, Parts: []trace.Part{{Part: 3, PartType: "text", ModelCall: pc(2)}, {Part: 4, PartType: "text", ModelCall: pc(2)}}},
	}}
	b, _ := json.Marshal(tr)
	path := filepath.Join(t.TempDir(), "agent_trace.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	pl, err := Place(path)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := pl.Before(Call{Seq: 2, PartsBefore: before(1)}); n != 2 {
		t.Errorf("call 2 placed after %d parts, want 2", n)
	}
	if _, err := Place(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("a missing trace placed")
	}
	if pl, err := Place(""); err != nil || pl.Attributed() {
		t.Errorf("no trace: %v, %v", pl, err)
	}
}
