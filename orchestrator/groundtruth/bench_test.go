package groundtruth

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/trajlab/traj/environment/ccompiler"
	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/evalbox"
	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/trace/gitstate"
)

// BenchmarkSampledScorer is one tree scored as ground truth scores it, in
// the real evaluation sandbox (bwrap), on the full paths and on a sample
// of 10 cases a suite, side by side: the CPU (user + system of traj and
// every child it waited for, getrusage) and wall time of each, and the
// check that the sample's per-case result is the full result's on the
// same cases. The tree is a gcc wrapper (every case compiles and runs);
// environment/ccompiler's BenchmarkSampledGroundTruth measures the
// scores' deviation and the per-trajectory CPU. Other work on the
// machine makes the times noisy; the ratio holds better.
func BenchmarkSampledScorer(b *testing.B) {
	dir := os.Getenv("TRAJ_TESTS_DIR")
	if dir == "" {
		b.Skip("TRAJ_TESTS_DIR (the public suites) needed")
	}
	ctx := context.Background()
	if err := sandbox.BwrapWorks(ctx); err != nil {
		b.Skipf("bwrap: %v", err)
	}
	env, err := ccompiler.New(ccompiler.Config{TestsDir: dir})
	if err != nil {
		b.Fatal(err)
	}
	root := b.TempDir()
	ws := filepath.Join(root, "ws")
	repo, err := gitstate.Init(ctx, filepath.Join(root, "checkpoints.git"), ws, gitstate.Options{})
	if err != nil {
		b.Fatal(err)
	}
	build := "#!/bin/sh\nset -e\nprintf '#!/bin/sh\\nexec gcc -w \"$@\"\\n' > cc\nchmod +x cc\n"
	if err := os.WriteFile(filepath.Join(ws, "build.sh"), []byte(build), 0o644); err != nil {
		b.Fatal(err)
	}
	cp, err := repo.Checkpoint(ctx, 1)
	if err != nil {
		b.Fatal(err)
	}
	cache := &replay.MemCache{}
	s := &Scorer{Trees: repo, Eval: &evalbox.Evaluator{Provider: sandbox.ProviderBwrap, Env: env}, Cache: cache,
		Paths: []string{"basics", "wacct", "c_testsuite", "torture"}, Sample: &Sample{Env: env, Size: 10, Seed: 1}}

	for b.Loop() {
		*cache = replay.MemCache{}
		cpuFull, wallFull := cpuNow(), time.Now()
		full, err := s.Score(ctx, 1, cp.CommitAfter)
		cpuFull, wallF := cpuNow()-cpuFull, time.Since(wallFull)
		if err != nil || full.Error != "" || full.Sampled {
			b.Fatalf("full: %+v %v", full, err)
		}
		cpuSample, wallSample := cpuNow(), time.Now()
		sampled, err := s.ScoreSampled(ctx, 1, cp.CommitAfter)
		cpuSample, wallS := cpuNow()-cpuSample, time.Since(wallSample)
		if err != nil || sampled.Error != "" || !sampled.Sampled || sampled.Cached {
			b.Fatalf("sampled: %+v %v", sampled, err)
		}
		fd, _ := s.Detail(ctx, full)
		sd, _ := s.Detail(ctx, sampled)
		passed := map[string]bool{}
		for _, r := range fd.Suites {
			for _, c := range r.Cases {
				passed[c.Name] = c.Passed
			}
		}
		for _, r := range sd.Suites {
			for _, c := range r.Cases {
				if got, ok := passed[c.Name]; !ok || got != c.Passed {
					b.Fatalf("case %s: sampled %v, full %v (present %v)", c.Name, c.Passed, got, ok)
				}
			}
		}
		b.ReportMetric(cpuFull.Seconds(), "cpu-s/full")
		b.ReportMetric(cpuSample.Seconds(), "cpu-s/sampled")
		b.ReportMetric(cpuFull.Seconds()/cpuSample.Seconds(), "full/sampled-cpu")
		b.ReportMetric(wallF.Seconds()/wallS.Seconds(), "full/sampled-wall")
		b.Logf("bwrap, one tree: full %d cases %.1f CPU-s %.1f s; sample %d cases %.1f CPU-s %.1f s",
			full.Total, cpuFull.Seconds(), wallF.Seconds(), sampled.Total, cpuSample.Seconds(), wallS.Seconds())
	}
}

func cpuNow() time.Duration {
	var total time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if err := syscall.Getrusage(who, &ru); err == nil {
			total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return total
}
