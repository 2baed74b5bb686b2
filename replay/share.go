package replay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"sync"
)

// Share is one trajectory's evaluation spread over many processes (a
// cluster's array tasks), all against one shared cache: each process
// plans the same distinct trees, evaluates the trees it is given that
// the cache lacks, and writes each result to the cache as soon as it is
// done; a final Evaluate then finds every tree in the cache and writes
// the report. The keys are Evaluate's (CacheKey), so the two mix freely.
type Share struct {
	Plan       *Plan
	id         string
	h          History
	ev         Evaluator
	cache      Cache
	set        *Set
	envVersion string
	paths      []string
	opts       EvaluateOptions
	logger     *slog.Logger
}

// ShareStats counts what Share.Evaluate did.
type ShareStats struct {
	// Given is how many trees the call was given; Cached how many of
	// them the cache already held, Evaluated how many it evaluated and
	// wrote, Failed how many could not be evaluated or written.
	Given, Cached, Evaluated, Failed int
}

// NewShare plans trajectory id's parts (as EvaluateParts does) against
// opts.Cache, which is required.
func NewShare(ctx context.Context, id string, parts []int, partCommit map[int]string, h History, ev Evaluator, opts EvaluateOptions) (*Share, error) {
	if opts.Cache == nil {
		return nil, errors.New("evaluate a share: no cache to share")
	}
	if len(opts.TestPaths) == 0 {
		return nil, errors.New("evaluate: no test paths given")
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	plan, err := NewPlanParts(ctx, parts, partCommit, h)
	if err != nil {
		return nil, fmt.Errorf("plan evaluation of %s: %w", id, err)
	}
	s := &Share{Plan: plan, id: id, h: h, ev: ev, cache: opts.Cache, envVersion: ev.Version(),
		paths: slices.Clone(opts.TestPaths), opts: opts, logger: logger}
	sets, _ := s.cache.(SetCache)
	s.set = loadSet(ctx, sets, SetName(id, s.envVersion, s.paths), s.envVersion, s.paths, logger)
	return s, nil
}

// Missing returns the trees of trees (all the plan's when nil) that the
// cache does not serve, in order.
func (s *Share) Missing(ctx context.Context, trees []string) []string {
	if trees == nil {
		trees = s.Plan.Trees
	}
	looked := lookupCache(ctx, s.cache, s.set, trees, s.envVersion, s.paths, 4*s.workers())
	return checkLooked(ctx, s.cache, s.set, trees, looked, s.envVersion, s.paths, s.logger)
}

// Evaluate evaluates the trees of trees that the cache lacks, writing
// each to the cache as soon as it is done: a killed process loses only
// the trees in flight, and running it again evaluates only what is
// missing. A tree the plan does not hold is an error. It writes neither a
// report nor the trajectory's cache set (the final Evaluate does).
func (s *Share) Evaluate(ctx context.Context, trees []string) (ShareStats, error) {
	for _, t := range trees {
		if _, ok := s.Plan.TreeCommit[t]; !ok {
			return ShareStats{}, fmt.Errorf("evaluate a share of %s: tree %s is not one of its trees", s.id, t)
		}
	}
	st := ShareStats{Given: len(trees)}
	todo := s.Missing(ctx, trees)
	st.Cached = len(trees) - len(todo)
	var mu sync.Mutex
	done := 0
	var failed []string
	evaluateTrees(ctx, s.h, s.ev, s.Plan.TreeCommit, todo, s.paths, s.cache, s.workers(), s.opts.TempDir, s.logger,
		func(tree string, r *treeResult, written *CacheEntry) {
			mu.Lock()
			defer mu.Unlock()
			done++
			if written != nil {
				st.Evaluated++
			} else {
				st.Failed++
				if r.err != nil {
					failed = append(failed, r.err.Error())
				} else {
					failed = append(failed, fmt.Sprintf("tree %s: cache write", tree))
				}
			}
			if s.opts.Progress != nil {
				s.opts.Progress(Progress{Done: st.Cached + done, Total: len(trees), Cached: st.Cached, Commit: s.Plan.TreeCommit[tree]})
			}
		})
	if err := ctx.Err(); err != nil {
		return st, fmt.Errorf("evaluate %s: %w", s.id, err)
	}
	if len(failed) > 0 {
		slices.Sort(failed)
		return st, fmt.Errorf("%w: %d of %d trees: %v", ErrIncomplete, len(failed), len(todo), failed)
	}
	return st, nil
}

func (s *Share) workers() int {
	if s.opts.Workers > 0 {
		return s.opts.Workers
	}
	return runtime.NumCPU()
}
