package orchestrator_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/trajlab/traj/orchestrator"
	"github.com/trajlab/traj/orchestrator/launch"
	"github.com/trajlab/traj/orchestrator/progress"
	"github.com/trajlab/traj/sandbox"
)

// BenchmarkSandboxRun records the demo script's first 30 parts with the
// real OpenCode in each provider and reports the time from the run's
// start to its first part (sandbox and OpenCode start) and the mean time
// between parts (everything a part costs: OpenCode, tools, the relay,
// traj); bwrap and container also report that per-part time as a ratio to
// local's, measured just before.
func BenchmarkSandboxRun(b *testing.B) {
	bin := needOpenCode(b)
	traj := needTraj(b)
	var localPerPart float64
	for _, p := range []string{sandbox.ProviderLocal, sandbox.ProviderBwrap, sandbox.ProviderContainer} {
		b.Run(p, func(b *testing.B) {
			var first, perPart float64
			for i := 0; i < b.N; i++ {
				var mu sync.Mutex
				var began time.Time
				var parts []time.Time
				rep := reporterFunc(func(ev progress.Event) {
					mu.Lock()
					defer mu.Unlock()
					switch ev.Type {
					case progress.RunStarted:
						began = ev.Time
					case progress.PartDone:
						parts = append(parts, ev.Time)
					}
				})
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				_, err := orchestrator.Run(ctx, orchestrator.Options{
					Task: "c-compiler", Model: "scripted/demo", Script: filepath.Join("..", "sandbox", "scripted", "demo", "c-compiler.jsonl"),
					MaxParts: 30, Store: b.TempDir(), AgentBin: bin, TrajBin: traj, TestsDir: testsDir(b),
					Sandbox: launch.SandboxOptions{Provider: p}, Reporter: rep,
				})
				cancel()
				if err != nil {
					b.Fatal(err)
				}
				if len(parts) < 2 {
					b.Fatalf("%d parts", len(parts))
				}
				first += float64(parts[0].Sub(began).Milliseconds())
				perPart += float64(parts[len(parts)-1].Sub(parts[0]).Milliseconds()) / float64(len(parts)-1)
			}
			first /= float64(b.N)
			perPart /= float64(b.N)
			b.ReportMetric(first, "ms-to-first-part")
			b.ReportMetric(perPart, "ms/part")
			if p == sandbox.ProviderLocal {
				localPerPart = perPart
			} else if localPerPart > 0 {
				b.ReportMetric(perPart/localPerPart, "x-local-per-part")
			}
		})
	}
}

// testsDir is $TRAJ_TESTS_DIR (make sets it): the demo's task needs every
// suite.
func testsDir(b *testing.B) string {
	d := os.Getenv("TRAJ_TESTS_DIR")
	if d == "" {
		b.Fatal("TRAJ_TESTS_DIR is not set (make bench sets it)")
	}
	return d
}
