package replay

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
)

// Output is the evaluate report. The first four keys are the original
// offline replayer's; the rest are traj additions.
type Output struct {
	TrajectoryID string `json:"trajectory_id"`
	// CommitsEvaluated counts the distinct commits the trajectory reached.
	CommitsEvaluated int `json:"commits_evaluated"`
	// CommitEvaluations holds each distinct commit's result.
	CommitEvaluations map[string]*CommitEvaluation `json:"commit_evaluations"`
	// PartToCommit maps every part to its effective commit.
	PartToCommit PartMap[string] `json:"part_to_commit"`
	// PartEvaluations is each part's result (its commit's, without cases).
	PartEvaluations PartMap[*PartEvaluation] `json:"part_evaluations"`
	// TestAttribution says, for every test case, which parts moved it.
	TestAttribution map[string]*Attribution `json:"test_attribution"`

	Environment EnvironmentRef `json:"environment"`
	TestPaths   []string       `json:"test_paths"`
	Stats       Stats          `json:"stats"`
}

// EnvironmentRef identifies the environment that produced the results.
type EnvironmentRef struct {
	Name    string `json:"name,omitempty"`
	Version string `json:"version"`
}

// Stats counts the work an evaluate did.
type Stats struct {
	Parts          int `json:"parts"`
	UniqueCommits  int `json:"unique_commits"`
	UniqueTrees    int `json:"unique_trees"`
	TreesEvaluated int `json:"trees_evaluated"`
	CacheHits      int `json:"cache_hits"`
	Failures       int `json:"failures"`
	Workers        int `json:"workers"`
	// DurationMs is the wall time of the evaluate.
	DurationMs int64 `json:"duration_ms"`
}

// Result sources in CommitEvaluation.Source.
const (
	SourceEvaluated = "evaluated" // run by this evaluate
	SourceCache     = "cache"     // read from the evaluation cache
	SourceSameTree  = "same_tree" // another commit with the same tree was evaluated
	SourceFailed    = "failed"    // could not be evaluated; see Error
)

// CommitEvaluation is one commit's result.
type CommitEvaluation struct {
	Tree     string  `json:"tree"`
	Passed   int     `json:"passed"`
	Failed   int     `json:"failed"`
	Total    int     `json:"total"`
	PassRate float64 `json:"pass_rate"`
	// Parts are the parts whose effective commit this is.
	Parts      []int                  `json:"parts"`
	Suites     map[string]SuiteResult `json:"suites"`
	Source     string                 `json:"source"`
	SameTreeAs string                 `json:"same_tree_as,omitempty"`
	DurationMs int64                  `json:"duration_ms"`
	Error      string                 `json:"error,omitempty"`
}

// SuiteSummary is a suite's counts without its cases.
type SuiteSummary struct {
	Passed   int     `json:"passed"`
	Failed   int     `json:"failed"`
	Total    int     `json:"total"`
	PassRate float64 `json:"pass_rate"`
	Error    string  `json:"error,omitempty"`
}

// PartEvaluation is one part's result: its commit's counts.
type PartEvaluation struct {
	Commit   string                  `json:"commit"`
	Passed   int                     `json:"passed"`
	Failed   int                     `json:"failed"`
	Total    int                     `json:"total"`
	PassRate float64                 `json:"pass_rate"`
	Suites   map[string]SuiteSummary `json:"suites"`
	Error    string                  `json:"error,omitempty"`
}

// PartMap is a map keyed by part index that encodes in numeric key order
// (encoding/json would sort "10" before "2").
type PartMap[T any] map[int]T

// Keys returns the part indices in order.
func (m PartMap[T]) Keys() []int { return slices.Sorted(maps.Keys(m)) }

// MarshalJSON encodes m as an object with keys in numeric order.
func (m PartMap[T]) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range m.Keys() {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Quote(strconv.Itoa(k)))
		b.WriteByte(':')
		v, err := json.Marshal(m[k])
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON decodes an object keyed by part index.
func (m *PartMap[T]) UnmarshalJSON(data []byte) error {
	var raw map[int]T
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*m = raw
	return nil
}
