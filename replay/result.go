package replay

import (
	"strings"

	"github.com/trajlab/traj/environment/evaluation"
)

// The results and cache entries of an evaluation are the evaluation
// wing's (environment/evaluation); replay names them as before.
type (
	CaseResult  = evaluation.CaseResult
	SuiteResult = evaluation.SuiteResult
	Result      = evaluation.Result
	KeyUse      = evaluation.KeyUse
	Cache       = evaluation.Cache
	CacheEntry  = evaluation.CacheEntry
	Evaluator   = evaluation.Evaluator
)

// Keys a result can be kept under (KeyUse.Key).
const (
	KeyTree     = evaluation.KeyTree
	KeyArtifact = evaluation.KeyArtifact
)

// PassRate is passed/total, or 0 when nothing ran.
func PassRate(passed, total int) float64 {
	if total == 0 {
		return 0
	}
	return float64(passed) / float64(total)
}

// TestID names a test case across suites. Case names that already hold a
// slash are taken as qualified ("basics/smoke/ret0", as the C-compiler
// environment names them); bare names are prefixed with the suite path.
func TestID(suite, name string) string {
	if suite == "" || strings.Contains(name, "/") {
		return name
	}
	return suite + "/" + name
}
