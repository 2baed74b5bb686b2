package replay_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/trajlab/traj/environment/ccompiler"
	"github.com/trajlab/traj/environment/evaluation"
	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/replaytest"
)

// BenchmarkEvaluate evaluates a 20-commit trajectory (20 distinct trees,
// basics/smoke with the real C-compiler environment and a gcc-wrapping
// ./cc) without the cache, one case at a time per tree, so the tree
// workers are what scales.
func BenchmarkEvaluate(b *testing.B) {
	env, err := ccompiler.New(ccompiler.Config{})
	if err != nil {
		b.Fatal(err)
	}
	changes := []replaytest.Change{{Write: map[string]string{"build.sh": replaytest.BuildScript, "broken.txt": ""}}}
	for i := 2; i <= 20; i++ {
		changes = append(changes, replaytest.Change{Write: map[string]string{"notes.txt": fmt.Sprintf("part %d\n", i)}})
	}
	tj := replaytest.Build(b, "traj-bench", changes, 5, true)
	h, err := openHistoryTB(b, tj)
	if err != nil {
		b.Fatal(err)
	}
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			ev := &evaluation.EnvironmentEvaluator{Env: env, CaseWorkers: 1}
			for b.Loop() {
				out, err := replay.Evaluate(context.Background(), tj.Trace, h, ev, replay.EvaluateOptions{TestPaths: []string{"basics/smoke"}, Workers: workers})
				if err != nil {
					b.Fatal(err)
				}
				if out.Stats.TreesEvaluated != 20 || out.PartEvaluations[20].Passed != out.PartEvaluations[20].Total {
					b.Fatalf("stats %+v, part 20 %+v", out.Stats, out.PartEvaluations[20])
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N)/20, "ms/tree")
		})
	}
}
