package replay_test

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/trajlab/traj/environment/ccompiler"
	"github.com/trajlab/traj/environment/evaluation"
	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/replaytest"
)

// The real C-compiler environment on a trajectory whose workspace's ./cc
// wraps gcc: a test passes at part 3, breaks at 5 and is fixed at 8.
func TestEvaluateWithCCompilerEnvironment(t *testing.T) {
	env, err := ccompiler.New(ccompiler.Config{})
	if err != nil {
		t.Fatal(err)
	}
	tj := replaytest.Build(t, "traj-cc", replaytest.AttributionScriptBreaking("for_loop"), 3, true)
	h := openHistory(t, tj)
	ev := &countingEvaluator{Evaluator: &evaluation.EnvironmentEvaluator{Env: env, TreeWorkers: 2}}
	out, err := replay.Evaluate(context.Background(), tj.Trace, h, ev, replay.EvaluateOptions{
		TestPaths: []string{"basics/control_flow"}, Workers: 2, Cache: &replay.MemCache{},
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := ev.calls.Load(); n != 6 {
		t.Fatalf("evaluated %d trees, want 6", n)
	}
	const id = "basics/control_flow/for_loop.c"
	a := out.TestAttribution[id]
	if a == nil {
		t.Fatalf("no attribution for %s; have %v", id, slices.Collect(maps.Keys(out.TestAttribution)))
	}
	if a.FirstPassPart == nil || *a.FirstPassPart != 3 || !slices.Equal(a.BrokenAt, []int{5}) || !slices.Equal(a.FixedAt, []int{8}) {
		t.Fatalf("%s: %+v", id, a)
	}
	pe := out.PartEvaluations[5]
	if pe.Total < 2 || pe.Passed != pe.Total-1 {
		t.Fatalf("part 5: %d/%d passed, want all but one", pe.Passed, pe.Total)
	}
	if p1 := out.PartEvaluations[1]; p1.Passed != 0 || p1.Suites["basics/control_flow"].Error == "" {
		t.Fatalf("part 1 (no build.sh): %+v", p1)
	}
}

func TestDefaultTestPaths(t *testing.T) {
	env, err := ccompiler.New(ccompiler.Config{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		recorded, available, want []string
	}{
		{[]string{"basics/smoke"}, env.TestPaths(), []string{"basics/smoke"}},
		// fresh is generated (gcc its oracle): there whenever gcc is.
		{nil, env.TestPaths(), []string{"basics", "fresh"}},
		{nil, []string{"all", "basics", "basics/smoke", "c_testsuite", "c_testsuite/part_1", "torture", "torture/part_1", "wacct"}, []string{"basics", "c_testsuite", "wacct"}},
	}
	for _, tt := range tests {
		if got := evaluation.DefaultTestPaths(tt.recorded, tt.available); !slices.Equal(got, tt.want) {
			t.Errorf("DefaultTestPaths(%v, …) = %v, want %v", tt.recorded, got, tt.want)
		}
	}
}
