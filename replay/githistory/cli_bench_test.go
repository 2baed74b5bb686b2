package githistory_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trajlab/traj/environment/ccompiler"
	"github.com/trajlab/traj/environment/evaluation"
	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/source"
	"github.com/trajlab/traj/trace/store/local"
)

// trajBin is the traj binary the CLI benchmarks run (make bench sets
// TRAJ_BIN); they are skipped without it.
func trajBin(b *testing.B) string {
	b.Helper()
	bin := os.Getenv("TRAJ_BIN")
	if bin == "" {
		b.Skip("TRAJ_BIN is not set (make bench sets it)")
	}
	return bin
}

// cliFixture is a trajectory of parts parts, a realistic ~4 KB part each
// and a commit every `every` parts (a 300-file workspace, one file
// rewritten a commit), recorded by trace.Writer (so with its part index)
// beside the bundle `git bundle create --all` writes.
type cliFixture struct {
	dir, repo, bundle, tracePath string
}

func newCLIFixture(b *testing.B, parts, every int) cliFixture {
	b.Helper()
	dir := b.TempDir()
	repo, bundle, _ := fastImport(b, dir, parts/every, 0)
	tracePath := filepath.Join(dir, "agent_trace.json")
	writeTraceEvery(b, repo, tracePath, every)
	return cliFixture{dir: dir, repo: repo, bundle: bundle, tracePath: tracePath}
}

// BenchmarkCLICheckoutPart runs `traj replay checkout-part` (the binary,
// end to end: process start, trace header, part index, bundle, checkout)
// of the last part of a 10,000- and a 50,000-part trajectory side by side
// with the git CLI on the same bundle (`git clone --no-checkout` + `git
// checkout`). Target: traj/git <= 1.
func BenchmarkCLICheckoutPart(b *testing.B) {
	bin := trajBin(b)
	for _, parts := range []int{10_000, 50_000} {
		b.Run("parts="+strconv.Itoa(parts), func(b *testing.B) {
			fx := newCLIFixture(b, parts, 1)
			last := strings.TrimSpace(run(b, fx.repo, "git", "rev-parse", "main"))
			out := b.TempDir() // outside the trajectory's folder, as checkout-part requires
			var trajT, gitT time.Duration
			var trajRSS, gitRSS int64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				dest := filepath.Join(out, fmt.Sprintf("traj-%d", i))
				t1, r1 := measured(b, exec.Command(bin, "replay", "checkout-part", "--trace", fx.tracePath, "--bundle", fx.bundle,
					"--store", filepath.Join(fx.dir, "store"), "--part", strconv.Itoa(parts), "--checkout-dest", dest))
				gdest := filepath.Join(out, fmt.Sprintf("git-%d", i))
				t2, r2 := measured(b, exec.Command("git", "clone", "-q", "--no-checkout", fx.bundle, gdest))
				t3, r3 := measured(b, exec.Command("git", "-C", gdest, "checkout", "-q", last))
				if got := strings.TrimSpace(run(b, dest, "git", "rev-parse", "HEAD")); got != last {
					b.Fatalf("traj checked out %s, want %s", got, last)
				}
				os.RemoveAll(dest)
				os.RemoveAll(gdest)
				trajT, gitT = trajT+t1, gitT+t2+t3
				trajRSS, gitRSS = max(trajRSS, r1), max(gitRSS, r2, r3)
			}
			n := float64(b.N)
			b.ReportMetric(trajT.Seconds()*1000/n, "traj-ms")
			b.ReportMetric(gitT.Seconds()*1000/n, "git-ms")
			b.ReportMetric(float64(trajT)/float64(gitT), "traj/git")
			b.ReportMetric(float64(trajRSS)/(1<<20), "traj-peak-rss-MB")
			b.ReportMetric(float64(gitRSS)/(1<<20), "git-peak-rss-MB")
		})
	}
}

// BenchmarkCLICachedEvaluate runs `traj replay evaluate` (the binary, end
// to end) on a 10,000- and a 50,000-part trajectory with a commit every
// 4 parts (2,500 and 12,500 distinct trees, the ratio of the demo's
// checkpoints) whose every tree is in the store's evaluation cache, so
// nothing is built: what is left is finding the parts' commits, their
// trees and the cached results (first-ms: the first such evaluate, which
// writes the report and the cache's set; traj-ms: the ones after it).
// Target: under 0.1 s. With
// TRAJ_BASELINE_BIN set (another traj binary, e.g. one built from an
// older commit) it runs that one too, side by side: traj/baseline.
func BenchmarkCLICachedEvaluate(b *testing.B) {
	bin := trajBin(b)
	ctx := context.Background()
	// The binary reads TRAJ_TESTS_DIR (make bench sets it): the cache is
	// written under the version it will evaluate with.
	env, err := ccompiler.New(ccompiler.Config{TestsDir: os.Getenv("TRAJ_TESTS_DIR")})
	if err != nil {
		b.Fatal(err)
	}
	paths := []string{"basics/smoke"}
	for _, parts := range []int{10_000, 50_000} {
		b.Run("parts="+strconv.Itoa(parts), func(b *testing.B) {
			fx := newCLIFixture(b, parts, 4)
			storeDir := filepath.Join(fx.dir, "store")
			st, err := local.Open(storeDir)
			if err != nil {
				b.Fatal(err)
			}
			// The cache as an earlier evaluate left it: one entry a tree
			// (--sandbox local evaluates under the environment's version).
			cache := source.Cache(st)
			trees := strings.Fields(run(b, fx.repo, "git", "log", "--format=%T", "main"))
			for _, tree := range trees {
				e := replay.CacheEntry{Tree: tree, EnvVersion: env.Version(), TestPaths: paths, Result: replay.Result{Suites: map[string]replay.SuiteResult{
					"basics": {Passed: 3, Failed: 1, Total: 4}}}, DurationMs: 900}
				if err := cache.Put(ctx, evaluation.CacheKey(tree, env.Version(), paths), e); err != nil {
					b.Fatal(err)
				}
			}
			// Each binary writes its own report: an evaluate leaves a report
			// with its own inputs as it is, so a report the other binary
			// wrote would be built again each time.
			out := filepath.Join(b.TempDir(), "evaluation.json")
			args := func(out string) []string {
				return []string{"replay", "evaluate", "--trace", fx.tracePath, "--bundle", fx.bundle, "--store", storeDir,
					"--sandbox", "local", "--tests", strings.Join(paths, ","), "--output", out}
			}
			base := os.Getenv("TRAJ_BASELINE_BIN")
			baseOut := filepath.Join(b.TempDir(), "evaluation.json")
			// The first cached evaluate writes the report (and the cache's
			// set); the ones timed are the evaluates after it.
			first, _ := measured(b, exec.Command(bin, args(out)...))
			var total, baseTotal, start, cpu, startCPU time.Duration
			var peak int64
			cpuOf := func(c *exec.Cmd) time.Duration { return c.ProcessState.UserTime() + c.ProcessState.SystemTime() }
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if base != "" {
					t, _ := measured(b, exec.Command(base, args(baseOut)...))
					baseTotal += t
				}
				ev := exec.Command(bin, args(out)...)
				t, rss := measured(b, ev)
				total, peak, cpu = total+t, max(peak, rss), cpu+cpuOf(ev)
				version := exec.Command(bin, "--version")
				t, _ = measured(b, version)
				start, startCPU = start+t, startCPU+cpuOf(version)
			}
			b.StopTimer()
			if base != "" {
				b.ReportMetric(baseTotal.Seconds()*1000/float64(b.N), "baseline-ms")
				b.ReportMetric(float64(total)/float64(baseTotal), "traj/baseline")
			}
			// What starting the process costs (package init: chroma's
			// lexers, JSON schemas), part of every command.
			b.ReportMetric(start.Seconds()*1000/float64(b.N), "start-ms")
			// CPU (user+system) holds better than wall on a loaded machine.
			b.ReportMetric(startCPU.Seconds()*1000/float64(b.N), "start-cpu-ms")
			b.ReportMetric(cpu.Seconds()*1000/float64(b.N), "traj-cpu-ms")
			b.ReportMetric(first.Seconds()*1000, "first-ms")
			data, err := os.ReadFile(out)
			if err != nil {
				b.Fatal(err)
			}
			if want := fmt.Sprintf(`"cache_hits": %d`, len(trees)); !strings.Contains(string(data), want) {
				b.Fatalf("evaluation.json lacks %s: every tree should come from the cache", want)
			}
			b.ReportMetric(total.Seconds()*1000/float64(b.N), "traj-ms")
			b.ReportMetric(float64(len(trees)), "trees")
			b.ReportMetric(float64(peak)/(1<<20), "traj-peak-rss-MB")
		})
	}
}
