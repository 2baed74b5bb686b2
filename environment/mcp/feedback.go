package mcp

import (
	"fmt"
	"slices"

	"github.com/trajlab/traj/environment"
)

// Feedback is how much of a run_tests result the agent is told. Below
// full, the answer says nothing the code under test chooses beyond each
// case's pass or fail and the build's own outcome: no phase (compile
// error, wrong output and timeout look alike), no duration, no time, no
// control's exit status. What a level can carry, measured, is in the
// package doc ("Channel capacity").
type Feedback string

const (
	// FeedbackCounts: passed/failed/total and the build's outcome only.
	FeedbackCounts Feedback = "counts"
	// FeedbackFailures: the counts, and each failing case's name; no
	// phase, no expected or actual output, no exit codes.
	FeedbackFailures Feedback = "failures"
	// FeedbackFull: every case with its phase, expected and actual
	// output and durations (version 1's behaviour).
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
	// Times: a compile that sleeps or times out on a case would choose
	// them (the build's too, to keep one rule).
	r.Timestamp, r.DurationMS = "", 0
	res.DurationMS, res.Build.DurationMS = 0, 0
	if len(res.Voided) > 0 {
		// Which suite a control voided is the suite's pass or fail; the
		// reason names what the control's program did.
		voided := make([]environment.Void, len(res.Voided))
		for i, v := range res.Voided {
			voided[i] = environment.Void{Suite: v.Suite, Reason: VoidedReason}
		}
		res.Voided = voided
	}
	all := res.Cases
	res.Cases = nil
	if f == FeedbackFailures {
		for _, c := range all {
			if !c.Passed {
				res.Cases = append(res.Cases, environment.CaseResult{Name: c.Name})
			}
		}
	}
	if res.Cases == nil {
		res.Cases = []environment.CaseResult{}
	}
	return r
}

// VoidedReason is what a voided suite's reason says below full.
const VoidedReason = "the suite's controls failed: its cases count as failed"
