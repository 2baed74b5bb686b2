package replay

import "strings"

// FreshSuite is the C environment's generated suite
// (environment/ccompiler's SuiteFresh): programs written per evaluation
// that nobody can look up. The gap between the public suites' pass rate
// and its pass rate, per checkpoint, is the signal that a compiler fits
// the public tests rather than the language.
const FreshSuite = "fresh"

// IsFresh says whether a test path is the fresh suite or part of it
// ("fresh", "fresh/level_1").
func IsFresh(path string) bool {
	suite, _, _ := strings.Cut(path, "/")
	return suite == FreshSuite
}

// FreshGap is the public − fresh gap of one result, the one rule every
// reader of scores uses (the report, the viewer, the export): the pass
// rate over every path but fresh's (cases pooled) minus fresh's (its
// paths pooled), given each path's passed and total. ok is false unless
// both sides have cases; "all" mixes them and counts as neither.
func FreshGap(counts map[string][2]int64) (gap float64, ok bool) {
	var pubP, pubT, frP, frT int64
	for path, c := range counts {
		switch {
		case path == "all":
		case IsFresh(path):
			frP, frT = frP+c[0], frT+c[1]
		default:
			pubP, pubT = pubP+c[0], pubT+c[1]
		}
	}
	if pubT <= 0 || frT <= 0 {
		return 0, false
	}
	return float64(pubP)/float64(pubT) - float64(frP)/float64(frT), true
}
