// Package agenttest is an in-memory agent server for tests and benchmarks
// of the orchestrator's loop: it plays scripted turns of OpenCode-shaped
// events without running OpenCode. It is a test double, not a model of
// every OpenCode behaviour; the end-to-end tests run the real server.
package agenttest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/trajlab/traj/orchestrator"
)

// Item is one scripted event.
type Item struct {
	Event orchestrator.Event
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

// Agent is an in-memory orchestrator.Agent. Each Prompt plays the next
// turn: a user message, busy, the turn's items, idle. When the turns run
// out, a prompt gets an empty response.
type Agent struct {
	// AfterAbort is how many queued items are still delivered after Abort
	// (as the real server delivers what was in flight).
	AfterAbort int
	// GoneAfter, when > 0, makes Next fail with ErrAgentGone after that
	// many delivered events (a server that died).
	GoneAfter int

	mu        sync.Mutex
	turns     []Turn
	queue     []Item
	prompts   []string
	aborts    int
	delivered int
	b         *Builder

	sessions []string
	info     map[string]json.RawMessage // session id → info
	msgs     map[string][]string        // session id → message ids
	msgInfo  map[string]json.RawMessage
	parts    map[string][]string // message id → part ids
	partRaw  map[string]json.RawMessage

	lastReturn time.Time
	lastGroup  int
	groupCost  map[int]time.Duration
}

// New returns an agent whose root session is rootID, playing turns.
func New(b *Builder, turns ...Turn) *Agent {
	return &Agent{b: b, turns: turns, info: map[string]json.RawMessage{}, msgs: map[string][]string{},
		msgInfo: map[string]json.RawMessage{}, parts: map[string][]string{}, partRaw: map[string]json.RawMessage{},
		groupCost: map[int]time.Duration{}}
}

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

// Prompt implements orchestrator.Agent.
func (a *Agent) Prompt(ctx context.Context, sessionID, text string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.prompts = append(a.prompts, text)
	msgID, msg := a.b.Message(sessionID, "user")
	q := []Item{msg, a.b.Part(sessionID, msgID, "text", map[string]any{"text": text}), a.b.Status(sessionID, true)}
	if len(a.turns) > 0 {
		q = append(q, a.turns[0]...)
		a.turns = a.turns[1:]
	}
	q = append(q, a.b.Status(sessionID, false))
	a.queue = append(a.queue, q...)
	return nil
}

// Abort implements orchestrator.Agent: it drops what is queued beyond
// AfterAbort items and ends with the session idle.
func (a *Agent) Abort(ctx context.Context, sessionID string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.aborts++
	keep := min(a.AfterAbort, len(a.queue))
	var kept []Item
	for _, it := range a.queue[:keep] {
		if it.Event.Kind != orchestrator.EventStatus {
			kept = append(kept, it)
		}
	}
	a.queue = append(kept, a.b.Status(sessionID, false))
	return nil
}

// Next implements orchestrator.Agent.
func (a *Agent) Next(ctx context.Context) (orchestrator.Event, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now()
	if !a.lastReturn.IsZero() && a.lastGroup != 0 {
		a.groupCost[a.lastGroup] += now.Sub(a.lastReturn)
	}
	a.lastGroup = 0
	for {
		if a.GoneAfter > 0 && a.delivered >= a.GoneAfter {
			return orchestrator.Event{}, fmt.Errorf("read events: %w", orchestrator.ErrAgentGone)
		}
		if len(a.queue) == 0 {
			// Nothing will ever come: behave like a stream that stays quiet.
			a.mu.Unlock()
			<-ctx.Done()
			a.mu.Lock()
			return orchestrator.Event{}, ctx.Err()
		}
		it := a.queue[0]
		a.queue = a.queue[1:]
		if it.Before != nil {
			if err := it.Before(); err != nil {
				return orchestrator.Event{}, fmt.Errorf("scripted side effect: %w", err)
			}
		}
		a.apply(it.Event)
		if it.Hidden {
			continue
		}
		a.delivered++
		a.lastReturn, a.lastGroup = time.Now(), it.Group
		return it.Event, nil
	}
}

// apply keeps the server-side state Snapshot returns.
func (a *Agent) apply(ev orchestrator.Event) {
	var ids struct {
		ID        string `json:"id"`
		SessionID string `json:"sessionID"`
		MessageID string `json:"messageID"`
	}
	_ = json.Unmarshal(ev.Data, &ids)
	switch ev.Kind {
	case orchestrator.EventSession:
		if _, ok := a.info[ids.ID]; !ok {
			a.sessions = append(a.sessions, ids.ID)
		}
		a.info[ids.ID] = ev.Data
	case orchestrator.EventMessage:
		if _, ok := a.msgInfo[ids.ID]; !ok {
			a.msgs[ids.SessionID] = append(a.msgs[ids.SessionID], ids.ID)
		}
		a.msgInfo[ids.ID] = ev.Data
	case orchestrator.EventPart:
		if _, ok := a.partRaw[ids.ID]; !ok {
			a.parts[ids.MessageID] = append(a.parts[ids.MessageID], ids.ID)
		}
		a.partRaw[ids.ID] = ev.Data
	}
}

// Snapshot implements orchestrator.Agent: every session the server knows
// (root first), with its messages and parts as last updated.
func (a *Agent) Snapshot(ctx context.Context, rootID string) ([]orchestrator.SessionSnapshot, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	order := []string{rootID}
	for _, s := range a.sessions {
		if s != rootID {
			order = append(order, s)
		}
	}
	var out []orchestrator.SessionSnapshot
	for _, s := range order {
		snap := orchestrator.SessionSnapshot{Info: a.info[s]}
		if snap.Info == nil {
			snap.Info = a.b.sessionInfo(s, "")
		}
		for _, m := range a.msgs[s] {
			ms := orchestrator.MessageSnapshot{Info: a.msgInfo[m]}
			for _, p := range a.parts[m] {
				ms.Parts = append(ms.Parts, a.partRaw[p])
			}
			snap.Messages = append(snap.Messages, ms)
		}
		out = append(out, snap)
	}
	return out, nil
}
