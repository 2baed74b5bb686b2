package ccompiler

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trajlab/traj/environment"
)

// setSize is the number of distinct trees of the larger set.
const setSize = 8

// BenchmarkSampledGroundTruth measures sampled ground truth against the
// full suites, side by side in one run (issue 25 item 2):
//
//   - the sample's score against the full score on every tree (max and
//     mean absolute deviation, in percentage points of the pass rate over
//     the required paths; sizes 5, 10, 20 cases per suite, seeds 1..20),
//     on the demo's 10 trees (`make demo`'s trajectory, its
//     evaluation.json in replay/export/testdata/demo) and on a larger set
//     of 8 distinct trees: gcc wrappers that refuse a seeded share of the
//     cases (0 to 100 %), by case for half of them and by whole stratum
//     (category, chapter, part) for the other half. The sample's score
//     is each path's sample pass rate weighted by the path's case count
//     (the full pass rate weighs paths so; an unweighted sample gives
//     every suite the same weight and is biased);
//   - the real CPU (user + system of traj and every child, getrusage) of a
//     full and a sampled evaluation of one tree, side by side; and the
//     per-trajectory evaluation CPU with the full suites on every tree,
//     against the sample on every tree plus the full suites where the run
//     needs them (each new best, each sample passing completely, every
//     k-th checkpoint, the final tree): for the demo (k 5) and for a
//     synthetic 300-checkpoint trajectory over the larger set whose score
//     rises with noise (k 10).
//
// The sampled scores are computed from the full per-case results, not by
// evaluating again: a sample is a subset of the same cases and the
// evaluation is deterministic, so the full result of a tree determines its
// sample's result exactly. The benchmark checks that on one tree of the
// larger set, evaluating the sample for real (a mismatch fails it). The
// larger set is evaluated in full for real, on the host (the trees are
// this benchmark's own gcc wrappers); the demo's full results are its
// stored evaluation (bwrap). The per-trajectory CPU scales the measured
// CPU per case of a full and of a sampled evaluation by the cases each
// policy runs on the demo's trees; a tree whose build fails costs less
// than that, so both figures are upper bounds, alike. Timings taken on
// a machine other work loads are noisy; the ratios hold better.
func BenchmarkSampledGroundTruth(b *testing.B) {
	needGCC(b)
	e := newEnv(b)
	paths := []string{SuiteBasics, SuiteWacct, SuiteCTestsuite, SuiteTorture}
	demo := loadDemoResults(b, e, paths)

	// The larger set: distinct trees evaluated in full, for real.
	var set []map[string]bool
	var fullCPU, fullCases float64
	for i := range setSize {
		refused := refusedCases(e, paths, i, setSize)
		ws := workspace(b, refusingBuild(e, paths, refused))
		cpu, res := cpuOf(func() map[string]bool { return runPaths(b, e, ws, paths) })
		set = append(set, res)
		fullCPU += cpu.Seconds()
		fullCases += float64(len(res))
	}

	// One tree, sampled and full, side by side; the sample's real result
	// must equal the one derived from the full result.
	mid := refusedCases(e, paths, 3, setSize)
	ws := workspace(b, refusingBuild(e, paths, mid))
	samplePaths := make([]string, len(paths))
	sampleCases := 0
	for i, p := range paths {
		samplePaths[i] = p
		if sp, ok := e.SamplePath(p, 10, 1); ok {
			samplePaths[i] = sp
		}
		names, _ := e.CaseNames(samplePaths[i])
		sampleCases += len(names)
	}
	cpuFull, full := cpuOf(func() map[string]bool { return runPaths(b, e, ws, paths) })
	cpuSample, sampled := cpuOf(func() map[string]bool { return runPaths(b, e, ws, samplePaths) })
	for name, passed := range sampled {
		if full[name] != passed {
			b.Fatalf("case %s: sampled evaluation %v, full %v: the full result does not determine the sample's", name, passed, full[name])
		}
	}
	b.ReportMetric(cpuFull.Seconds(), "cpu-s/full-tree")
	b.ReportMetric(cpuSample.Seconds(), "cpu-s/sampled-tree")
	b.ReportMetric(cpuFull.Seconds()/cpuSample.Seconds(), "full/sampled-cpu")
	b.Logf("one tree: full %d cases %.2f CPU-s, sample of 10 per suite (%d cases) %.2f CPU-s (%.1fx); the larger set in full: %.0f cases, %.1f CPU-s",
		len(full), cpuFull.Seconds(), sampleCases, cpuSample.Seconds(), cpuFull.Seconds()/cpuSample.Seconds(), fullCases, fullCPU)

	// Per-trajectory CPU on the demo: every tree in full, or the policy.
	perFull := cpuFull.Seconds() / float64(len(full))
	perSample := cpuSample.Seconds() / float64(sampleCases)
	var setTrees []tree
	for i, r := range set {
		setTrees = append(setTrees, tree{name: fmt.Sprintf("set-%d", i), cases: r})
	}
	// A 300-checkpoint trajectory over the larger set: the refused share
	// falls from 100 % to 0 with noise (a tree per checkpoint, distinct
	// trees evaluated once each way, as the cache does).
	var long []tree
	for j := range 300 {
		h := sha256.Sum256(fmt.Appendf(nil, "checkpoint %d", j))
		at := (len(setTrees)-1)*(299-j)/299 + int(h[0]%3) - 1
		long = append(long, setTrees[min(max(at, 0), len(setTrees)-1)])
		long[j].name = fmt.Sprintf("%s@%d", long[j].name, j) // a distinct tree per checkpoint
	}
	for _, s := range []struct {
		name  string
		trees []tree
		k     int
	}{{"demo", demo, 5}, {"long", long, 10}} {
		fullRuns := policy(e, s.trees, paths, 10, 1, s.k)
		allFull := float64(len(s.trees)*len(full)) * perFull
		sampledCPU := float64(len(s.trees)*sampleCases)*perSample + float64(fullRuns*len(full))*perFull
		b.ReportMetric(allFull, "cpu-s/"+s.name+"-full")
		b.ReportMetric(sampledCPU, "cpu-s/"+s.name+"-sampled")
		b.Logf("%s, %d trees: full suites on every tree %.0f CPU-s; sampled (10 per suite) on every tree + %d full evaluations (full_every %d) %.0f CPU-s (%.2fx less)",
			s.name, len(s.trees), allFull, fullRuns, s.k, sampledCPU, allFull/sampledCPU)
	}
	for b.Loop() {
		for _, size := range []int{5, 10, 20} {
			for _, s := range []struct {
				name  string
				trees []tree
			}{{"demo", demo}, {"set", setTrees}} {
				maxDev, meanDev := deviation(e, s.trees, paths, size)
				b.ReportMetric(maxDev, fmt.Sprintf("maxdev-pp/%s-%d", s.name, size))
				b.ReportMetric(meanDev, fmt.Sprintf("meandev-pp/%s-%d", s.name, size))
			}
		}
	}
}

// tree is one tree's full per-case result (case name → passed).
type tree struct {
	name  string
	part  int
	cases map[string]bool
}

// loadDemoResults reads the demo's stored evaluation: each distinct
// tree's per-case results, in the order of the parts.
func loadDemoResults(b *testing.B, e *Env, paths []string) []tree {
	raw, err := os.ReadFile(filepath.Join("..", "..", "replay", "export", "testdata", "demo", "evaluation.json"))
	if err != nil {
		b.Fatal(err)
	}
	var ev struct {
		Commits map[string]struct {
			Tree   string `json:"tree"`
			Parts  []int  `json:"parts"`
			Suites map[string]struct {
				Cases []struct {
					Name   string `json:"name"`
					Passed bool   `json:"passed"`
				} `json:"cases"`
			} `json:"suites"`
		} `json:"commit_evaluations"`
	}
	if err := json.Unmarshal(raw, &ev); err != nil {
		b.Fatal(err)
	}
	seen := map[string]bool{}
	var out []tree
	for _, c := range ev.Commits {
		if seen[c.Tree] {
			continue
		}
		seen[c.Tree] = true
		t := tree{name: c.Tree, part: slices.Min(c.Parts), cases: map[string]bool{}}
		for _, p := range paths {
			for _, cs := range c.Suites[p].Cases {
				t.cases[cs.Name] = cs.Passed
			}
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b tree) int { return a.part - b.part })
	// The fixtures must be the ones the demo was evaluated on.
	for _, p := range paths {
		names, _ := e.CaseNames(p)
		for _, n := range names {
			if _, ok := out[0].cases[n]; !ok {
				b.Skipf("the demo's evaluation lacks case %s: other fixtures", n)
			}
		}
	}
	return out
}

// sampleScore is the sample's estimate of a tree's pass rate over the
// paths (each path's sample pass rate weighted by the path's case count,
// as the full pass rate weighs it), the full pass rate, and whether every
// sampled case passed.
func sampleScore(e *Env, t tree, paths []string, size int, seed int64) (sample, full float64, all bool) {
	var est float64
	var fp, ft int
	all = true
	for _, p := range paths {
		cases, _ := e.CaseNames(p)
		names := cases
		if s, ok := e.SamplePath(p, size, seed); ok {
			names, _ = e.CaseNames(s)
		}
		sp := 0
		for _, n := range names {
			if t.cases[n] {
				sp++
			}
		}
		all = all && sp == len(names)
		est += float64(len(cases)) * float64(sp) / float64(len(names))
		for _, n := range cases {
			ft++
			if t.cases[n] {
				fp++
			}
		}
	}
	return est / float64(ft), float64(fp) / float64(ft), all
}

// deviation is the max and mean |sample − full| pass rate over trees and
// seeds 1..20, in percentage points.
func deviation(e *Env, trees []tree, paths []string, size int) (maxDev, meanDev float64) {
	n := 0
	for seed := int64(1); seed <= 20; seed++ {
		for _, t := range trees {
			s, f, _ := sampleScore(e, t, paths, size, seed)
			d := 100 * math.Abs(s-f)
			maxDev = max(maxDev, d)
			meanDev += d
			n++
		}
	}
	return maxDev, meanDev / float64(n)
}

// policy counts the full evaluations a sampled run over the checkpoint
// trees makes (a new best by sampled score, a sample passing completely,
// every k-th checkpoint, the final tree), each distinct tree once.
func policy(e *Env, trees []tree, paths []string, size int, seed int64, k int) int {
	best := 0.0
	full := map[string]bool{}
	for i, t := range trees {
		s, _, all := sampleScore(e, t, paths, size, seed)
		if s > best || all || (i+1)%k == 0 || i == len(trees)-1 {
			full[t.name] = true
		}
		best = max(best, s)
	}
	return len(full)
}

// refusedCases is the case file names tree i of n refuses: a share i/(n-1)
// of the cases, by case for even i, by whole stratum for odd i.
func refusedCases(e *Env, paths []string, i, n int) map[string]bool {
	share := float64(i) / float64(n-1)
	out := map[string]bool{}
	for _, p := range paths {
		s := e.suites[p]
		for j, c := range s.cases {
			key := c.name
			if i%2 == 1 {
				key = p + "/" + stratum(c, j)
			}
			h := sha256.Sum256(fmt.Appendf(nil, "%d %s", i, key))
			if float64(h[0])/256 < share {
				for _, src := range c.sources {
					out[path.Base(src)] = true
				}
			}
		}
	}
	return out
}

// refusingBuild is a build.sh whose ./cc exits 1 for a refused case file
// name and is gcc otherwise (files shared by a refused and an accepted
// case are refused too).
func refusingBuild(e *Env, paths []string, refused map[string]bool) string {
	names := make([]string, 0, len(refused))
	for n := range refused {
		names = append(names, n)
	}
	slices.Sort(names)
	pattern := "refused_none.c"
	if len(names) > 0 {
		pattern = strings.Join(names, "|")
	}
	cc := "#!/bin/sh\nfor a in \"$@\"; do case \"${a##*/}\" in " + pattern + ") exit 1;; esac; done\nexec gcc -w \"$@\"\n"
	return "cat > cc <<'EOF'\n" + cc + "EOF\nchmod +x cc\n"
}

// runPaths builds ws once and runs every path on the host: case → passed.
func runPaths(b *testing.B, e *Env, ws string, paths []string) map[string]bool {
	ctx := context.Background()
	built := e.Build(ctx, ws, nil)
	if !built.OK {
		b.Fatalf("build: %+v", built)
	}
	out := map[string]bool{}
	for _, p := range paths {
		r, err := e.Run(ctx, ws, p, environment.RunOptions{Prebuilt: &built})
		if err != nil {
			b.Fatal(err)
		}
		if len(r.Voided) > 0 {
			b.Fatalf("%s voided: %+v", p, r.Voided)
		}
		for _, c := range r.Cases {
			out[c.Name] = c.Passed
		}
	}
	return out
}

// cpuOf runs fn and returns the CPU time (user + system) this process
// and its waited-for children spent.
func cpuOf[T any](fn func() T) (time.Duration, T) {
	before := cpuNow()
	v := fn()
	return cpuNow() - before, v
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
