package groundtruth

import (
	"context"
	"log/slog"
	"slices"
	"sync"

	"github.com/trajlab/traj/orchestrator/task"
	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/trace"
)

// DefaultQueue bounds the checkpoints waiting for evaluation.
const DefaultQueue = 64

// Options configure a Background.
type Options struct {
	// Workers is how many trees are evaluated at once (default 1: the
	// cases of one tree already use every core).
	Workers int
	// Queue bounds the checkpoints waiting (default DefaultQueue); when it
	// is full the oldest waiting one is dropped, and `traj replay
	// evaluate` fills the gap from the same cache after the run.
	Queue int
	// FailingTests caps the test names AtTurnEnd lists (-1: none).
	FailingTests int
	// OnResult is called with every result as it lands (the live status
	// line); it must not block.
	OnResult func(trace.GroundTruth)
	Logger   *slog.Logger
}

// job is one checkpoint to evaluate.
type job struct {
	part   int
	commit string
}

// Background evaluates checkpoints as they are made, newest first, each
// distinct commit once, and keeps the results until the recorder takes
// them into the trace.
type Background struct {
	s    *Scorer
	opts Options
	log  *slog.Logger
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu      sync.Mutex
	wake    *sync.Cond
	waiting []job // newest last
	closed  bool
	// known: every commit submitted (queued, running or done).
	known map[string]bool
	done  map[string]trace.GroundTruth
	// untaken: results not yet handed to the trace, in landing order.
	untaken  []trace.GroundTruth
	latest   *trace.GroundTruth
	solvedAt int
	dropped  int
	changed  chan struct{}
	// turnDetail is the per-case result of the last AtTurnEnd.
	turnDetail   replay.Result
	turnDetailOK bool
}

// Start starts the workers.
func Start(ctx context.Context, s *Scorer, opts Options) *Background {
	if opts.Workers <= 0 {
		opts.Workers = 1
	}
	if opts.Queue <= 0 {
		opts.Queue = DefaultQueue
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	b := &Background{s: s, opts: opts, log: opts.Logger, known: map[string]bool{}, done: map[string]trace.GroundTruth{},
		changed: make(chan struct{})}
	b.wake = sync.NewCond(&b.mu)
	b.ctx, b.stop = context.WithCancel(context.WithoutCancel(ctx))
	for range opts.Workers {
		b.wg.Add(1)
		go b.work()
	}
	return b
}

// Submit queues commit, made by part's checkpoint; a commit already
// submitted is ignored. It never blocks.
func (b *Background) Submit(part int, commit string) {
	if commit == "" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.known[commit] {
		return
	}
	b.known[commit] = true
	if len(b.waiting) >= b.opts.Queue {
		old := b.waiting[0]
		b.waiting = b.waiting[1:]
		delete(b.known, old.commit)
		b.dropped++
		b.log.Warn("ground truth falls behind: a checkpoint is left for replay evaluate", "part", old.part, "commit", old.commit)
	}
	b.waiting = append(b.waiting, job{part, commit})
	b.wake.Signal()
}

func (b *Background) work() {
	defer b.wg.Done()
	for {
		b.mu.Lock()
		for len(b.waiting) == 0 && !b.closed {
			b.wake.Wait()
		}
		if len(b.waiting) == 0 {
			b.mu.Unlock()
			return
		}
		// Newest first: the agent's current state matters most.
		j := b.waiting[len(b.waiting)-1]
		b.waiting = b.waiting[:len(b.waiting)-1]
		b.mu.Unlock()

		g, err := b.s.Score(b.ctx, j.part, j.commit)
		if err != nil {
			b.mu.Lock()
			delete(b.known, j.commit)
			b.mu.Unlock()
			return // cancelled
		}
		b.land(g)
	}
}

func (b *Background) land(g trace.GroundTruth) {
	b.mu.Lock()
	b.done[g.Commit] = g
	b.untaken = append(b.untaken, g)
	if b.latest == nil || g.Part >= b.latest.Part {
		c := g
		b.latest = &c
	}
	if g.Solved && (b.solvedAt == 0 || g.Part < b.solvedAt) {
		b.solvedAt = g.Part
	}
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
	b.log.Debug("ground truth landed", "part", g.Part, "commit", g.Commit, "cached", g.Cached, "duration_ms", g.DurationMs)
	if b.opts.OnResult != nil {
		b.opts.OnResult(g)
	}
}

// Take returns the results that landed since the last Take, in landing
// order (for the next part the recorder writes).
func (b *Background) Take() []trace.GroundTruth {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.untaken
	b.untaken = nil
	return out
}

// Latest is the result of the newest checkpoint evaluated so far.
func (b *Background) Latest() (trace.GroundTruth, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.latest == nil {
		return trace.GroundTruth{}, false
	}
	return *b.latest, true
}

// SolvedAt is the part whose checkpoint first passed every required
// path, 0 when none has yet.
func (b *Background) SolvedAt() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.solvedAt
}

// Wait returns commit's result, submitting it (as part's) when it was not,
// and waiting until it lands or ctx ends.
func (b *Background) Wait(ctx context.Context, part int, commit string) (trace.GroundTruth, error) {
	b.Submit(part, commit)
	for {
		b.mu.Lock()
		g, ok := b.done[commit]
		ch := b.changed
		b.mu.Unlock()
		if ok {
			return g, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return trace.GroundTruth{}, ctx.Err()
		}
	}
}

// Dropped counts the checkpoints left unevaluated because the queue was
// full.
func (b *Background) Dropped() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropped
}

// Close evaluates what is still queued (the final checkpoint among it)
// and stops the workers; when ctx ends first, the evaluations in flight
// are cancelled and the rest left for replay evaluate.
func (b *Background) Close(ctx context.Context) {
	b.mu.Lock()
	b.closed = true
	b.wake.Broadcast()
	b.mu.Unlock()
	finished := make(chan struct{})
	go func() {
		b.wg.Wait()
		close(finished)
	}()
	select {
	case <-finished:
	case <-ctx.Done():
		b.stop()
		<-finished
	}
	b.stop()
}

// AtTurnEnd waits for the ground truth of commit (the workspace at the
// end of a turn, made by part) and returns the standing the continuation
// prompt reports, and whether it is solved. Fixed and regressed tests are
// counted against the previous AtTurnEnd's result.
func (b *Background) AtTurnEnd(ctx context.Context, part int, commit string) (task.Standing, bool, error) {
	g, err := b.Wait(ctx, part, commit)
	if err != nil {
		return task.Standing{}, false, err
	}
	st := task.Standing{GroundTruth: true, Part: g.Part}
	for _, c := range g.Suites {
		ps := task.PathStatus{Path: c.Path, Seen: true, Passed: int(c.Passed), Failed: int(c.Failed), Total: int(c.Total)}
		if !c.BuildOK {
			ps.Error = "the build failed (build.sh must produce ./cc)"
		}
		st.Status = append(st.Status, ps)
	}
	if g.Error != "" {
		st.Status = nil
		for _, p := range b.s.Paths {
			st.Status = append(st.Status, task.PathStatus{Path: p, Seen: true, Error: "not evaluated: " + g.Error})
		}
	}
	cur, ok := b.s.Detail(ctx, g)
	b.mu.Lock()
	prev, hadPrev := b.turnDetail, b.turnDetailOK
	if ok {
		b.turnDetail, b.turnDetailOK = cur, true
	}
	b.mu.Unlock()
	if ok {
		max := b.opts.FailingTests
		failing, passed := caseSets(cur)
		st.Failing, st.FailingCount = capped(failing, max)
		if hadPrev {
			prevFailing, prevPassed := caseSets(prev)
			var fixed, regressed []string
			for _, n := range passed {
				if _, found := slices.BinarySearch(prevFailing, n); found {
					fixed = append(fixed, n)
				}
			}
			for _, n := range failing {
				if _, found := slices.BinarySearch(prevPassed, n); found {
					regressed = append(regressed, n)
				}
			}
			st.Fixed, st.FixedCount = capped(fixed, max)
			st.Regressed, st.RegressedCount = capped(regressed, max)
		}
	}
	return st, g.Solved, nil
}

// caseSets lists a result's failing and passing tests (suite/case),
// sorted.
func caseSets(r replay.Result) (failing, passed []string) {
	for _, suite := range r.SuitePaths() {
		for _, c := range r.Suites[suite].Cases {
			id := replay.TestID(suite, c.Name)
			if c.Passed {
				passed = append(passed, id)
			} else {
				failing = append(failing, id)
			}
		}
	}
	slices.Sort(failing)
	slices.Sort(passed)
	return failing, passed
}

// capped returns at most max names (none for max < 0) and the count.
func capped(list []string, max int) ([]string, int) {
	if max < 0 {
		return nil, len(list)
	}
	return list[:min(len(list), max)], len(list)
}
