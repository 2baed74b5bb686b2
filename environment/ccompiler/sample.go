package ccompiler

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/trajlab/traj/environment"
)

// A sample of a suite is a test path of its own, "<suite>/sample_<size>_<seed>":
// a fixed, seeded, stratified choice of size of the suite's cases. It is a
// pure function of the suite's case list (so of Version), size and seed:
// every tree of a trajectory is scored on the same cases, so a curve of
// sampled scores is comparable, and the full suite's result of a tree
// determines its sample's result (the sample is a subset of the same
// cases). The sample is also part of the evaluation cache key (its test
// path), so a sampled result is never served as a full one.
//
// Strata are the suite's natural groups: basics categories, wacct
// chapters, and the part_<n> shards of c_testsuite, torture and
// torture_std. The rule, for N cases in G groups of N_g cases:
//   - size ≥ N: the sample is the whole suite (SamplePath declines it);
//   - size ≥ G: every group gets one case, and the other size−G are
//     shared in proportion to N_g−1 by largest remainder (floor of each
//     quota, then one more to the largest remainders);
//   - size < G: size is shared in proportion to N_g by largest remainder
//     (so the largest groups get one case each);
//   - ties between remainders go to the group whose SHA-256 of (seed,
//     group name) is smaller; within a group, the cases whose SHA-256 of
//     (seed, case name) is smallest are taken.
//
// Proportional allocation keeps the sample's pass rate close to an
// unbiased estimate of the suite's; the one-per-group floor favours small
// groups slightly (measured in BenchmarkSampledGroundTruth).

// sampleSelector is the selector prefix of a sample path.
const sampleSelector = "sample_"

// SamplePath names the sample of size cases of testPath chosen by seed,
// and reports false when testPath is not sampled: a path with a selector
// or "all" (already small or mixed), a suite that is missing, or one with
// no more than size cases (the sample would be the suite itself).
func (e *Env) SamplePath(testPath string, size int, seed int64) (string, bool) {
	p, err := ParseTestPath(testPath)
	if err != nil || p.Selector != "" || p.Suite == PathAll || size < 1 || seed < 0 {
		return "", false
	}
	s := e.suites[p.Suite]
	if s.missing != nil || size >= len(s.cases) {
		return "", false
	}
	return p.Suite + "/" + sampleSelector + strconv.Itoa(size) + "_" + strconv.FormatInt(seed, 10), true
}

// parseSample parses a sample selector's "<size>_<seed>" (numbers
// without leading zeros, at most 6 digits; the seed may be 0).
func parseSample(sel string) (size int, seed int64, ok bool) {
	rest, ok := strings.CutPrefix(sel, sampleSelector)
	if !ok {
		return 0, 0, false
	}
	a, b, found := strings.Cut(rest, "_")
	if !found {
		return 0, 0, false
	}
	if size, ok = numbered("n"+a, "n"); !ok {
		return 0, 0, false
	}
	if b == "0" {
		return size, 0, true
	}
	n, ok := numbered("n"+b, "n")
	return size, int64(n), ok
}

// stratum is the group of a suite's i-th case (cases sorted by name): its
// category or chapter, else its part_<n> shard.
func stratum(c testCase, i int) string {
	if c.group != "" {
		return c.group
	}
	return "part_" + strconv.Itoa(i/ShardSize+1)
}

// sampleCases is the sample of size of a suite's cases (sorted by name)
// chosen by seed, sorted by name (the rule is in the comment above).
func sampleCases(cases []testCase, size int, seed int64) []testCase {
	names := make([]string, len(cases))
	groups := make([]string, len(cases))
	for i, c := range cases {
		names[i], groups[i] = c.name, stratum(c, i)
	}
	var out []testCase
	for _, i := range stratified(names, groups, size, seed) {
		out = append(out, cases[i])
	}
	return out
}

// stratified returns the indices (ascending) of the sample of size among
// items named names in groups groups.
func stratified(names, groups []string, size int, seed int64) []int {
	n := len(names)
	if size >= n {
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		return all
	}
	members := map[string][]int{}
	var order []string
	for i, g := range groups {
		if _, ok := members[g]; !ok {
			order = append(order, g)
		}
		members[g] = append(members[g], i)
	}
	alloc := allocate(order, members, n, size, seed)
	var picked []int
	for _, g := range order {
		idx := slices.Clone(members[g])
		slices.SortFunc(idx, func(a, b int) int {
			if c := compareRank(seed, names[a], names[b]); c != 0 {
				return c
			}
			return a - b
		})
		picked = append(picked, idx[:alloc[g]]...)
	}
	slices.Sort(picked)
	return picked
}

// allocate shares size among the groups (see the rule above).
func allocate(order []string, members map[string][]int, n, size int, seed int64) map[string]int {
	alloc := map[string]int{}
	weight := func(g string) int { return len(members[g]) }
	share, total := size, n
	if size >= len(order) {
		for _, g := range order {
			alloc[g] = 1
		}
		share, total = size-len(order), n-len(order)
		weight = func(g string) int { return len(members[g]) - 1 }
	}
	if share == 0 || total == 0 {
		return alloc
	}
	type rem struct {
		g string
		r int
	}
	var rems []rem
	given := 0
	for _, g := range order {
		num := share * weight(g)
		alloc[g] += num / total
		given += num / total
		rems = append(rems, rem{g, num % total})
	}
	slices.SortFunc(rems, func(a, b rem) int {
		if a.r != b.r {
			return b.r - a.r
		}
		return compareRank(seed, a.g, b.g)
	})
	for i := 0; given < share; i++ {
		alloc[rems[i].g]++
		given++
	}
	return alloc
}

// compareRank orders two names by the SHA-256 of (seed, name).
func compareRank(seed int64, a, b string) int {
	ra, rb := rank(seed, a), rank(seed, b)
	for i := range ra {
		if ra[i] != rb[i] {
			return int(ra[i]) - int(rb[i])
		}
	}
	return 0
}

func rank(seed int64, name string) [sha256.Size]byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(seed))
	return sha256.Sum256(fmt.Appendf(b[:], "\x00%s", name))
}

// CaseNames lists the names of testPath's cases (sorted), as its results
// name them: what a sample holds, for tests and benchmarks.
func (e *Env) CaseNames(testPath string) ([]string, error) {
	cases, err := e.cases(testPath)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(cases))
	for i, c := range cases {
		names[i] = c.name
	}
	return names, nil
}

// CaseSources lists the source files of testPath's case name (full
// paths for the public suites, embedded names for basics).
func (e *Env) CaseSources(testPath, name string) ([]string, error) {
	cases, err := e.cases(testPath)
	if err != nil {
		return nil, err
	}
	for _, c := range cases {
		if c.name == name {
			return slices.Clone(c.sources), nil
		}
	}
	return nil, fmt.Errorf("%w: no case %s in %s", environment.ErrUnknownPath, name, testPath)
}
