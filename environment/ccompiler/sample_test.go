package ccompiler

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/trajlab/traj/environment"
)

var _ environment.Sampler = (*Env)(nil)

// groupCounts counts a case list's cases per stratum of suite (the
// stratum of a sharded suite's case is its index in the whole suite).
func groupCounts(t *testing.T, e *Env, suite string, cases []testCase) map[string]int {
	t.Helper()
	all := e.suites[suite].cases
	out := map[string]int{}
	for _, c := range cases {
		i := slices.IndexFunc(all, func(a testCase) bool { return a.name == c.name })
		if i < 0 {
			t.Fatalf("%s is not a case of %s", c.name, suite)
		}
		out[stratum(all[i], i)]++
	}
	return out
}

func TestSampleIsStratifiedAndFixed(t *testing.T) {
	e := newEnv(t)
	for _, suite := range []string{SuiteBasics, SuiteWacct, SuiteCTestsuite, SuiteTorture, SuiteTortureStd} {
		all := e.suites[suite].cases
		if len(all) == 0 {
			t.Fatalf("%s has no cases", suite)
		}
		full := groupCounts(t, e, suite, all)
		for _, size := range []int{1, 3, len(all) / 3, len(all) / 2, len(all) - 1} {
			t.Run(fmt.Sprintf("%s/%d", suite, size), func(t *testing.T) {
				path, ok := e.SamplePath(suite, size, 7)
				if !ok {
					t.Fatalf("SamplePath(%s, %d) declined; the suite has %d cases", suite, size, len(all))
				}
				got, err := e.cases(path)
				if err != nil {
					t.Fatal(err)
				}
				again, _ := e.cases(path)
				if len(got) != size || !slices.EqualFunc(got, again, func(a, b testCase) bool { return a.name == b.name }) {
					t.Fatalf("%s: %d cases (want %d), or not the same twice", path, len(got), size)
				}
				if !slices.IsSortedFunc(got, func(a, b testCase) int { return strings.Compare(a.name, b.name) }) {
					t.Fatal("sample not sorted by name")
				}
				counts := groupCounts(t, e, suite, got)
				for g, n := range full {
					quota := float64(size) * float64(n) / float64(len(all))
					c := counts[g]
					if size >= len(full) && c < 1 {
						t.Errorf("group %s: no case, though the size %d allows one per group (%d groups)", g, size, len(full))
					}
					// Proportional: within one of the quota, beyond the
					// one case every group gets.
					if float64(c) > quota+2 || (size >= len(full) && float64(c) < quota-1) {
						t.Errorf("group %s (%d of %d cases): %d sampled, quota %.1f", g, n, len(all), c, quota)
					}
				}
			})
		}
		if _, ok := e.SamplePath(suite, len(all), 7); ok {
			t.Errorf("%s: a sample as large as the suite was not declined", suite)
		}
		half := fmt.Sprintf("%s/sample_%d_", suite, len(all)/2)
		a, _ := e.cases(half + "1")
		b, _ := e.cases(half + "2")
		if slices.EqualFunc(a, b, func(x, y testCase) bool { return x.name == y.name }) {
			t.Errorf("%s: seeds 1 and 2 chose the same %d cases", suite, len(a))
		}
	}
	for _, p := range []string{"basics/smoke", "all", "wacct/chapter_1", "nosuch"} {
		if _, ok := e.SamplePath(p, 5, 1); ok {
			t.Errorf("SamplePath(%q) should decline", p)
		}
	}
}

func TestParseSamplePath(t *testing.T) {
	tests := []struct {
		in         string
		ok         bool
		size, seed int
	}{
		{"wacct/sample_100_7", true, 100, 7},
		{"torture/sample_1_0", true, 1, 0},
		{"basics/sample_5_123456", true, 5, 123456},
		{"wacct/sample_0_7", false, 0, 0},
		{"wacct/sample_100", false, 0, 0},
		{"wacct/sample_100_07", false, 0, 0},
		{"wacct/sample_100_1234567", false, 0, 0},
		{"all/sample_5_1", false, 0, 0},
	}
	for _, tt := range tests {
		p, err := ParseTestPath(tt.in)
		if (err == nil) != tt.ok {
			t.Errorf("%s: err %v, want ok=%v", tt.in, err, tt.ok)
			continue
		}
		if tt.ok && (!p.Sample || p.N != tt.size || p.Seed != int64(tt.seed)) {
			t.Errorf("%s: parsed %+v", tt.in, p)
		}
	}
}

// TestStratifiedAllocation pins the rule on small hand-made groups.
func TestStratifiedAllocation(t *testing.T) {
	var names, groups []string
	add := func(g string, n int) {
		for i := range n {
			names = append(names, fmt.Sprintf("%s/%02d", g, i))
			groups = append(groups, g)
		}
	}
	add("a", 10)
	add("b", 5)
	add("c", 1)
	count := func(idx []int) map[string]int {
		out := map[string]int{}
		for _, i := range idx {
			out[groups[i]]++
		}
		return out
	}
	// size 7 ≥ 3 groups: one each, the other 4 in proportion to 9, 4, 0
	// of 13: quotas 2.77, 1.23, 0 → 2+1, 1, then the largest remainder (a).
	if got := count(stratified(names, groups, 7, 1)); got["a"] != 4 || got["b"] != 2 || got["c"] != 1 {
		t.Errorf("size 7: %v, want a 4, b 2, c 1", got)
	}
	// size 2 < 3 groups: quotas 1.25, 0.625, 0.125 → a 1, then b.
	if got := count(stratified(names, groups, 2, 1)); got["a"] != 1 || got["b"] != 1 || got["c"] != 0 {
		t.Errorf("size 2: %v, want a 1, b 1", got)
	}
	if got := stratified(names, groups, 16, 1); len(got) != 16 {
		t.Errorf("size = n: %d items", len(got))
	}
}
