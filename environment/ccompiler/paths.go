package ccompiler

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/trajlab/traj/environment"
)

// ShardSize is the number of cases in each c_testsuite/part_<n>,
// torture/part_<n> and torture_std/part_<n>: cases sorted by name, part_1 holds the first 50.
// Changing it changes every shard's meaning, so it is part of Version.
const ShardSize = 50

// Suite names as they appear in test paths.
const (
	SuiteBasics     = "basics"
	SuiteWacct      = "wacct"
	SuiteCTestsuite = "c_testsuite"
	SuiteTorture    = "torture"
	// SuiteTortureStd is torture's standard-C subset; "all" leaves it out
	// (its cases are torture's).
	SuiteTortureStd = "torture_std"
	// SuiteFresh is generated per evaluation (environment/ccompiler/fresh).
	SuiteFresh = "fresh"
	PathAll    = "all"
)

// TestPath is a parsed test path: a suite (or "all") and an optional
// selector: a basics category, "chapter_<n>" for wacct, "part_<n>" for
// the sharded suites (N is then set), or for any suite
// "sample_<size>_<seed>", a fixed sample of its cases (Sample; N is the
// size; see sample.go).
type TestPath struct {
	Suite    string
	Selector string
	N        int
	Sample   bool
	Seed     int64
}

func (p TestPath) String() string {
	if p.Selector == "" {
		return p.Suite
	}
	return p.Suite + "/" + p.Selector
}

// ParseTestPath checks a test path's syntax. It accepts only
// `suite` or `suite/selector` made of [a-z0-9_] and so can never name a file
// outside the fixtures (no "..", no absolute path, no backslash, no NUL).
// Whether the path exists is decided by the environment's catalogue.
func ParseTestPath(s string) (TestPath, error) {
	if s == "" {
		return TestPath{}, fmt.Errorf("%w: empty", environment.ErrUnknownPath)
	}
	if len(s) > 64 {
		return TestPath{}, fmt.Errorf("%w: longer than 64 bytes", environment.ErrUnknownPath)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '/') {
			return TestPath{}, fmt.Errorf("%w: %q: only a-z, 0-9, _ and one / are allowed", environment.ErrUnknownPath, s)
		}
	}
	suite, sel, hasSel := strings.Cut(s, "/")
	if suite == "" || (hasSel && sel == "") || strings.Contains(sel, "/") {
		return TestPath{}, fmt.Errorf("%w: %q: want SUITE or SUITE/SELECTOR", environment.ErrUnknownPath, s)
	}
	p := TestPath{Suite: suite, Selector: sel}
	switch suite {
	case PathAll:
		if hasSel {
			return TestPath{}, fmt.Errorf("%w: %q: \"all\" takes no selector", environment.ErrUnknownPath, s)
		}
	case SuiteBasics, SuiteWacct, SuiteCTestsuite, SuiteTorture, SuiteTortureStd, SuiteFresh:
		if size, seed, ok := parseSample(sel); hasSel && ok {
			p.N, p.Sample, p.Seed = size, true, seed
			return p, nil
		}
		if hasSel && strings.HasPrefix(sel, sampleSelector) {
			return TestPath{}, fmt.Errorf("%w: %q: want %s/sample_<size>_<seed>", environment.ErrUnknownPath, s, suite)
		}
		return parseSelector(p, s, hasSel)
	default:
		return TestPath{}, fmt.Errorf("%w: %q: unknown suite", environment.ErrUnknownPath, s)
	}
	return p, nil
}

// parseSelector checks a suite's own selector (not a sample).
func parseSelector(p TestPath, s string, hasSel bool) (TestPath, error) {
	suite, sel := p.Suite, p.Selector
	switch suite {
	case SuiteBasics:
	case SuiteWacct:
		if hasSel {
			n, ok := numbered(sel, "chapter_")
			if !ok {
				return TestPath{}, fmt.Errorf("%w: %q: want wacct/chapter_<n>", environment.ErrUnknownPath, s)
			}
			p.N = n
		}
	case SuiteFresh:
		if hasSel {
			n, ok := numbered(sel, "level_")
			if !ok {
				return TestPath{}, fmt.Errorf("%w: %q: want fresh/level_<n>", environment.ErrUnknownPath, s)
			}
			p.N = n
		}
	case SuiteCTestsuite, SuiteTorture, SuiteTortureStd:
		if hasSel {
			n, ok := numbered(sel, "part_")
			if !ok {
				return TestPath{}, fmt.Errorf("%w: %q: want %s/part_<n>", environment.ErrUnknownPath, s, suite)
			}
			p.N = n
		}
	}
	return p, nil
}

// numbered parses prefix<n> with n ≥ 1 written without leading zeros.
func numbered(s, prefix string) (int, bool) {
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok || rest == "" || rest[0] == '0' || len(rest) > 6 {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 1 {
		return 0, false
	}
	return n, true
}
