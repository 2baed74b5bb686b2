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
	// FullEvery, with a sampling Scorer, evaluates every k-th checkpoint
	// submitted on the full paths too (0: never).
	FullEvery int
	// NoWait: AtTurnEnd does not wait; it reports the latest result
	// landed (task setting ground_truth.wait false).
	NoWait bool
	// Prior are the results an earlier recording of the run landed (a
	// resumed run's trace): their commits are not evaluated again, and
	// with a sampling Scorer they count as the checkpoints and the best
	// sample they were, so every FullEvery-th checkpoint and each new
	// best are counted across the resume, not from it.
	Prior []trace.GroundTruth
}

// job is one evaluation of a checkpoint: of the sample (when the Scorer
// samples) or of the full paths.
type job struct {
	part   int
	commit string
	full   bool
}

// jobKey names an evaluation: a commit, sampled or full.
type jobKey struct {
	commit string
	full   bool
}

func (j job) key() jobKey { return jobKey{j.commit, j.full} }

// Background evaluates checkpoints as they are made, newest first, each
// distinct commit once, and keeps the results until the recorder takes
// them into the trace. With a sampling Scorer every checkpoint is
// evaluated on the sample (the comparable curve) and, on the full paths,
// each new best by sampled score, each sample that passes completely,
// every FullEvery-th checkpoint and what SubmitFull is given (the final
// tree); only full results can be solved.
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
	// known: every evaluation submitted (queued, running or done).
	known map[jobKey]bool
	done  map[jobKey]trace.GroundTruth
	// untaken: results not yet handed to the trace, in landing order.
	untaken  []trace.GroundTruth
	latest   *trace.GroundTruth
	solvedAt int
	dropped  int
	// checkpoints counts Submit's distinct commits (for FullEvery);
	// bestSampled is the most cases a sampled result passed.
	checkpoints int
	bestSampled int64
	changed     chan struct{}
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
	b := &Background{s: s, opts: opts, log: opts.Logger, known: map[jobKey]bool{}, done: map[jobKey]trace.GroundTruth{},
		changed: make(chan struct{})}
	b.wake = sync.NewCond(&b.mu)
	b.restore(opts.Prior)
	b.ctx, b.stop = context.WithCancel(context.WithoutCancel(ctx))
	for range opts.Workers {
		b.wg.Add(1)
		go b.work()
	}
	return b
}

// restore takes in the results of an earlier recording (Options.Prior);
// they are in the trace already, so none is handed over again. A result
// that failed is not kept: its commit is evaluated again if submitted.
func (b *Background) restore(prior []trace.GroundTruth) {
	for _, g := range prior {
		if g.Error != "" || g.Commit == "" {
			continue
		}
		k := jobKey{g.Commit, !g.Sampled}
		if g.Sampled && !b.known[k] {
			b.checkpoints++
			b.bestSampled = max(b.bestSampled, g.Passed)
		}
		b.known[k] = true
		b.done[k] = g
		if b.latest == nil || g.Part >= b.latest.Part {
			c := g
			b.latest = &c
		}
		if g.Solved && (b.solvedAt == 0 || g.Part < b.solvedAt) {
			b.solvedAt = g.Part
		}
	}
}

// sampling reports whether checkpoints are evaluated on a sample first.
func (b *Background) sampling() bool {
	_, ok := b.s.runPaths()
	return ok
}

// Submit queues commit, made by part's checkpoint (on the sample when the
// Scorer samples, and in full every FullEvery-th checkpoint); a commit
// already submitted is ignored. It never blocks.
func (b *Background) Submit(part int, commit string) {
	if commit == "" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	if !b.sampling() {
		b.queue(job{part, commit, true})
		return
	}
	if b.known[jobKey{commit, false}] {
		return
	}
	b.queue(job{part, commit, false})
	b.checkpoints++
	if k := b.opts.FullEvery; k > 0 && b.checkpoints%k == 0 {
		b.queue(job{part, commit, true})
	}
}

// SubmitFull queues commit's evaluation on the full paths (the final
// tree); it never blocks.
func (b *Background) SubmitFull(part int, commit string) {
	if commit == "" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		b.queue(job{part, commit, true})
	}
}

// queue adds j unless it is known (b.mu held). When the queue is full the
// oldest waiting evaluation is dropped.
func (b *Background) queue(j job) {
	if b.known[j.key()] {
		return
	}
	b.known[j.key()] = true
	if len(b.waiting) >= b.opts.Queue {
		old := b.waiting[0]
		b.waiting = b.waiting[1:]
		delete(b.known, old.key())
		b.dropped++
		b.log.Warn("ground truth falls behind: a checkpoint is left for replay evaluate", "part", old.part, "commit", old.commit, "full", old.full)
	}
	b.waiting = append(b.waiting, j)
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

		score := b.s.Score
		if !j.full {
			score = b.s.ScoreSampled
		}
		g, err := score(b.ctx, j.part, j.commit)
		if err != nil {
			b.mu.Lock()
			delete(b.known, j.key())
			b.mu.Unlock()
			return // cancelled
		}
		b.land(j, g)
	}
}

func (b *Background) land(j job, g trace.GroundTruth) {
	b.mu.Lock()
	b.done[j.key()] = g
	if !g.Sampled {
		// A full result also answers whoever waits for the sample.
		if _, ok := b.done[jobKey{j.commit, false}]; !ok {
			b.done[jobKey{j.commit, false}] = g
		}
	}
	if g.Sampled && g.Error == "" {
		// Solved is only decided on the full paths: a new best and a
		// sample that passes completely are evaluated in full. This runs
		// while closing too: the worker landing it takes the job.
		if all := allPassed(g); all || g.Passed > b.bestSampled {
			b.bestSampled = max(b.bestSampled, g.Passed)
			b.queue(job{j.part, j.commit, true})
		}
	}
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
	b.log.Debug("ground truth landed", "part", g.Part, "commit", g.Commit, "sampled", g.Sampled, "cached", g.Cached, "duration_ms", g.DurationMs)
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

// Wait returns commit's first result (its sample's when the Scorer
// samples, or a full one that landed first), submitting it (as part's)
// when it was not, and waiting until it lands or ctx ends.
func (b *Background) Wait(ctx context.Context, part int, commit string) (trace.GroundTruth, error) {
	b.Submit(part, commit)
	return b.await(ctx, jobKey{commit, !b.sampling()})
}

// WaitFull returns commit's result on the full paths, submitting it when
// it was not.
func (b *Background) WaitFull(ctx context.Context, part int, commit string) (trace.GroundTruth, error) {
	b.SubmitFull(part, commit)
	return b.await(ctx, jobKey{commit, true})
}

func (b *Background) await(ctx context.Context, k jobKey) (trace.GroundTruth, error) {
	for {
		b.mu.Lock()
		g, ok := b.done[k]
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
// end of a turn, made by part; when its sample passes completely, for the
// full paths' result too) and returns the standing the continuation
// prompt reports, and whether it is solved. With NoWait it does not wait:
// the standing is the latest result landed, which says its part (or that
// none landed yet), and commit is queued. Fixed and regressed tests are
// counted against the previous AtTurnEnd's result.
func (b *Background) AtTurnEnd(ctx context.Context, part int, commit string) (task.Standing, bool, error) {
	var g trace.GroundTruth
	if b.opts.NoWait {
		b.Submit(part, commit)
		latest, ok := b.Latest()
		if !ok {
			st := task.Standing{GroundTruth: true, Pending: true, Now: part}
			for _, p := range b.s.Paths {
				st.Status = append(st.Status, task.PathStatus{Path: p})
			}
			return st, b.SolvedAt() > 0, nil
		}
		g = latest
	} else {
		var err error
		if g, err = b.Wait(ctx, part, commit); err == nil && g.Sampled && allPassed(g) {
			g, err = b.WaitFull(ctx, part, commit)
		}
		if err != nil {
			return task.Standing{}, false, err
		}
	}
	st := task.Standing{GroundTruth: true, Part: g.Part, Sampled: g.Sampled}
	if g.Commit != commit {
		st.Now = part // the latest landed is of an older checkpoint
	}
	for _, c := range g.Suites {
		ps := task.PathStatus{Path: c.Path, Seen: true, Passed: int(c.Passed), Failed: int(c.Failed), Total: int(c.Total),
			Sample: int(c.SampleSize)}
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
	return st, g.Solved || (b.opts.NoWait && b.SolvedAt() > 0), nil
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
