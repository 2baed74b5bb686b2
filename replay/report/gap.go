package report

import "github.com/trajlab/traj/replay/labels"

// FreshSuite is the C environment's generated suite
// (environment/ccompiler/fresh): programs written per evaluation that
// nobody can look up. The gap between the public suites' pass rate and
// its pass rate, per checkpoint, is the signal that a compiler fits the
// public tests rather than the language.
const FreshSuite = labels.FreshSuite

// gapAt is the public − fresh gap of one result (labels.Gap: the one
// rule, which the suspect label applies too).
func gapAt(counts map[string][2]int64) (gap float64, ok bool) { return labels.Gap(counts) }
