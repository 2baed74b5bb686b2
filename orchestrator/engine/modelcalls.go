package engine

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/trajlab/traj/sandbox/agent"
	"github.com/trajlab/traj/trace"
)

// ModelCall is what the model gateway recorded of one call, as the
// recorder needs it to attribute the call to parts.
type ModelCall struct {
	Seq         int
	Model       string
	LatencyMS   float64
	ResponseID  string
	ToolCallIDs []string
	// Outputs are the response's output items by kind ("reasoning",
	// "text", "tool"), in order.
	Outputs []string
	// Tools is how many tools the request offered: a request offering
	// none is a harness's side request (a title, a topic), which no part
	// comes from.
	Tools  int
	Tokens *trace.Tokens
	Cost   *float64
	// Failed: the call got no whole response (an error status, a broken
	// stream): the harness retries it, no part comes from it.
	Failed bool
}

// DefaultCallWait is how long a part waits for the model call it came
// from to be recorded (the harness can finish a part a moment before the
// gateway has read the response's end: milliseconds). A part no call
// will match (a sub-agent's beside its parent's calls) waits this long,
// so it stays short.
const DefaultCallWait = 2 * time.Second

// ModelCalls attributes each recorded part to the model gateway's call
// that produced it, and gives the part its share of the call's tokens
// and cost (the call's, divided evenly among its outputs). A part is
// matched, in this order, by its tool call id (the model's id, which the
// gateway read from the response), by its message id (a harness that
// keeps the response's id), by an earlier part of the same message, and
// else by order: the next output of the part's kind among the calls made
// since the last matched one (a harness whose parts carry no model id,
// Codex). What no part claims stays with the call: the run's finish
// records it as unattributed (trace.Unclaimed).
type ModelCalls struct {
	// Wait bounds how long a part waits for its call (DefaultCallWait).
	Wait time.Duration
	// MessagePerTurn: the harness's message ids name a turn, not a
	// response (Codex): no part is matched by its message id, and the
	// recorder makes each part's message id its response's.
	MessagePerTurn bool

	mu       sync.Mutex
	changed  chan struct{}
	inflight int
	calls    []*callEntry
	byTool   map[string]*callEntry
	byResp   map[string]*callEntry
	byMsg    map[string]*callEntry
	// latest is the index in calls of the newest call a part claimed.
	latest int
}

type callEntry struct {
	c     ModelCall
	index int // in ModelCalls.calls
	taken []bool
	// pos is the first output the order match may take.
	pos int
}

// Started is told a call began.
func (m *ModelCalls) Started() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inflight++
	m.notifyLocked()
}

// Completed is told a call was recorded.
func (m *ModelCalls) Completed(c ModelCall) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.inflight > 0 {
		m.inflight--
	}
	e := &callEntry{c: c, taken: make([]bool, len(c.Outputs)), index: len(m.calls)}
	m.calls = append(m.calls, e)
	if m.byTool == nil {
		m.byTool, m.byResp, m.byMsg = map[string]*callEntry{}, map[string]*callEntry{}, map[string]*callEntry{}
	}
	for _, id := range c.ToolCallIDs {
		m.byTool[id] = e
	}
	if c.ResponseID != "" {
		m.byResp[c.ResponseID] = e
	}
	m.notifyLocked()
}

func (m *ModelCalls) notifyLocked() {
	if m.changed != nil {
		close(m.changed)
		m.changed = nil
	}
}

// Attribution is a part's model call and its share of the call's usage.
type Attribution struct {
	Call   trace.PartCall
	Tokens *trace.Tokens
	Cost   *float64
	// MessageID is the part's message id when the recorder names it
	// after the response (MessagePerTurn), else "".
	MessageID string
}

// claim finds the call p came from, waiting while a call is in flight
// and none matches; nil when none does.
func (m *ModelCalls) claim(ctx context.Context, p agent.Part) *Attribution {
	wait := m.Wait
	if wait <= 0 {
		wait = DefaultCallWait
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		m.mu.Lock()
		if a := m.claimLocked(p); a != nil {
			m.mu.Unlock()
			return a
		}
		if m.inflight == 0 && len(m.calls) > 0 {
			// Nothing is coming that could match: a part of a call that
			// no output names (the last resort below).
			a := m.fallbackLocked(p)
			m.mu.Unlock()
			return a
		}
		if m.changed == nil {
			m.changed = make(chan struct{})
		}
		ch := m.changed
		m.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			m.mu.Lock()
			a := m.fallbackLocked(p)
			m.mu.Unlock()
			return a
		case <-ctx.Done():
			return nil
		}
	}
}

// outputKind is the gateway's output kind a part of kind k is ("": none,
// a file change).
func outputKind(k agent.Kind) string {
	switch k {
	case agent.KindReasoning:
		return "reasoning"
	case agent.KindText:
		return "text"
	case agent.KindTool:
		return "tool"
	}
	return ""
}

func (m *ModelCalls) claimLocked(p agent.Part) *Attribution {
	kind := outputKind(p.Kind)
	if p.Tool != nil && p.Tool.CallID != "" {
		if e := m.byTool[p.Tool.CallID]; e != nil {
			slot := -1
			for i, id := range e.c.ToolCallIDs {
				if id == p.Tool.CallID {
					slot = e.nthFree(kind, i)
				}
			}
			return m.take(e, slot, p, "tool_call_id")
		}
	}
	if !m.MessagePerTurn && p.MessageID != "" {
		if e := m.byResp[p.MessageID]; e != nil {
			return m.take(e, e.firstFree(kind, 0), p, "response_id")
		}
		if e := m.byMsg[p.MessageID]; e != nil {
			return m.take(e, e.firstFree(kind, 0), p, "message")
		}
	}
	if kind == "" {
		return nil
	}
	for i := m.latest; i < len(m.calls); i++ {
		e := m.calls[i]
		if !e.orderable() {
			continue
		}
		if slot := e.firstFree(kind, e.pos); slot >= 0 {
			return m.take(e, slot, p, "order")
		}
	}
	return nil
}

// fallbackLocked is a part no output matches (a file change, a part of
// a kind the response did not announce): it belongs to the newest call
// a part claimed, without a share.
func (m *ModelCalls) fallbackLocked(p agent.Part) *Attribution {
	if len(m.calls) == 0 {
		return nil
	}
	if !m.MessagePerTurn && p.MessageID != "" {
		if e := m.byMsg[p.MessageID]; e != nil {
			return m.take(e, -1, p, "message")
		}
	}
	return m.take(m.calls[m.latest], -1, p, "order")
}

// orderable: a call whose outputs parts may claim by order.
func (e *callEntry) orderable() bool { return !e.c.Failed && e.c.Tools > 0 && len(e.c.Outputs) > 0 }

// firstFree is the first output of kind at or after from not yet taken
// (-1: none).
func (e *callEntry) firstFree(kind string, from int) int {
	for i := from; i < len(e.c.Outputs); i++ {
		if e.c.Outputs[i] == kind && !e.taken[i] {
			return i
		}
	}
	return -1
}

// nthFree is the n-th output of kind when free, else the first free one.
func (e *callEntry) nthFree(kind string, n int) int {
	for i, k := range e.c.Outputs {
		if k != kind {
			continue
		}
		if n == 0 {
			if !e.taken[i] {
				return i
			}
			break
		}
		n--
	}
	return e.firstFree(kind, 0)
}

// take gives p output slot of e (-1: no share).
func (m *ModelCalls) take(e *callEntry, slot int, p agent.Part, join string) *Attribution {
	a := &Attribution{Call: trace.PartCall{Seq: e.c.Seq, Model: e.c.Model, LatencyMS: e.c.LatencyMS, Join: join}}
	if slot >= 0 {
		e.taken[slot] = true
		e.pos = slot + 1
		n := len(e.c.Outputs)
		a.Call.Outputs = n
		if e.c.Tokens != nil {
			t := shareTokens(*e.c.Tokens, n, slot)
			a.Tokens = &t
		}
		if e.c.Cost != nil {
			c := *e.c.Cost / float64(n)
			a.Cost = &c
		}
	}
	m.latest = max(m.latest, e.index)
	if p.MessageID != "" && !m.MessagePerTurn {
		m.byMsg[p.MessageID] = e
	}
	if m.MessagePerTurn && p.MessageID != "" {
		a.MessageID = callMessageID(p.MessageID, e.c.Seq)
	}
	return a
}

// callMessageID names the message of a harness whose message ids name a
// turn after the response: the turn's id and the call's seq.
func callMessageID(turnMessage string, seq int) string {
	return turnMessage + ":call-" + strconv.Itoa(seq)
}

// shareTokens is output slot's share of t among n outputs: each kind
// divided evenly, the remainder on the first outputs, so the shares add
// up to t exactly.
func shareTokens(t trace.Tokens, n, slot int) trace.Tokens {
	s := func(v int64) int64 {
		q, r := v/int64(n), v%int64(n)
		if int64(slot) < r {
			q++
		}
		return q
	}
	return trace.Tokens{Input: s(t.Input), Output: s(t.Output), Reasoning: s(t.Reasoning),
		CacheRead: s(t.CacheRead), CacheWrite: s(t.CacheWrite)}
}
