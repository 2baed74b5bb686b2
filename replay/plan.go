package replay

import (
	"context"
	"fmt"
	"os"
	"sort"

	"github.com/trajlab/traj/trace"
)

// TreeResolver finds the tree a commit points to; two commits with the same
// tree are the same repository state and are evaluated once.
type TreeResolver interface {
	Tree(ctx context.Context, commit string) (string, error)
}

// TreesResolver resolves many commits at once, more cheaply than one at a
// time (githistory reads the bundles' commits in one pass); errs holds why
// a commit's tree could not be read.
type TreesResolver interface {
	Trees(ctx context.Context, commits []string) (trees map[string]string, errs map[string]error)
}

// Plan maps parts to commits and commits to distinct trees: the work an
// evaluation has to do.
type Plan struct {
	// Parts are the trace's part indices in order.
	Parts []int
	// PartCommit is each part's effective commit.
	PartCommit map[int]string
	// Commits are the distinct commits in order of first appearance.
	Commits []string
	// CommitTree maps each commit to its tree.
	CommitTree map[string]string
	// Trees are the distinct trees in order of first appearance.
	Trees []string
	// TreeCommit is the commit each tree is checked out from: the first
	// commit seen with that tree.
	TreeCommit map[string]string
	// Unresolved holds the commits (in Commits, absent from CommitTree)
	// whose tree could not be read, for example a commit the bundle
	// lacks, and why: their parts cannot be evaluated, the others can.
	Unresolved map[string]error
}

// PartCommits returns the trace's parts in order and each part's effective
// commit: git_commit, or repo_checkpoint.commit_after when git_commit is
// empty. A part without either is an error.
func PartCommits(tr *trace.Trace) ([]int, map[int]string, error) {
	var parts []int
	commits := make(map[int]string)
	for _, turn := range tr.Turns {
		for _, p := range turn.Parts {
			c, err := effectiveCommit(&p)
			if err != nil {
				return nil, nil, err
			}
			if _, dup := commits[p.Part]; dup {
				return nil, nil, fmt.Errorf("part %d appears twice in the trace", p.Part)
			}
			parts = append(parts, p.Part)
			commits[p.Part] = c
		}
	}
	if len(parts) == 0 {
		return nil, nil, fmt.Errorf("trace %s has no parts", tr.TrajectoryID)
	}
	sort.Ints(parts)
	return parts, commits, nil
}

// effectiveCommit is part p's commit: git_commit, or
// repo_checkpoint.commit_after when git_commit is empty.
func effectiveCommit(p *trace.Part) (string, error) {
	c := p.GitCommit
	if c == "" && p.RepoCheckpoint != nil {
		c = p.RepoCheckpoint.CommitAfter
	}
	if c == "" {
		return "", fmt.Errorf("part %d has no git_commit", p.Part)
	}
	return c, nil
}

// NewPlan builds the plan for tr, resolving each distinct commit's tree once.
// A commit whose tree cannot be resolved goes to Plan.Unresolved; only a
// trace without usable parts or a cancelled ctx is an error.
func NewPlan(ctx context.Context, tr *trace.Trace, trees TreeResolver) (*Plan, error) {
	parts, partCommit, err := PartCommits(tr)
	if err != nil {
		return nil, err
	}
	return NewPlanParts(ctx, parts, partCommit, trees)
}

// PartCommitsAt is PartCommits for the trace file at path, read through
// its part index (trace.LoadPartIndex): the parts' contents are not read.
func PartCommitsAt(path string) ([]int, map[int]string, error) {
	ix, err := trace.LoadPartIndex(path)
	if err != nil {
		// Read it whole: that error says what is wrong with the trace.
		tr, rerr := ReadTraceFile(path)
		if rerr != nil {
			return nil, nil, rerr
		}
		return PartCommits(tr)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read trace: %w", err)
	}
	defer f.Close()
	parts := make([]int, 0, len(ix.Entries))
	commits := make(map[int]string, len(ix.Entries))
	for _, e := range ix.Entries {
		c := e.Commit
		if e.CommitInPart {
			if c, _, err = ix.Commit(f, e.Part); err != nil {
				return nil, nil, fmt.Errorf("read trace: %w", err)
			}
		}
		if c == "" {
			return nil, nil, fmt.Errorf("part %d has no git_commit", e.Part)
		}
		if _, dup := commits[e.Part]; dup {
			return nil, nil, fmt.Errorf("part %d appears twice in the trace", e.Part)
		}
		parts = append(parts, e.Part)
		commits[e.Part] = c
	}
	if len(parts) == 0 {
		return nil, nil, fmt.Errorf("trace %s has no parts", path)
	}
	sort.Ints(parts)
	return parts, commits, nil
}

// NewPlanParts is NewPlan for parts (in order) and their commits.
func NewPlanParts(ctx context.Context, parts []int, partCommit map[int]string, trees TreeResolver) (*Plan, error) {
	p := &Plan{
		Parts:      parts,
		PartCommit: partCommit,
		CommitTree: make(map[string]string, len(parts)/2),
		TreeCommit: make(map[string]string, len(parts)/2),
		Unresolved: make(map[string]error),
	}
	tree := trees.Tree
	if batch, ok := trees.(TreesResolver); ok {
		var commits []string
		seen := make(map[string]bool, len(parts)/2)
		for _, part := range parts {
			if c := partCommit[part]; !seen[c] {
				seen[c] = true
				commits = append(commits, c)
			}
		}
		got, errs := batch.Trees(ctx, commits)
		tree = func(_ context.Context, c string) (string, error) {
			if t, ok := got[c]; ok {
				return t, nil
			}
			if err := errs[c]; err != nil {
				return "", err
			}
			return "", fmt.Errorf("commit %s: not resolved", c)
		}
	}
	for _, part := range parts {
		c := partCommit[part]
		if _, seen := p.CommitTree[c]; seen {
			continue
		}
		if _, seen := p.Unresolved[c]; seen {
			continue
		}
		tree, err := tree(ctx, c)
		if err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return nil, cerr
			}
			p.Commits = append(p.Commits, c)
			p.Unresolved[c] = fmt.Errorf("resolve tree of commit %s (part %d): %w", c, part, err)
			continue
		}
		p.Commits = append(p.Commits, c)
		p.CommitTree[c] = tree
		if _, seen := p.TreeCommit[tree]; !seen {
			p.Trees = append(p.Trees, tree)
			p.TreeCommit[tree] = c
		}
	}
	return p, nil
}
