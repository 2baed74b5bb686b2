package export

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/labels"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/ref"
	"github.com/trajlab/traj/trace/tracetest"
)

// TestFinalAndBest: the lean decode of a report's part evaluations keeps
// what the whole map gives the trajectories table: the highest part's
// evaluation and the first part without error at the best pass rate
// (ties, errors and parts out of numeric order in the map).
func TestFinalAndBest(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 0))
	for range 200 {
		full := replay.PartMap[*replay.PartEvaluation]{}
		for range 1 + rng.IntN(40) {
			pe := &replay.PartEvaluation{Commit: "c", PassRate: float64(rng.IntN(4)) / 4}
			if rng.IntN(5) == 0 {
				pe.Error, pe.PassRate = "build failed", 1
			}
			full[1+rng.IntN(100)] = pe
		}
		data, err := json.Marshal(full)
		if err != nil {
			t.Fatal(err)
		}
		var lean finalAndBest
		if err := json.Unmarshal(data, &lean); err != nil {
			t.Fatal(err)
		}
		keys := full.Keys()
		last := keys[len(keys)-1]
		if got := lean.m[last]; got == nil || !reflect.DeepEqual(got, full[last]) {
			t.Fatalf("final: part %d is %+v, want %+v", last, got, full[last])
		}
		best := -1
		for _, k := range keys {
			if pe := full[k]; pe.Error == "" && (best < 0 || pe.PassRate > full[best].PassRate) {
				best = k
			}
		}
		for k := range lean.m {
			if k != last && k != best {
				t.Fatalf("kept part %d besides the final %d and best %d", k, last, best)
			}
		}
		if best >= 0 && (lean.m[best] == nil || !reflect.DeepEqual(lean.m[best], full[best])) {
			t.Fatalf("best: part %d is %+v, want %+v", best, lean.m[best], full[best])
		}
	}
}

// TestLoadEvaluationLean: a report with stored labels is read lean (the
// final and best part evaluations, every commit evaluation, its labels);
// one without them is read whole, for the labels computed from it.
func TestLoadEvaluationLean(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lean")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tracetest.Write(t, filepath.Join(dir, store.TraceName), tracetest.Spec{TrajectoryID: "lean", Turns: []int{4}, End: trace.EndSolved})
	parts := replay.PartMap[*replay.PartEvaluation]{
		1: {Commit: "a", PassRate: 0.5}, 2: {Commit: "b", PassRate: 0.75}, 3: {Commit: "c", PassRate: 0.75}, 4: {Commit: "d", PassRate: 0.25}}
	set, _ := labels.Marshal([]labels.Label{{Label: labels.PassingThenLost, Part: 4}}, labels.Options{})
	for _, stored := range []bool{true, false} {
		out := &replay.Output{TrajectoryID: "lean", PartEvaluations: parts, PartToCommit: replay.PartMap[string]{1: "a", 2: "b", 3: "c", 4: "d"},
			CommitEvaluations: map[string]*replay.CommitEvaluation{"a": {Tree: "ta", Parts: []int{1}}}}
		if stored {
			out.Labels = set
		}
		data, err := replay.MarshalIndent(out)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, store.EvaluationName), data, 0o644); err != nil {
			t.Fatal(err)
		}
		tr, err := ref.Resolve(context.Background(), dir, "", ref.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ev, err := loadEvaluation(context.Background(), tr)
		if err != nil {
			t.Fatal(err)
		}
		want := []int{1, 2, 3, 4} // whole
		if stored {
			want = []int{2, 4} // best (first at 0.75), final
		}
		if got := ev.PartEvaluations.Keys(); !slices.Equal(got, want) || ev.CommitEvaluations["a"] == nil || ev.CommitEvaluations["a"].Tree != "ta" {
			t.Errorf("stored labels %v: part evaluations %v (want %v), commit evaluations %v", stored, got, want, ev.CommitEvaluations)
		}
		if _, ok := labels.Stored(ev); ok != stored {
			t.Errorf("stored labels %v: read back %v", stored, ok)
		}
	}
}
