package evalbox_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/trajlab/traj/environment"
	"github.com/trajlab/traj/environment/evaluation"
	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/githistory"
	"github.com/trajlab/traj/trace"
)

// BenchmarkEvaluationKeys is the evaluation CPU of one synthetic
// trajectory, three ways side by side in one run:
//
//   - tree: every checkpoint tree built and tested (the tree key; the
//     trees all differ);
//   - artifact: every tree built, tested only when its ./cc is new (the
//     artifacts' key, evaluation.ArtifactCacheKey, on an empty cache);
//   - sampled: every tree tested on a fixed sample of each suite
//     (environment.Sampler, size 20, seed 1), tree-keyed. Ground truth's
//     sampled curve (task ground_truth.sample) adds full evaluations of
//     each new best, every k-th checkpoint and the final tree to this.
//
// The trajectory has TRAJ_BENCH_CHECKPOINTS checkpoints (default 300, as
// the synthetic trajectory) and a new compiler every 30, the rest
// changing notes only (the demo: 9 trees, 4 compilers). The artifact way
// evaluates all of them; the tree and sampled ways, whose cost is the
// same for every tree of a compiler, evaluate every TRAJ_BENCH_STRIDE-th
// tree (default 10: 30 trees, three of each compiler) and report their
// CPU scaled to the whole trajectory (stride 1 measures every tree: 300
// full evaluations are hours of CPU, the cost this key removes).
// Compiler i rejects sources over 150+120i bytes, so each scores
// differently and the sample's deviation from the full score means
// something (never a control, which is shorter: a compiler failing a
// control has its suite voided at random). Suites: basics
// (embedded), or the demo task's suites on $TRAJ_TESTS_DIR's fixtures.
// Reported: CPU seconds of each way (this process and its sandboxes,
// getrusage), their ratios, trees tested, and the largest difference
// between a tree's sampled and full pass rates.
func BenchmarkEvaluationKeys(b *testing.B) {
	needBwrap(b)
	n := 300
	if v := os.Getenv("TRAJ_BENCH_CHECKPOINTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("TRAJ_BENCH_CHECKPOINTS=%q", v)
		}
	}
	stride := 10
	if v := os.Getenv("TRAJ_BENCH_STRIDE"); v != "" {
		var err error
		if stride, err = strconv.Atoi(v); err != nil || stride < 1 {
			b.Fatalf("TRAJ_BENCH_STRIDE=%q", v)
		}
	}
	b.Run("trajectory=demo", func(b *testing.B) {
		trees := demoTrees(b)
		keyWays(b, len(trees), 1, func(i int) string { return trees[i]() })
	})
	b.Run(fmt.Sprintf("trajectory=synthetic-%d", n), func(b *testing.B) {
		keyWays(b, n, stride, func(i int) string { return syntheticTree(b, i) })
	})
}

// keyWays evaluates the n trees tree(i) makes (a fresh folder each call)
// the three ways and reports them; the tree and sampled ways take every
// stride-th tree and scale.
func keyWays(b *testing.B, n, stride int, tree func(i int) string) {
	tests := os.Getenv("TRAJ_TESTS_DIR")
	paths := []string{"basics"}
	if tests != "" {
		paths = []string{"basics", "wacct", "c_testsuite", "torture"}
	}
	ev := evaluator(b, "bwrap", tests)
	ev.Artifacts = []string{"cc"}
	ev.EnvVersion = evaluation.Version(ev.Env.Version(), evaluation.Settings{Artifacts: ev.Artifacts})
	sampler, ok := ev.Env.(environment.Sampler)
	if !ok {
		b.Fatal("the C environment names no samples")
	}
	var sampled []string
	for _, p := range paths {
		sp, ok := sampler.SamplePath(p, 20, 1)
		if !ok {
			sp = p
		}
		sampled = append(sampled, sp)
	}
	ctx := context.Background()
	cpu := map[string]float64{}
	tested := map[string]int{}
	var deviation float64
	for b.Loop() {
		full := map[int]float64{}
		for _, way := range []string{"tree", "artifact", "sampled"} {
			cache := replay.Cache(nil)
			if way == "artifact" {
				cache = &replay.MemCache{}
			}
			ev.Cache = cache
			ps := paths
			if way == "sampled" {
				ps = sampled
			}
			start := cpuSeconds(b)
			every := stride
			if way == "artifact" {
				every = 1
			}
			count := 0
			for i := 0; i < n; i += every {
				dir := tree(i)
				res, err := ev.Evaluate(ctx, dir, ps)
				if err != nil {
					b.Fatal(err)
				}
				os.RemoveAll(dir)
				if res.Key == nil || !res.Key.Cached {
					count++
				}
				p, _, total := res.Totals()
				rate := replay.PassRate(p, total)
				switch way {
				case "tree":
					full[i] = rate
				case "artifact":
					if f, ok := full[i]; ok && rate != f {
						b.Fatalf("tree %d: %.4f by artifact, %.4f by tree", i, rate, f)
					}
				case "sampled":
					deviation = max(deviation, math.Abs(rate-full[i]))
				}
			}
			used := cpuSeconds(b) - start
			if every > 1 {
				measured := (n + every - 1) / every
				used *= float64(n) / float64(measured)
				count = count * n / measured
			}
			cpu[way] += used
			tested[way] += count
		}
	}
	iters := float64(b.N)
	for way, s := range cpu {
		b.ReportMetric(s/iters, way+"-cpu-s")
		b.ReportMetric(float64(tested[way])/iters, way+"-trees-tested")
	}
	b.ReportMetric(cpu["artifact"]/cpu["tree"], "artifact/tree")
	b.ReportMetric(cpu["sampled"]/cpu["tree"], "sampled/tree")
	b.ReportMetric(deviation*100, "sample-max-dev-pct")
	b.ReportMetric(float64(n), "trees")
}

// demoTrees are the distinct trees of the recorded demo trajectory
// (replay/export/testdata/demo: make demo's 50 parts), each a function
// exporting it into a fresh folder.
func demoTrees(b *testing.B) []func() string {
	b.Helper()
	ctx := context.Background()
	demo := filepath.Join("..", "export", "testdata", "demo")
	f, err := os.Open(filepath.Join(demo, "agent_trace.json"))
	if err != nil {
		b.Fatal(err)
	}
	tr, err := trace.Read(f)
	f.Close()
	if err != nil {
		b.Fatal(err)
	}
	h, err := githistory.Open(ctx, filepath.Join(demo, "repo.bundle"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { h.Close() })
	plan, err := replay.NewPlan(ctx, tr, h)
	if err != nil {
		b.Fatal(err)
	}
	var out []func() string
	for _, tree := range plan.Trees {
		commit := plan.TreeCommit[tree]
		out = append(out, func() string {
			dir := filepath.Join(b.TempDir(), "tree")
			if err := h.Export(ctx, commit, dir); err != nil {
				b.Fatal(err)
			}
			return dir
		})
	}
	return out
}

// syntheticTree writes checkpoint i of the benchmark's trajectory: a new
// compiler every 30 checkpoints, notes that change at every one.
func syntheticTree(b *testing.B, i int) string {
	b.Helper()
	dir, err := os.MkdirTemp("", "traj-keys-bench-")
	if err != nil {
		b.Fatal(err)
	}
	compiler := i / 30
	limit := 150 + 120*compiler
	cc := fmt.Sprintf("#!/bin/sh\n# compiler %d\nfor a; do case $a in *.c) [ $(wc -c < \"$a\") -gt %d ] && exit 1;; esac; done\nexec gcc -w \"$@\"\n", compiler, limit)
	files := map[string]string{
		"build.sh": "#!/bin/sh\nset -e\ncp cc.sh cc\nchmod +x cc\n",
		"cc.sh":    cc,
		"NOTES.md": fmt.Sprintf("checkpoint %d\n", i),
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// cpuSeconds is the processor time of this process and of its waited-for
// children (every sandbox of an evaluation) so far.
func cpuSeconds(b *testing.B) float64 {
	b.Helper()
	var self, kids syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &self); err != nil {
		b.Fatal(err)
	}
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids); err != nil {
		b.Fatal(err)
	}
	sec := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return sec(self.Utime) + sec(self.Stime) + sec(kids.Utime) + sec(kids.Stime)
}
