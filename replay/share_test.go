package replay_test

import (
	"context"
	"testing"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/replaytest"
)

// TestShareSplitsTrees: three shares of a trajectory's trees, each in its
// own Share as separate processes would, evaluate every tree once into the
// shared cache; running a share again evaluates nothing, and the final
// Evaluate is all cache hits with the scores of a plain one.
func TestShareSplitsTrees(t *testing.T) {
	ctx := context.Background()
	tj := replaytest.Build(t, "traj-share", replaytest.AttributionScript(), 4, true)
	parts, commits, err := replay.PartCommits(tj.Trace)
	if err != nil {
		t.Fatal(err)
	}
	cache := &replay.MemCache{}
	opts := replay.EvaluateOptions{TestPaths: []string{"basics", "extra"}, Workers: 2, Cache: cache}
	ev := &countingEvaluator{Evaluator: replaytest.TinyEnv{}}
	const n = 3
	var total int
	for task := range n {
		s, err := replay.NewShare(ctx, tj.Trace.TrajectoryID, parts, commits, openHistory(t, tj), ev, opts)
		if err != nil {
			t.Fatal(err)
		}
		if task == 0 {
			if m := s.Missing(ctx, nil); len(m) != 6 {
				t.Fatalf("missing before any share: %d trees, want 6", len(m))
			}
		}
		var mine []string
		for i, tree := range s.Plan.Trees {
			if i%n == task {
				mine = append(mine, tree)
			}
		}
		st, err := s.Evaluate(ctx, mine)
		if err != nil {
			t.Fatal(err)
		}
		if st.Evaluated != len(mine) || st.Cached != 0 || st.Failed != 0 {
			t.Fatalf("share %d: %+v, want %d evaluated", task, st, len(mine))
		}
		total += st.Evaluated
		again, err := s.Evaluate(ctx, mine)
		if err != nil || again.Evaluated != 0 || again.Cached != len(mine) {
			t.Fatalf("share %d again: %+v %v, want every tree cached", task, again, err)
		}
	}
	if total != 6 || ev.calls.Load() != 6 {
		t.Fatalf("shares evaluated %d trees in %d evaluations, want 6 and 6", total, ev.calls.Load())
	}
	s, err := replay.NewShare(ctx, tj.Trace.TrajectoryID, parts, commits, openHistory(t, tj), ev, opts)
	if err != nil {
		t.Fatal(err)
	}
	if m := s.Missing(ctx, nil); len(m) != 0 {
		t.Fatalf("missing after the shares: %v", m)
	}
	if _, err := s.Evaluate(ctx, []string{"0000000000000000000000000000000000000000"}); err == nil {
		t.Fatal("a tree not in the plan was accepted")
	}
	out, err := replay.Evaluate(ctx, tj.Trace, openHistory(t, tj), ev, opts)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := replay.Evaluate(ctx, tj.Trace, openHistory(t, tj), replaytest.TinyEnv{}, replay.EvaluateOptions{TestPaths: opts.TestPaths, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if out.Stats.CacheHits != 6 || ev.calls.Load() != 6 {
		t.Fatalf("final evaluate: %d cache hits, %d evaluations in all; want 6 and 6", out.Stats.CacheHits, ev.calls.Load())
	}
	for part, pe := range plain.PartEvaluations {
		if got := out.PartEvaluations[part]; got.Passed != pe.Passed || got.Total != pe.Total {
			t.Errorf("part %d: shared %d/%d, plain %d/%d", part, got.Passed, got.Total, pe.Passed, pe.Total)
		}
	}
}
