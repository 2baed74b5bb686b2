package replay

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/trajlab/traj/trace"
)

// CommitChecker answers whether a commit is in a trajectory's history.
type CommitChecker interface {
	HasCommit(ctx context.Context, commit string) (bool, error)
}

// ParentLister is implemented by histories that can name a commit's
// parents; Verify then also checks that a committed checkpoint's
// commit_after is a child of its commit_before.
type ParentLister interface {
	Parents(ctx context.Context, commit string) ([]string, error)
}

// Problem is one integrity violation. Part is 0 when it concerns the whole
// trajectory.
type Problem struct {
	Part    int    `json:"part,omitempty"`
	Message string `json:"message"`
}

func (p Problem) String() string {
	if p.Part == 0 {
		return p.Message
	}
	return fmt.Sprintf("part %d: %s", p.Part, p.Message)
}

// Verify checks a trajectory's integrity and returns every problem found
// (nil when there are none): parts are 1..N without gaps and in order;
// turns' part_start/part_end match their parts; every commit the trace
// names is in the history; each checkpoint's commit_before is the previous
// part's effective commit (for part 1, the initial commit, which must be in
// the history); git_commit equals commit_after; a part without a
// repo_checkpoint (the original recorder's, for parts that changed
// nothing) keeps the previous part's commit; a committed checkpoint's
// commit_after is a child of its commit_before (when h is a ParentLister);
// session_end agrees with the parts. An error is returned only when the history itself cannot be read.
func Verify(ctx context.Context, tr *trace.Trace, h CommitChecker) ([]Problem, error) {
	v := newVerifier(ctx, h)
	for i := range tr.Turns {
		turn := &tr.Turns[i]
		for j := range turn.Parts {
			v.part(&turn.Parts[j])
		}
		v.turn(turn)
	}
	v.end(tr.SessionEnd)
	return v.probs, v.checkErr
}

// VerifyTrace is Verify reading the trace from r as it streams by: one
// part at a time is held, so a trace of any length or size is verified
// in the memory of the commits it names. It also returns the number of
// parts; a trace that cannot be read is an error.
func VerifyTrace(ctx context.Context, r io.Reader, h CommitChecker) ([]Problem, int, error) {
	v := newVerifier(ctx, h)
	err := trace.Scan(r, trace.Visitor{
		OnPart: func(_ int, p *trace.Part) error {
			v.part(p)
			return ctx.Err()
		},
		OnTurn: func(_ int, t *trace.Turn) error {
			v.turn(t)
			return nil
		},
		OnEnd: func(t *trace.Trace) error {
			v.end(t.SessionEnd)
			return nil
		},
	})
	if err != nil {
		return nil, 0, fmt.Errorf("read trace: %w", err)
	}
	return v.probs, v.total, v.checkErr
}

// verifier is Verify's state as the parts arrive in order: each turn's
// parts, then the turn, then the end.
type verifier struct {
	ctx      context.Context
	h        CommitChecker
	probs    []Problem
	known    map[string]bool // commit -> in the history
	checkErr error

	want       int    // the part index expected next
	prevCommit string // the previous part's effective commit
	total      int    // parts so far
	turns      int
	// The current turn's parts: how many, the first and last index.
	inTurn, first, last int
}

func newVerifier(ctx context.Context, h CommitChecker) *verifier {
	return &verifier{ctx: ctx, h: h, known: map[string]bool{}, want: 1}
}

func (v *verifier) add(part int, format string, args ...any) {
	v.probs = append(v.probs, Problem{Part: part, Message: fmt.Sprintf(format, args...)})
}

func (v *verifier) inHistory(commit string) bool {
	if ok, seen := v.known[commit]; seen {
		return ok
	}
	ok, err := v.h.HasCommit(v.ctx, commit)
	if err != nil && v.checkErr == nil {
		v.checkErr = fmt.Errorf("look up commit %s: %w", commit, err)
	}
	v.known[commit] = ok
	return ok
}

func (v *verifier) checkCommit(part int, field, commit string) {
	if commit != "" && !v.inHistory(commit) {
		v.add(part, "%s %s is not in the bundle", field, commit)
	}
}

func (v *verifier) part(p *trace.Part) {
	if v.inTurn == 0 {
		v.first = p.Part
	}
	v.inTurn++
	v.last = p.Part
	v.total++
	if p.Part != v.want {
		v.add(p.Part, "expected part %d here: parts must be 1..N without gaps, in order", v.want)
		v.want = p.Part
	}
	v.want++
	if p.GitCommit == "" {
		v.add(p.Part, "git_commit is empty")
	}
	v.checkCommit(p.Part, "git_commit", p.GitCommit)
	cp := p.RepoCheckpoint
	if cp == nil {
		// The original recorder leaves repo_checkpoint null on a part that
		// changed nothing: its effective commit is then the previous part's.
		if v.prevCommit != "" && p.GitCommit != "" && p.GitCommit != v.prevCommit {
			v.add(p.Part, "repo_checkpoint is null (nothing changed) but git_commit %s is not the previous part's effective commit %s", p.GitCommit, v.prevCommit)
		}
	} else {
		v.checkCommit(p.Part, "commit_before", cp.CommitBefore)
		if cp.CommitAfter != p.GitCommit {
			v.checkCommit(p.Part, "commit_after", cp.CommitAfter)
			v.add(p.Part, "git_commit %s differs from repo_checkpoint.commit_after %s", p.GitCommit, cp.CommitAfter)
		}
		switch {
		case cp.CommitBefore == "":
			v.add(p.Part, "repo_checkpoint.commit_before is empty")
		case v.prevCommit != "" && cp.CommitBefore != v.prevCommit:
			v.add(p.Part, "commit_before %s is not the previous part's effective commit %s", cp.CommitBefore, v.prevCommit)
		}
		if cp.Committed && cp.CommitBefore == cp.CommitAfter && cp.CommitAfter != "" {
			v.add(p.Part, "committed is true but commit_after equals commit_before")
		}
		if pl, ok := v.h.(ParentLister); ok && cp.Committed && cp.CommitBefore != cp.CommitAfter && v.inHistory(cp.CommitAfter) && v.inHistory(cp.CommitBefore) {
			parents, err := pl.Parents(v.ctx, cp.CommitAfter)
			if err != nil && v.checkErr == nil {
				v.checkErr = fmt.Errorf("read parents of %s: %w", cp.CommitAfter, err)
			}
			if err == nil && !slices.Contains(parents, cp.CommitBefore) {
				v.add(p.Part, "commit_after %s is not a child of commit_before %s", cp.CommitAfter, cp.CommitBefore)
			}
		}
	}
	if p.GitCommit != "" {
		v.prevCommit = p.GitCommit
	}
}

// turn checks a turn's own fields against the parts that came before it.
func (v *verifier) turn(t *trace.Turn) {
	v.turns++
	if v.inTurn > 0 {
		if t.PartStart != nil && *t.PartStart != v.first {
			v.add(0, "turn %d: part_start is %d but its first part is %d", t.Turn, *t.PartStart, v.first)
		}
		if t.PartEnd != nil && *t.PartEnd != v.last {
			v.add(0, "turn %d: part_end is %d but its last part is %d", t.Turn, *t.PartEnd, v.last)
		}
	} else if t.PartStart != nil || t.PartEnd != nil {
		v.add(0, "turn %d has no parts but sets part_start/part_end", t.Turn)
	}
	v.inTurn = 0
}

func (v *verifier) end(se *trace.SessionEnd) {
	if v.total == 0 {
		v.add(0, "the trace has no parts")
	}
	if se == nil {
		return
	}
	if se.TotalParts != v.total {
		v.add(0, "session_end.total_parts is %d but the trace has %d parts", se.TotalParts, v.total)
	}
	if se.TotalTurns != 0 && se.TotalTurns != v.turns {
		v.add(0, "session_end.total_turns is %d but the trace has %d turns", se.TotalTurns, v.turns)
	}
	if se.FinalGitCommit != "" {
		// The final checkpoint may commit after the last part, so only its
		// presence is checked.
		v.checkCommit(0, "session_end.final_git_commit", se.FinalGitCommit)
	}
}
