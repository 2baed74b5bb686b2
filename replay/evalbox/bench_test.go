package evalbox_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/trajlab/traj/replay/evalbox"
	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/sandbox/xec"
)

// BenchmarkPerTree is the per-tree evaluation time of a gcc-wrapping
// tree (the demo's final compiler), old layout against new, side by side
// in each iteration:
//
//   - host: build, compiles and programs run by the evaluator's own
//     process, as `traj env evaluate` ran them inside version 2's single
//     sandbox (that layout added one sandbox start per tree, ~0.1 s,
//     to this);
//   - bwrap: version 3, a fresh bwrap for the build, for every compile
//     and for every program.
//
// Suites: basics (embedded, what the demo scores without fixtures), and
// the demo's task suites on $TRAJ_TESTS_DIR's fixtures (basics, wacct,
// c_testsuite, torture). Reported: ms/tree of each, their ratio, and
// where the new layout's time goes: the sum of compile and run times over
// cases (each includes its sandbox's start) and the cost of one bare
// action start (bwrap /bin/true against /bin/true on the host).
func BenchmarkPerTree(b *testing.B) {
	needBwrap(b)
	suites := map[string][]string{"basics": {"basics"}}
	if d := os.Getenv("TRAJ_TESTS_DIR"); d != "" {
		suites["fixtures"] = []string{"basics", "wacct", "c_testsuite", "torture"}
	}
	for _, name := range []string{"basics", "fixtures"} {
		paths, ok := suites[name]
		if !ok {
			continue
		}
		b.Run("suites="+name, func(b *testing.B) {
			tests := ""
			if name == "fixtures" {
				tests = os.Getenv("TRAJ_TESTS_DIR")
			}
			host := evaluator(b, sandbox.ProviderLocal, tests)
			box := evaluator(b, sandbox.ProviderBwrap, tests)
			var hostT, boxT time.Duration
			var compileMS, runMS, cases int64
			for b.Loop() {
				for _, ev := range []struct {
					e *evalbox.Evaluator
					t *time.Duration
				}{{host, &hostT}, {box, &boxT}} {
					dir := tree(b, gccBuild)
					start := time.Now()
					p, err := ev.e.EvaluateDetailed(context.Background(), dir, paths)
					*ev.t += time.Since(start)
					if err != nil {
						b.Fatal(err)
					}
					for _, r := range p.Runs {
						// gcc accepts one of wacct's invalid programs: a
						// real compiler, never voided.
						if r.Passed == 0 || len(r.Voided) > 0 {
							b.Fatalf("%s: %d of %d, voided %+v", r.Path, r.Passed, r.Total, r.Voided)
						}
						if ev.e == box {
							for _, c := range r.Cases {
								compileMS += c.CompileMS
								runMS += c.RunMS
								cases++
							}
						}
					}
				}
			}
			n := float64(b.N)
			b.ReportMetric(float64(hostT.Milliseconds())/n, "host-ms/tree")
			b.ReportMetric(float64(boxT.Milliseconds())/n, "bwrap-ms/tree")
			b.ReportMetric(float64(boxT)/float64(hostT), "bwrap/host")
			b.ReportMetric(float64(compileMS)/float64(cases), "bwrap-compile-ms/case")
			b.ReportMetric(float64(runMS)/float64(cases), "bwrap-run-ms/case")
			b.ReportMetric(float64(cases)/n, "cases/tree")
		})
	}
	b.Run("action-start", func(b *testing.B) {
		acts, err := sandbox.NewActions(context.Background(), sandbox.ProviderBwrap, sandbox.ActionOptions{Dir: b.TempDir(),
			Limits: sandbox.Limits{Memory: sandbox.DefaultMemory, Processes: 512}})
		if err != nil {
			b.Fatal(err)
		}
		defer acts.Close()
		var hostT, boxT time.Duration
		for b.Loop() {
			start := time.Now()
			if _, err := xec.Run(context.Background(), xec.Command{Path: "/bin/true", Timeout: 10 * time.Second}); err != nil {
				b.Fatal(err)
			}
			hostT += time.Since(start)
			start = time.Now()
			if _, err := acts.Run(context.Background(), sandbox.Action{Path: "/bin/true", Dir: "/", Timeout: 10 * time.Second}); err != nil {
				b.Fatal(err)
			}
			boxT += time.Since(start)
		}
		b.ReportMetric(float64(hostT.Microseconds())/float64(b.N)/1000, "host-ms/start")
		b.ReportMetric(float64(boxT.Microseconds())/float64(b.N)/1000, "bwrap-ms/start")
	})
}
