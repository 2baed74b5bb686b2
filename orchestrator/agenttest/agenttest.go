// Package agenttest is an in-memory harness behind the agent port, for
// tests and benchmarks of the recording engine's turn loop (package
// orchestrator/engine): it plays scripted turns of normalized events
// (package sandbox/agent) without running a real harness. It is a test
// double for the port, not a model of any harness; the end-to-end tests
// run the real harnesses (OpenCode, Claude Code, Codex).
package agenttest

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/trajlab/traj/sandbox/agent"
)

// Item is one scripted event.
type Item struct {
	Event agent.Event
	// Before runs just before the event is delivered (for example to
	// change a workspace file the way a tool would).
	Before func() error
	// Hidden events change the server's state but are not delivered on the
	// stream, as if the stream missed them; only Snapshot shows them.
	Hidden bool
	// Group tags the items of one agent part (for measuring the loop's cost
	// per part); 0 means none.
	Group int
}

// Turn is what the agent does in response to one prompt.
type Turn []Item

// Stream is a turn produced lazily (for long synthetic turns that should
// not sit in memory).
type Stream = iter.Seq[Item]

// Agent is an in-memory agent.Agent. Each Prompt plays the next
// turn: a user message, busy, the turn's items, idle. When the turns run
// out, a prompt gets an empty response.
type Agent struct {
	// AfterAbort is how many queued items are still delivered after Abort
	// (as the real server delivers what was in flight).
	AfterAbort int
	// GoneAfter, when > 0, makes Next fail with agent.ErrGone after that
	// many delivered events (a server that died).
	GoneAfter int
	// LoseIdle drops each turn's final idle event from the stream and
	// sends a resync event instead, as after a reconnection that missed it.
	LoseIdle bool

	mu    sync.Mutex
	turns []Stream
	queue []Item
	// pull yields the rest of the current streamed turn; tail follows it.
	pull      func() (Item, bool)
	stopPull  func()
	tail      []Item
	prompts   []string
	aborts    int
	delivered int
	b         *Builder

	sessions []string
	info     map[string]agent.Session
	msgs     map[string][]string // session id → message ids
	msgInfo  map[string]agent.Message
	parts    map[string][]string // message id → part ids
	partInfo map[string]agent.Part

	noState    bool
	lastReturn time.Time
	lastGroup  int
	groupCost  map[int]time.Duration
}

// New returns an agent playing turns, one per prompt.
func New(b *Builder, turns ...Turn) *Agent {
	seqs := make([]Stream, len(turns))
	for i, t := range turns {
		seqs[i] = slices.Values(t)
	}
	return NewStreaming(b, seqs...)
}

// NewStreaming returns an agent playing lazily produced turns.
func NewStreaming(b *Builder, turns ...Stream) *Agent {
	return &Agent{b: b, turns: turns, info: map[string]agent.Session{}, msgs: map[string][]string{},
		msgInfo: map[string]agent.Message{}, parts: map[string][]string{}, partInfo: map[string]agent.Part{},
		groupCost: map[int]time.Duration{}}
}

// KeepState false makes the agent forget what it delivered (no Snapshot
// content), so long benchmarks hold no history.
func (a *Agent) KeepState(keep bool) { a.noState = !keep }

// Prompts returns the prompts received so far.
func (a *Agent) Prompts() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.prompts...)
}

// Aborts is how many times Abort was called.
func (a *Agent) Aborts() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.aborts
}

// GroupCost returns the time the caller spent between receiving the events
// of each group and asking for the next event: the loop's own cost per part.
func (a *Agent) GroupCost() map[int]time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[int]time.Duration, len(a.groupCost))
	for k, v := range a.groupCost {
		out[k] = v
	}
	return out
}

// Prompt implements agent.Agent.
func (a *Agent) Prompt(ctx context.Context, sessionID, text string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.prompts = append(a.prompts, text)
	msgID, msg := a.b.Message(sessionID, "user")
	a.queue = append(a.queue, msg, a.b.Part(sessionID, msgID, "text", map[string]any{"text": text}), a.b.Status(sessionID, true))
	idle := a.b.Status(sessionID, false)
	if a.LoseIdle {
		idle.Hidden = true
	}
	if len(a.turns) > 0 {
		a.closePull()
		a.pull, a.stopPull = iter.Pull(a.turns[0])
		a.tail = []Item{idle}
		a.turns = a.turns[1:]
	} else {
		a.queue = append(a.queue, idle)
	}
	if a.LoseIdle {
		resync := Item{Event: agent.Event{Kind: agent.EventResync}}
		if a.pull != nil {
			a.tail = append(a.tail, resync)
		} else {
			a.queue = append(a.queue, resync)
		}
	}
	return nil
}

func (a *Agent) closePull() {
	if a.stopPull != nil {
		a.stopPull()
	}
	a.pull, a.stopPull, a.tail = nil, nil, nil
}

// pop takes the next scripted item.
func (a *Agent) pop() (Item, bool) {
	if len(a.queue) > 0 {
		it := a.queue[0]
		a.queue = a.queue[1:]
		return it, true
	}
	if a.pull != nil {
		if it, ok := a.pull(); ok {
			return it, true
		}
		a.queue = append(a.queue, a.tail...)
		a.closePull()
		return a.pop()
	}
	return Item{}, false
}

// Abort implements agent.Agent: it drops what is queued beyond
// AfterAbort items and ends with the session idle.
func (a *Agent) Abort(ctx context.Context, sessionID string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.aborts++
	var kept []Item
	for range a.AfterAbort {
		it, ok := a.pop()
		if !ok {
			break
		}
		if it.Event.Kind != agent.EventStatus {
			kept = append(kept, it)
		}
	}
	a.closePull()
	a.queue = append(kept, a.b.Status(sessionID, false))
	return nil
}

// Next implements agent.Agent.
func (a *Agent) Next(ctx context.Context) (agent.Event, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now()
	if !a.lastReturn.IsZero() && a.lastGroup != 0 {
		a.groupCost[a.lastGroup] += now.Sub(a.lastReturn)
	}
	a.lastGroup = 0
	for {
		if a.GoneAfter > 0 && a.delivered >= a.GoneAfter {
			return agent.Event{}, fmt.Errorf("read events: %w", agent.ErrGone)
		}
		it, ok := a.pop()
		if !ok {
			// Nothing will ever come: behave like a stream that stays quiet.
			a.mu.Unlock()
			<-ctx.Done()
			a.mu.Lock()
			return agent.Event{}, ctx.Err()
		}
		if it.Before != nil {
			if err := it.Before(); err != nil {
				return agent.Event{}, fmt.Errorf("scripted side effect: %w", err)
			}
		}
		if !a.noState {
			a.apply(it.Event)
		}
		if it.Hidden {
			continue
		}
		a.delivered++
		a.lastReturn, a.lastGroup = time.Now(), it.Group
		return it.Event, nil
	}
}

// apply keeps the state Snapshot returns.
func (a *Agent) apply(ev agent.Event) {
	switch {
	case ev.Session != nil:
		s := *ev.Session
		if _, ok := a.info[s.ID]; !ok {
			a.sessions = append(a.sessions, s.ID)
		}
		a.info[s.ID] = s
	case ev.Message != nil:
		m := *ev.Message
		if _, ok := a.msgInfo[m.ID]; !ok {
			a.msgs[m.SessionID] = append(a.msgs[m.SessionID], m.ID)
		}
		a.msgInfo[m.ID] = m
	case ev.Part != nil:
		p := *ev.Part
		if _, ok := a.partInfo[p.ID]; !ok {
			a.parts[p.MessageID] = append(a.parts[p.MessageID], p.ID)
		}
		a.partInfo[p.ID] = p
	}
}

// Snapshot implements agent.Agent: every session the agent knows (root
// first), with its messages and parts as last updated.
func (a *Agent) Snapshot(ctx context.Context, rootID string) ([]agent.SessionSnapshot, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	order := []string{rootID}
	for _, s := range a.sessions {
		if s != rootID {
			order = append(order, s)
		}
	}
	var out []agent.SessionSnapshot
	for _, s := range order {
		info, ok := a.info[s]
		if !ok {
			info = a.b.session(s, "")
		}
		snap := agent.SessionSnapshot{Session: info}
		for _, m := range a.msgs[s] {
			ms := agent.MessageSnapshot{Message: a.msgInfo[m]}
			for _, p := range a.parts[m] {
				ms.Parts = append(ms.Parts, a.partInfo[p])
			}
			snap.Messages = append(snap.Messages, ms)
		}
		out = append(out, snap)
	}
	return out, nil
}
