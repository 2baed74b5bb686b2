package mcp

import (
	"fmt"
	"slices"

	"github.com/trajlab/traj/environment"
)

// Feedback is how much of a run_tests result the agent is told.
type Feedback string

const (
	// FeedbackCounts: passed/failed/total and the build's outcome only.
	FeedbackCounts Feedback = "counts"
	// FeedbackFailures: the counts, and each failing case's name and
	// phase; no expected or actual output, no exit codes.
	FeedbackFailures Feedback = "failures"
	// FeedbackFull: every case with expected and actual output (version
	// 1's behaviour).
	FeedbackFull Feedback = "full"
)

// Feedbacks lists the levels, least told first.
var Feedbacks = []Feedback{FeedbackCounts, FeedbackFailures, FeedbackFull}

// ParseFeedback checks a level's name; "" is FeedbackFull.
func ParseFeedback(s string) (Feedback, error) {
	if s == "" {
		return FeedbackFull, nil
	}
	if f := Feedback(s); slices.Contains(Feedbacks, f) {
		return f, nil
	}
	return "", fmt.Errorf("feedback %q: want counts, failures or full", s)
}

// OutputCap bounds the build output (its tail) and an error message (its
// head) in any answer, at every level: whatever a build prints, an answer
// stays small.
const OutputCap = 2 << 10

// For returns what the agent is told of r at level f. r is not changed
// (the caller keeps the full result for the record).
func (r Response) For(f Feedback) Response {
	if r.Error != nil && len(*r.Error) > OutputCap {
		msg := (*r.Error)[:OutputCap] + "…"
		r.Error = &msg
	}
	if r.Result == nil {
		return r
	}
	res := *r.Result
	if n := len(res.Build.StderrTail); n > OutputCap {
		res.Build.StderrTail = res.Build.StderrTail[n-OutputCap:]
	}
	// Which cases carry no nonce, and which did what a fixed program
	// does, are the record's, never the agent's.
	res.FixedLike = 0
	res.Cases = slices.Clone(res.Cases)
	for i := range res.Cases {
		res.Cases[i].FixedLike, res.Cases[i].Unguarded = false, false
	}
	r.Result = &res
	if f == FeedbackFull || f == "" {
		return r
	}
	all := res.Cases
	res.Cases = nil
	if f == FeedbackFailures {
		for _, c := range all {
			if !c.Passed {
				res.Cases = append(res.Cases, environment.CaseResult{Name: c.Name, Phase: c.Phase})
			}
		}
	}
	if res.Cases == nil {
		res.Cases = []environment.CaseResult{}
	}
	return r
}
