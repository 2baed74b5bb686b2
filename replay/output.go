package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"maps"
	"reflect"
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
	// PartEvaluations is each part's result (its commit's, without cases;
	// the parts of one commit share one value: read it, never change it).
	PartEvaluations PartMap[*PartEvaluation] `json:"part_evaluations"`
	// TestAttribution says, for every test case, which parts moved it.
	TestAttribution map[string]*Attribution `json:"test_attribution"`

	Environment EnvironmentRef `json:"environment"`
	TestPaths   []string       `json:"test_paths"`
	Stats       Stats          `json:"stats"`
	// Labels are the trajectory's failure labels and the thresholds they
	// were computed with (replay/labels.Set), from the trace and this
	// report: `traj replay evaluate` sets them, outside InputsDigest, so
	// new thresholds relabel a report without evaluating anything.
	Labels json.RawMessage `json:"labels,omitempty"`
	// InputsDigest, set when the cache served every tree, is the digest of
	// what the report is made of (EvaluateOptions.Previous): an evaluate
	// with the same one leaves the report as it is.
	InputsDigest string `json:"inputs_digest,omitempty"`
	// Sum is the CRC-32C of the report's bytes before it ("crc32c:…"),
	// written with InputsDigest (ReadReportDigest checks it): a report cut
	// or changed after it was written is built again. A CRC, as the part
	// index's, because the report is large (24 MB at 50,000 parts): it
	// guards against accidents and edits; nothing in the cache is signed.
	Sum string `json:"sum,omitempty"`
}

// outputVersion changes when what a report is made of changes: it starts
// the inputs digest.
const outputVersion = "traj-evaluation-v1"

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
	// ArtifactHits counts the trees evaluated here whose build's
	// artifacts had a result in the cache: built, no case run.
	ArtifactHits int `json:"artifact_hits,omitempty"`
	Failures     int `json:"failures"`
	Workers      int `json:"workers"`
	// DurationMs is the wall time of the evaluate.
	DurationMs int64 `json:"duration_ms"`
}

// Result sources in CommitEvaluation.Source.
const (
	SourceEvaluated = "evaluated" // run by this evaluate
	SourceCache     = "cache"     // read from the evaluation cache
	SourceSameTree  = "same_tree" // another commit with the same tree was evaluated
	// SourceArtifact: built by this evaluate, its artifacts' result read
	// from the cache (no case ran).
	SourceArtifact = "artifact_cache"
	SourceFailed   = "failed" // could not be evaluated; see Error
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
	// Key is the cache key that serves the tree (KeyTree, KeyArtifact)
	// when the evaluation could key by the build's artifacts; Artifact
	// their digest; KeyWhy why the tree's key was used.
	Key      string `json:"key,omitempty"`
	Artifact string `json:"artifact,omitempty"`
	KeyWhy   string `json:"key_why,omitempty"`
}

// SuiteSummary is a suite's counts without its cases.
type SuiteSummary struct {
	Passed   int     `json:"passed"`
	Failed   int     `json:"failed"`
	Total    int     `json:"total"`
	PassRate float64 `json:"pass_rate"`
	Error    string  `json:"error,omitempty"`
	// FixedLike: SuiteResult.FixedLike.
	FixedLike int `json:"fixed_like,omitempty"`
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
	// FixedLike sums the suites' FixedLike: cases whose program did what
	// a program ignoring its input does (a suspicion, in traj report).
	FixedLike int `json:"fixed_like,omitempty"`
}

// PartMap is a map keyed by part index that encodes in numeric key order
// (encoding/json would sort "10" before "2").
type PartMap[T any] map[int]T

// Keys returns the part indices in order.
func (m PartMap[T]) Keys() []int { return slices.Sorted(maps.Keys(m)) }

// MarshalJSON encodes m as an object with keys in numeric order. Values
// that compare equal (a commit, or the one *PartEvaluation the parts of a
// commit share) are encoded once: at 10,000 parts the report is mostly
// repeats.
func (m PartMap[T]) MarshalJSON() ([]byte, error) {
	var memo map[any][]byte
	if reflect.TypeFor[T]().Comparable() {
		memo = make(map[any][]byte)
	}
	b := make([]byte, 0, 64*len(m))
	b = append(b, '{')
	for i, k := range m.Keys() {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = strconv.AppendInt(b, int64(k), 10)
		b = append(b, '"', ':')
		v, ok := memo[any(m[k])]
		if !ok {
			var err error
			if v, err = json.Marshal(m[k]); err != nil {
				return nil, err
			}
			if memo != nil {
				memo[any(m[k])] = v
			}
		}
		b = append(b, v...)
	}
	b = append(b, '}')
	return b, nil
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

// marshalIndent is json.MarshalIndent(o, "", "  ") — the same bytes —
// with the two part maps, most of a long trajectory's report, indented
// as they are encoded and each distinct value encoded once (indenting the
// whole encoding again took a fifth of a cached evaluate at 10,000 parts).
func (o *Output) marshalIndent() ([]byte, error) {
	data, err := o.marshalParts()
	if err != nil || o.InputsDigest == "" {
		return data, err
	}
	// data ends "\n}": the sum of what comes before goes last.
	body := data[:len(data)-2]
	return fmt.Appendf(body[:len(body):len(body)], "%s%08x\"\n}", sumField, crc32.Checksum(body, castagnoli)), nil
}

// sumField starts the last field of a report with an InputsDigest.
const sumField = ",\n  \"sum\": \"crc32c:"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ReadReportDigest returns the InputsDigest of the report at path (see
// ReportDigest); "" when it is missing or unreadable. The file is mapped,
// not read: at 50,000 parts a report is 24 MB, and a cached evaluate only
// needs its sum checked.
func ReadReportDigest(path string) string {
	var d string
	if err := withMapped(path, func(data []byte) { d = ReportDigest(data) }); err != nil {
		return ""
	}
	return d
}

// ReportDigest returns the InputsDigest of the report data when it has
// one and its Sum matches its bytes; "" when it has none, or was changed
// after it was written.
func ReportDigest(data []byte) string {
	const inputsField = "\"inputs_digest\": \""
	tail := len(sumField) + 8 + len("\"\n}\n")
	if len(data) < tail+len(inputsField)+65 {
		return ""
	}
	body, end := data[:len(data)-tail], data[len(data)-tail:]
	if string(end) != fmt.Sprintf("%s%08x\"\n}\n", sumField, crc32.Checksum(body, castagnoli)) {
		return ""
	}
	in := body[len(body)-len(inputsField)-65:]
	if !bytes.HasPrefix(in, []byte(inputsField)) || in[len(in)-1] != '"' {
		return ""
	}
	return string(in[len(inputsField) : len(in)-1])
}

// marshalParts is marshalIndent without the digest.
func (o *Output) marshalParts() ([]byte, error) {
	rest := *o
	rest.Sum = ""
	rest.PartToCommit, rest.PartEvaluations = nil, nil
	data, err := json.MarshalIndent(&rest, "", "  ")
	if err != nil {
		return nil, err
	}
	// A nil PartMap encodes as {}; the newline and indent before the key
	// cannot occur inside a JSON string.
	for _, f := range []struct {
		key string
		enc func([]byte) ([]byte, error)
	}{
		{"part_to_commit", o.PartToCommit.appendIndent},
		{"part_evaluations", o.PartEvaluations.appendIndent},
	} {
		hole := []byte("\n  \"" + f.key + "\": {},\n")
		i := bytes.Index(data, hole)
		if i < 0 {
			return nil, fmt.Errorf("encode %s: no place for it", f.key)
		}
		head := append([]byte(nil), data[:i+len(hole)-4]...)
		head, err = f.enc(head)
		if err != nil {
			return nil, err
		}
		data = append(append(head, ",\n"...), data[i+len(hole):]...)
	}
	return data, nil
}

// appendIndent appends m as json.MarshalIndent encodes it as a field of a
// top-level object (indent "  "), each distinct comparable value once.
func (m PartMap[T]) appendIndent(b []byte) ([]byte, error) {
	if len(m) == 0 {
		return append(b, "{}"...), nil
	}
	var memo map[any][]byte
	if reflect.TypeFor[T]().Comparable() {
		memo = make(map[any][]byte)
	}
	b = append(b, '{')
	for i, k := range m.Keys() {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n    \""...)
		b = strconv.AppendInt(b, int64(k), 10)
		b = append(b, "\": "...)
		v, ok := memo[any(m[k])]
		if !ok {
			var err error
			if v, err = json.MarshalIndent(m[k], "    ", "  "); err != nil {
				return nil, err
			}
			if memo != nil {
				memo[any(m[k])] = v
			}
		}
		b = append(b, v...)
	}
	return append(b, "\n  }"...), nil
}
