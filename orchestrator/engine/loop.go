package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/trajlab/traj/orchestrator/progress"
	"github.com/trajlab/traj/orchestrator/task"
	"github.com/trajlab/traj/sandbox/agent"
	"github.com/trajlab/traj/trace"
)

// LoopConfig configures the turn loop.
type LoopConfig struct {
	// RootSessionID is the session the loop prompts.
	RootSessionID string
	// RootSession is the root session (its info is written with the first
	// part).
	RootSession agent.Session
	Task        *task.Task
	// MaxParts is the part budget; the loop never records more.
	MaxParts int
	// StartPart and StartTurn are the parts and turns already recorded (0
	// for a new trajectory).
	StartPart, StartTurn int
	// StartCommit is the workspace's checkpoint commit when the loop
	// starts; "" makes the first part checkpoint whatever its type.
	StartCommit string
	// AbortGrace bounds how long the loop waits for the session to settle
	// after an abort (default 15 s).
	AbortGrace time.Duration
	// ReconcileTimeout bounds the message listing after a turn (default 30 s).
	ReconcileTimeout time.Duration
	// MaxEmptyTurns ends the run (agent_error) after this many turns in a
	// row without a counted part (default 3).
	MaxEmptyTurns int
	// StallTimeout is the stall watchdog: a turn with no new part for this
	// long is aborted and sent again once in the same session; a second
	// stall in a row ends the run agent_error (default 30 min).
	StallTimeout time.Duration
	// ReadToolOutput reads the file where the agent server saved a tool's
	// full output when it truncated it in the part (nil: not readable).
	ReadToolOutput func(path string) ([]byte, error)
	// PromptBefore, when set, is asked before each continuation with the
	// parts recorded so far; what it returns opens that turn's prompt (a
	// fork's --prompt, once its inherited parts are in).
	PromptBefore func(parts int) string
	// AfterTurn, when set, is asked after each turn whether the run must
	// end (for example: the scripted model has played its whole script).
	AfterTurn func() (reason, detail string)
	// Halted, when set, says the run must end whatever the turn ended
	// with (the model gateway reached a budget: the harness's failed call
	// is its doing, not the agent's error). Asked after every turn.
	Halted func() (reason, detail string)
	// GroundTruth, when set, scores every checkpoint in the background;
	// "solved" and the continuation prompt then come from it.
	GroundTruth GroundTruth
	// StopAtFirst ends the run as soon as a checkpoint is solved by ground
	// truth, mid-turn (else at the end of the turn).
	StopAtFirst bool
	// FullToolResult returns the full run_tests answer filed under a
	// tool_call_id by the tool gateway (the agent is told less).
	FullToolResult func(toolCallID string) ([]byte, bool)
	// GatewayCalls, when set, is the tool gateway's ledger: calls no
	// harness part carries are recorded in gateway_calls.
	GatewayCalls GatewayCalls
	// ResponseTools, when set, knows each model response's tool calls
	// from the model gateway: a tool part's checkpoint is deferred while
	// more of them are to come. CountTools: the harness's parts do not
	// carry the model's call ids, count them instead
	// (harness.Harness.LateToolEvents).
	ResponseTools *ResponseTools
	CountTools    bool
	// ModelCalls, when set, attributes each part to the model gateway's
	// call it came from: the part's tokens and cost are then its share
	// of the call, the harness's own counts kept beside.
	ModelCalls *ModelCalls
	// Redact, when set, clears secrets from every part, prompt and
	// trailing part before the writer: the loop writes, publishes and
	// reports the redacted copy.
	Redact Redactor
	// Parts, when set, is the part counter the model gateway reads (each
	// call records the parts before it): the loop stores each part's
	// index once the part is recorded and published.
	Parts *atomic.Int64
	// Now is the clock (default time.Now).
	Now    func() time.Time
	Logger *slog.Logger
}

// Loop runs turns against an Agent and records every counted part: for each
// part, in order, checkpoint → append to the trace (durable) → publish.
type Loop struct {
	cfg     LoopConfig
	agent   agent.Agent
	repo    Checkpointer
	writer  TraceWriter
	pub     Publisher
	rep     Reporter
	capture *capture
	tests   *testStatus
	log     *slog.Logger
	start   time.Time

	parts, turns int
	// head is the effective commit after the last checkpoint.
	head          string
	turnFirstPart bool
	turnPrompt    string
	tokens        trace.Tokens
	cost          float64
	// usage adds up the parts recorded (their claims on model calls).
	usage    trace.Usage
	envoiErr string
	rootErr  string
	aborted  bool
	// lastRecorded is when the previous part was recorded (gateway calls
	// completed before it have had a whole part to be claimed).
	lastRecorded time.Time
}

// Outcome is how the loop ended.
type Outcome struct {
	Reason string
	Detail string
	Parts  int
	Turns  int
	// Tokens and Cost are what the harness reported.
	Tokens trace.Tokens
	Cost   float64
	// Claims are what this run's parts claimed of each model call.
	Claims map[int]trace.Claim
}

// NewLoop wires a loop. rep may be nil.
func NewLoop(cfg LoopConfig, a agent.Agent, repo Checkpointer, w TraceWriter, pub Publisher, rep Reporter) *Loop {
	if cfg.AbortGrace <= 0 {
		cfg.AbortGrace = 15 * time.Second
	}
	if cfg.ReconcileTimeout <= 0 {
		cfg.ReconcileTimeout = 30 * time.Second
	}
	if cfg.MaxEmptyTurns <= 0 {
		cfg.MaxEmptyTurns = 3
	}
	if cfg.StallTimeout <= 0 {
		cfg.StallTimeout = DefaultStallTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if rep == nil {
		rep = progress.Discard{}
	}
	l := &Loop{cfg: cfg, agent: a, repo: repo, writer: w, pub: pub, rep: rep,
		capture: newCapture(cfg.RootSessionID), tests: newTestStatus(cfg.Task.TestPaths),
		log: cfg.Logger, parts: cfg.StartPart, turns: cfg.StartTurn, head: cfg.StartCommit}
	if cfg.RootSession.ID != "" {
		l.capture.session(cfg.RootSession)
	}
	l.capture.onToolStart = func(p *agent.Part) {
		session, tool := p.SessionID, p.Tool.Name
		if cfg.Redact != nil {
			session, tool = cfg.Redact.Text(session), cfg.Redact.Text(tool)
		}
		l.report(progress.Event{Type: progress.ToolStarted, Part: l.parts, MaxParts: l.cfg.MaxParts, Turn: l.turns,
			SessionID: session, Tool: tool})
	}
	return l
}

// Observe feeds an earlier run_tests result into the test status (for a
// resumed trajectory).
func (l *Loop) Observe(c trace.EnvoiCall) { l.tests.observe(c) }

// Tests returns the latest status of each required test path.
func (l *Loop) Tests() []task.PathStatus { return l.tests.list() }

// errFatal marks a failure of the recorder itself (disk, git): the run
// cannot go on. The writer's and the checkpointer's errors already name
// the turn or part; they are kept as they are.
type errFatal struct{ err error }

func (e *errFatal) Error() string { return e.err.Error() }
func (e *errFatal) Unwrap() error { return e.err }

// Run prompts turn after turn until an end reason. A non-nil error means the
// recorder itself failed (the trace could not be written or the workspace
// not checkpointed); the Outcome still says how far it got.
func (l *Loop) Run(ctx context.Context) (Outcome, error) {
	l.start = l.cfg.Now()
	prompt, err := l.cfg.Task.Prompt()
	if err != nil {
		return l.outcome("", ""), err
	}
	if l.cfg.StartTurn > 0 {
		st, end := l.settle(ctx)
		if end != nil {
			return *end, nil
		}
		if prompt, err = l.continuation(st); err != nil {
			return l.outcome("", ""), err
		}
	}
	if l.cfg.GroundTruth != nil && l.head != "" {
		// Parts before the first change point at the start commit: replay
		// evaluates it too, so ground truth covers it.
		l.cfg.GroundTruth.Submit(l.parts, l.head)
	}
	emptyTurns, stalls := 0, 0
	for {
		if l.parts >= l.cfg.MaxParts {
			return l.outcome(trace.EndPartLimit, ""), nil
		}
		before := l.parts
		reason, detail, err := l.turn(ctx, prompt)
		if err != nil {
			return l.outcome(trace.EndInterrupted, err.Error()), err
		}
		if l.cfg.Halted != nil && (reason == "" || reason == trace.EndAgentError || reason == turnStalled) {
			if r, d := l.cfg.Halted(); r != "" {
				reason, detail = r, d
			}
		}
		if reason == turnStalled {
			if stalls++; stalls > 1 {
				return l.outcome(trace.EndAgentError, fmt.Sprintf("stalled: no new part for %s in turn %d, again after sending the turn once more", l.cfg.StallTimeout, l.turns)), nil
			}
			msg := fmt.Sprintf("turn %d stalled (no new part for %s): aborted, sending it again in the same session", l.turns, l.cfg.StallTimeout)
			l.log.Warn(msg)
			l.report(progress.Event{Type: progress.Warning, Message: msg})
			continue
		}
		stalls = 0
		if reason != "" {
			return l.outcome(reason, detail), nil
		}
		if ctx.Err() != nil {
			reason, _ := l.stopReason(ctx, ctx.Err())
			return l.outcome(reason, ""), nil
		}
		st, end := l.settle(ctx)
		if end != nil {
			return *end, nil
		}
		if l.cfg.AfterTurn != nil {
			if reason, detail := l.cfg.AfterTurn(); reason != "" {
				return l.outcome(reason, detail), nil
			}
		}
		if l.parts == before {
			emptyTurns++
			if emptyTurns >= l.cfg.MaxEmptyTurns {
				return l.outcome(trace.EndAgentError,
					fmt.Sprintf("no parts in %d turns in a row", emptyTurns)), nil
			}
		} else {
			emptyTurns = 0
		}
		if prompt, err = l.continuation(st); err != nil {
			return l.outcome("", ""), err
		}
	}
}

// continuation is the next turn's prompt: the task's, opened by what
// PromptBefore gives.
func (l *Loop) continuation(st task.Standing) (string, error) {
	prompt, err := l.cfg.Task.Continuation(l.turns+1, st)
	if err != nil || l.cfg.PromptBefore == nil {
		return prompt, err
	}
	if pre := l.cfg.PromptBefore(l.parts); pre != "" {
		prompt = pre + "\n\n" + prompt
	}
	return prompt, nil
}

// standing is where the run stands after a turn: ground truth of the
// workspace's checkpoint when the loop has it (waiting for it, unless the
// task's ground_truth.wait is false: then the latest result landed),
// else the agent's run_tests calls.
func (l *Loop) standing(ctx context.Context) (task.Standing, bool, error) {
	if l.cfg.GroundTruth == nil {
		return task.Standing{Status: l.tests.list()}, l.tests.solved(), nil
	}
	st, solved, err := l.cfg.GroundTruth.AtTurnEnd(ctx, l.parts, l.head)
	if err == nil && l.cfg.GroundTruth.SolvedAt() > 0 {
		solved = true
	}
	return st, solved, err
}

// settle is where the run stands between turns: the standing for the next
// prompt, or the outcome when the run is solved (or ctx ended while
// waiting for ground truth).
func (l *Loop) settle(ctx context.Context) (task.Standing, *Outcome) {
	st, solved, err := l.standing(ctx)
	switch {
	case err != nil:
		reason, _ := l.stopReason(ctx, err)
		out := l.outcome(reason, "")
		return st, &out
	case solved:
		detail := ""
		if l.cfg.GroundTruth != nil {
			detail = fmt.Sprintf("ground truth: the checkpoint of part %d passes every required test path", l.cfg.GroundTruth.SolvedAt())
		}
		out := l.outcome(trace.EndSolved, detail)
		return st, &out
	}
	return st, nil
}

// DefaultStallTimeout is LoopConfig.StallTimeout's default.
const DefaultStallTimeout = 30 * time.Minute

// turnStalled is what a turn returns when the stall watchdog aborted it;
// Run decides between sending it again and ending the run.
const turnStalled = "stalled"

// stallWatch cancels its context when no new part was recorded for the
// loop's StallTimeout.
type stallWatch struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *time.Timer
	after  time.Duration
	parts  int
}

var errStalled = errors.New("no new part")

func (l *Loop) watchStall(ctx context.Context) *stallWatch {
	c, cancel := context.WithCancelCause(ctx)
	w := &stallWatch{ctx: c, cancel: cancel, after: l.cfg.StallTimeout, parts: l.parts}
	w.timer = time.AfterFunc(w.after, func() { cancel(errStalled) })
	return w
}

// saw restarts the clock when parts grew.
func (w *stallWatch) saw(parts int) {
	if parts != w.parts {
		w.parts = parts
		w.timer.Reset(w.after)
	}
}

func (w *stallWatch) stalled() bool { return errors.Is(context.Cause(w.ctx), errStalled) }

func (w *stallWatch) stop() {
	w.timer.Stop()
	w.cancel(nil)
}

func (l *Loop) outcome(reason, detail string) Outcome {
	return Outcome{Reason: reason, Detail: detail, Parts: l.parts, Turns: l.turns, Tokens: l.tokens, Cost: l.cost, Claims: l.usage.Claims()}
}

// turn runs one turn: prompt, follow events until the root session is
// idle, reconcile with the server's message list, close the turn.
func (l *Loop) turn(ctx context.Context, prompt string) (reason, detail string, err error) {
	l.turns++
	l.turnFirstPart, l.turnPrompt = true, prompt
	l.rootErr, l.aborted = "", false
	l.capture.frozen = false
	now := l.cfg.Now()
	written := prompt
	if l.cfg.Redact != nil {
		written = l.cfg.Redact.Text(prompt)
	}
	if err := l.writer.BeginTurn(trace.TurnStart{Turn: l.turns, Timestamp: trace.Timestamp(now), Prompt: written,
		SessionID: l.cfg.RootSessionID}); err != nil {
		return "", "", &errFatal{err}
	}
	l.pub.TraceWritten(l.writer.Written())
	l.report(progress.Event{Type: progress.TurnStarted, Turn: l.turns, Part: l.parts})

	if err := l.agent.Prompt(ctx, l.cfg.RootSessionID, prompt); err != nil {
		reason, detail = l.stopReason(ctx, fmt.Errorf("prompt turn %d: %w", l.turns, err))
	} else {
		reason, detail, err = l.follow(ctx)
		if err != nil {
			return "", "", err
		}
	}
	if reason != trace.EndAgentError || l.rootErr != "" {
		if err := l.reconcile(ctx); err != nil {
			return "", "", err
		}
	}
	if reason == "" && l.parts >= l.cfg.MaxParts {
		reason = trace.EndPartLimit
	}
	if reason == "" && l.envoiErr != "" {
		reason, detail = trace.EndEnvoiError, l.envoiErr
	}
	if reason == "" && l.rootErr != "" {
		reason, detail = trace.EndAgentError, l.rootErr
	}
	trailing, usage := l.capture.trailing()
	tok, cost := tokens(usage)
	l.tokens.Add(tok)
	l.cost += cost
	if l.cfg.Redact != nil {
		trailing = l.cfg.Redact.Raws(trailing)
	}
	if err := l.writer.EndTurn(trace.TurnEnd{EndedAt: trace.Timestamp(l.cfg.Now()), TrailingParts: trailing}); err != nil {
		return "", "", &errFatal{err}
	}
	l.pub.TraceWritten(l.writer.Written())
	l.report(progress.Event{Type: progress.TurnEnded, Turn: l.turns, Part: l.parts})
	return reason, detail, nil
}

// stopReason maps an error from the agent to an end reason.
func (l *Loop) stopReason(ctx context.Context, err error) (string, string) {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return trace.EndTimeout, ""
	case ctx.Err() != nil:
		return trace.EndInterrupted, ""
	}
	return trace.EndAgentError, err.Error()
}

// follow reads events until the root session goes idle after the prompt,
// recording parts as they complete. It returns an end reason, or "" when
// the turn finished normally.
func (l *Loop) follow(ctx context.Context) (string, string, error) {
	root := l.cfg.RootSessionID
	// The turn ends at the first idle after the root session was busy: an
	// idle (or a re-sent old message) left over from the previous turn must
	// not end this one.
	active := false
	watch := l.watchStall(ctx)
	defer watch.stop()
	for {
		err := ctx.Err()
		if err == nil {
			err = watch.ctx.Err()
		}
		var ev agent.Event
		if err == nil {
			ev, err = l.agent.Next(watch.ctx)
		}
		if err != nil && ctx.Err() == nil && watch.stalled() {
			if err := l.abortAndSettle(ctx); err != nil {
				return "", "", err
			}
			return turnStalled, "", nil
		}
		if err != nil {
			reason, detail := l.stopReason(ctx, err)
			if reason != trace.EndAgentError {
				if err := l.abortAndSettle(ctx); err != nil {
					return "", "", err
				}
			}
			return reason, detail, nil
		}
		switch ev.Kind {
		case agent.EventStatus:
			if ev.SessionID != root {
				continue
			}
			if ev.Busy {
				active = true
			} else if active {
				return "", "", nil
			}
			continue
		case agent.EventResync:
			over, err := l.resync(ctx)
			if err != nil {
				return "", "", err
			}
			if over {
				return "", "", nil
			}
			if l.capture.frozen {
				if err := l.abortAndSettle(ctx); err != nil {
					return "", "", err
				}
				return l.frozenReason(), l.envoiErr, nil
			}
			continue
		case agent.EventError:
			if (ev.SessionID == root || ev.SessionID == "") && !l.aborted {
				l.rootErr = "agent reported an error"
				if ev.Error != nil && ev.Error.Message != "" {
					l.rootErr = ev.Error.Message
				}
			}
			continue
		}
		l.capture.handle(ev)
		stop, err := l.recordReady(ctx)
		if err != nil {
			return "", "", err
		}
		watch.saw(l.parts)
		if stop != "" {
			if err := l.abortAndSettle(ctx); err != nil {
				return "", "", err
			}
			return stop, l.envoiErr, nil
		}
	}
}

// recordReady records every ready part while the budget allows. It
// returns an end reason when the run must stop (budget reached, environment
// failed).
func (l *Loop) recordReady(ctx context.Context) (string, error) {
	for {
		if l.parts >= l.cfg.MaxParts {
			l.capture.frozen = true
			return trace.EndPartLimit, nil
		}
		p := l.capture.next()
		if p == nil {
			return "", nil
		}
		if err := l.record(ctx, p); err != nil {
			return "", err
		}
		if l.envoiErr != "" {
			l.capture.frozen = true
			return trace.EndEnvoiError, nil
		}
		if l.cfg.StopAtFirst && l.cfg.GroundTruth != nil && l.cfg.GroundTruth.SolvedAt() > 0 {
			l.capture.frozen = true
			return trace.EndSolved, nil
		}
	}
}

// record writes one counted part: checkpoint → append (durable) → publish.
// It runs to the end even when ctx is cancelled, so an interrupted run
// never leaves a half-recorded part.
func (l *Loop) record(ctx context.Context, p *pending) error {
	ctx = context.WithoutCancel(ctx)
	n := l.parts + 1
	rc := trace.RepoCheckpoint{CommitBefore: l.head, CommitAfter: l.head, ChangedFiles: []string{}}
	more := false
	if l.cfg.ResponseTools != nil && p.part.Kind == agent.KindTool && p.part.Tool != nil {
		more = l.cfg.ResponseTools.take(p.part.Tool.CallID, l.cfg.CountTools)
	}
	switch {
	case l.head != "" && p.part.Kind.ChangesFiles() && (more || l.capture.toolBeside(p)):
		rc.Deferred = true
	case l.head == "" || p.part.Kind.ChangesFiles():
		var err error
		if rc, err = l.repo.Checkpoint(ctx, n); err != nil {
			return &errFatal{err}
		}
		l.head = rc.CommitAfter
		if rc.Committed && l.cfg.GroundTruth != nil {
			l.cfg.GroundTruth.Submit(n, rc.CommitAfter)
		}
	}
	now := trace.Timestamp(l.cfg.Now())
	f := l.capture.flush()
	rec := &trace.Part{
		Part:           n,
		Timestamp:      now,
		MessageID:      p.part.MessageID,
		Sessions:       orEmpty(f.sessions),
		SessionIDs:     f.sessionIDs,
		NewMessages:    orEmpty(f.messages),
		EnvoiCalls:     []trace.EnvoiCall{},
		RepoCheckpoint: &rc,
		GitCommit:      rc.CommitAfter,
		SessionID:      p.part.SessionID,
		PartID:         p.part.ID,
		PartType:       string(p.part.Kind),
		Content:        p.part.Raw,
		OtherParts:     f.others,
	}
	if l.cfg.GroundTruth != nil {
		rec.GroundTruth = l.cfg.GroundTruth.Take()
	}
	if l.turnFirstPart {
		rec.Prompt = l.turnPrompt
		l.turnFirstPart = false
	}
	if p.part.Tool != nil {
		rec.Tool = p.part.Tool.Name
	}
	if f.hasUsage {
		tok, cost := tokens(f.usage)
		rec.Tokens, rec.Cost = &tok, &cost
		l.tokens.Add(tok)
		l.cost += cost
	}
	if l.cfg.ModelCalls != nil {
		// The gateway's usage is the part's; the harness's stays beside.
		rec.HarnessTokens, rec.HarnessCost, rec.Tokens, rec.Cost = rec.Tokens, rec.Cost, nil, nil
		if a := l.cfg.ModelCalls.claim(ctx, p.part); a != nil {
			rec.ModelCall, rec.Tokens, rec.Cost = &a.Call, a.Tokens, a.Cost
			if a.MessageID != "" {
				rec.MessageID = a.MessageID
			}
		} else {
			l.log.Warn("no model call for a part", "part", n, "kind", p.part.Kind)
		}
	}
	l.usage.AddPart(rec)
	var tests []progress.TestStatus
	if p.part.Kind == agent.KindTool && p.part.Tool != nil && isRunTests(p.part.Tool.Name) {
		call := envoiCall(p.part.Tool, now, l.cfg.ReadToolOutput, l.cfg.FullToolResult)
		rec.EnvoiCalls = append(rec.EnvoiCalls, call)
		if call.ToolCallID != "" && l.cfg.GatewayCalls != nil {
			l.cfg.GatewayCalls.Claim(call.ToolCallID)
		}
		st := l.tests.observe(call)
		tests = append(tests, progress.TestStatus{Path: st.Path, Passed: st.Passed, Failed: st.Failed,
			Total: st.Total, Error: st.Error})
		if call.StatusCode >= 500 {
			l.envoiErr = fmt.Sprintf("run_tests %s failed in the environment (status %d)", call.Path, call.StatusCode)
			if call.Error != nil {
				l.envoiErr += ": " + *call.Error
			}
		}
	}
	if l.cfg.GatewayCalls != nil {
		at := l.cfg.Now()
		rec.GatewayCalls = l.cfg.GatewayCalls.Unclaimed(minTime(l.lastRecorded, at.Add(-GatewayGrace)))
		l.lastRecorded = at
	}
	if l.cfg.Redact != nil {
		// What follows (write, publish, progress) sees the redacted copy.
		red := l.cfg.Redact.Part(*rec)
		rec = &red
	}
	if err := l.writer.AppendPart(rec); err != nil {
		return &errFatal{err}
	}
	l.parts = n
	l.pub.TraceWritten(l.writer.Written())
	if err := l.pub.PartRecorded(ctx, rec); err != nil {
		// Publishing is best effort here; the final upload repeats it.
		l.log.Warn("publish part", "part", n, "err", err)
	}
	if l.cfg.Parts != nil {
		l.cfg.Parts.Store(int64(n))
	}
	tokTotal, costTotal := l.tokens.Total(), l.cost
	if l.cfg.ModelCalls != nil {
		tokTotal, costTotal = 0, 0
		if t := l.usage.Tokens(); t != nil {
			tokTotal = t.Total()
		}
		if c := l.usage.Cost(); c != nil {
			costTotal = *c
		}
	}
	l.report(progress.Event{Type: progress.PartDone, Part: n, MaxParts: l.cfg.MaxParts, Turn: l.turns,
		SessionID: rec.SessionID, PartType: rec.PartType, Tool: rec.Tool, Committed: rc.Committed,
		GitCommit: rc.CommitAfter, TokensTotal: tokTotal, Cost: costTotal})
	for i := range tests {
		l.report(progress.Event{Type: progress.Tests, Part: n, Turn: l.turns, Tests: &tests[i]})
	}
	return nil
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// tokens converts the port's usage to the trace's.
func tokens(u agent.Usage) (trace.Tokens, float64) {
	return trace.Tokens{Input: u.Input, Output: u.Output, Reasoning: u.Reasoning, CacheRead: u.CacheRead,
		CacheWrite: u.CacheWrite}, u.Cost
}

func orEmpty(s []json.RawMessage) []json.RawMessage {
	if s == nil {
		return []json.RawMessage{}
	}
	return s
}

// abortAndSettle aborts the root session and keeps reading events until it
// is idle or AbortGrace passes. Everything that arrives is kept (frozen: not
// counted) and ends up in the turn's trailing parts.
func (l *Loop) abortAndSettle(ctx context.Context) error {
	l.capture.frozen = true
	l.aborted = true
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.cfg.AbortGrace)
	defer cancel()
	if err := l.agent.Abort(ctx, l.cfg.RootSessionID); err != nil {
		l.log.Warn("abort session", "session", l.cfg.RootSessionID, "err", err)
	}
	for {
		ev, err := l.agent.Next(ctx)
		if err != nil {
			if !errors.Is(err, context.DeadlineExceeded) {
				l.log.Debug("settle after abort", "err", err)
			}
			return nil
		}
		if ev.Kind == agent.EventStatus && ev.SessionID == l.cfg.RootSessionID && !ev.Busy {
			return nil
		}
		l.capture.handle(ev)
	}
}

// reconcile lists the session family's messages once the turn settled and
// handles anything the event stream missed, as if it had arrived last.
func (l *Loop) reconcile(ctx context.Context) error {
	_, err := l.catchUp(ctx, "after turn")
	return err
}

// resync catches up after the event stream was interrupted, and reports
// whether the turn is over already (its idle event may have been lost).
func (l *Loop) resync(ctx context.Context) (bool, error) {
	l.log.Warn("event stream interrupted; listing messages to catch up", "turn", l.turns)
	return l.catchUp(ctx, "after the event stream resumed")
}

// catchUp feeds a snapshot of the session family to the capture and
// records what became ready. It reports whether the root session's latest
// exchange is finished: after the last user message (this turn's prompt)
// the last message is an assistant message that completed and does not
// wait for tool results.
func (l *Loop) catchUp(ctx context.Context, when string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.cfg.ReconcileTimeout)
	defer cancel()
	snap, err := l.agent.Snapshot(ctx, l.cfg.RootSessionID)
	if err != nil {
		l.log.Warn("list messages "+when, "turn", l.turns, "err", err)
		return false, nil
	}
	over := false
	for _, s := range snap {
		l.capture.session(s.Session)
		for _, m := range s.Messages {
			l.capture.message(m.Message)
			for _, p := range m.Parts {
				l.capture.part(p)
			}
		}
		if len(s.Messages) > 0 && s.Session.ID == l.cfg.RootSessionID {
			over = s.Messages[len(s.Messages)-1].Message.Final
		}
	}
	if l.capture.frozen {
		return over, nil
	}
	stop, err := l.recordReady(ctx)
	if err != nil {
		return over, err
	}
	if stop != "" {
		l.capture.frozen = true
	}
	return over, nil
}

// frozenReason is the end reason once counting stopped inside a turn.
func (l *Loop) frozenReason() string {
	if l.envoiErr != "" {
		return trace.EndEnvoiError
	}
	return trace.EndPartLimit
}

func (l *Loop) report(ev progress.Event) {
	ev.Time = l.cfg.Now()
	if !l.start.IsZero() {
		ev.ElapsedMs = ev.Time.Sub(l.start).Milliseconds()
	}
	l.rep.Report(ev)
}
