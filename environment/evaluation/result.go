package evaluation

import (
	"maps"
	"slices"
)

// CaseResult is one test case's outcome.
type CaseResult struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
}

// SuiteResult is the outcome of one test path at one repository state.
type SuiteResult struct {
	Passed int          `json:"passed"`
	Failed int          `json:"failed"`
	Total  int          `json:"total"`
	Cases  []CaseResult `json:"cases,omitempty"`
	// Error says why the suite could not run (for example the build failed).
	Error string `json:"error,omitempty"`
	// Void says why a version 3 evaluation voided the suite's score (a
	// control failed); Passed is then 0. Read in old results only: no
	// evaluation voids a suite now.
	Void string `json:"void,omitempty"`
	// FixedLike counts the cases whose program did what the case without
	// its nonce wants (environment.Result.FixedLike): a suspicion.
	FixedLike int `json:"fixed_like,omitempty"`
}

// Result is the outcome of every requested test path at one repository
// state, keyed by test path. It is what an Evaluator returns and what the
// cache stores.
type Result struct {
	Suites map[string]SuiteResult `json:"suites"`
	// Key says which cache key served or stored the result when the
	// evaluator keys by the build's artifacts (replay/evalbox); nil: the
	// tree's key alone.
	Key *KeyUse `json:"key,omitempty"`
}

// Keys a result can be kept under (KeyUse.Key).
const (
	// KeyTree: the tree's content (CacheKey).
	KeyTree = "tree"
	// KeyArtifact: the digest of what the tree's build produced
	// (ArtifactCacheKey): trees whose builds are the same share it.
	KeyArtifact = "artifact"
)

// ForTree is r as the tree's cache entry keeps it: which key the result
// is kept under, not whether this evaluation found it in the cache.
func (r Result) ForTree() Result {
	if r.Key != nil && r.Key.Cached {
		k := *r.Key
		k.Cached = false
		r.Key = &k
	}
	return r
}

// KeyUse is how an evaluation that could key by the build's artifacts
// did. A task that declares its build's artifacts has every compile
// shown only those (replay/evalbox), so the result is a function of
// their bytes: trees that change notes, plans or tests but build the same
// compiler share one evaluation.
type KeyUse struct {
	// Key is KeyArtifact when the result is kept under the artifacts'
	// digest, else KeyTree (see Why).
	Key string `json:"key"`
	// Artifact is the SHA-256 of the build's artifacts (names, modes,
	// bytes); "" when they could not be read.
	Artifact string `json:"artifact,omitempty"`
	// Cached: the tree was built and its artifacts' result came from the
	// cache: no case ran.
	Cached bool `json:"cached,omitempty"`
	// Why says why the tree's key was used (build failed, an artifact is
	// missing, no sandbox, the build is not reproducible).
	Why string `json:"why,omitempty"`
}

// Totals sums passed, failed and total over all suites.
func (r Result) Totals() (passed, failed, total int) {
	for _, s := range r.Suites {
		passed += s.Passed
		failed += s.Failed
		total += s.Total
	}
	return passed, failed, total
}

// SuitePaths returns the suite paths in sorted order.
func (r Result) SuitePaths() []string { return slices.Sorted(maps.Keys(r.Suites)) }
