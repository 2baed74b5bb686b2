package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/trajlab/traj/sandbox/opencode"
)

// ocAgent adapts an OpenCode server to Agent: prompts and aborts through
// the HTTP client, events from its SSE stream, snapshots from the message
// lists of the session family. It only translates; the loop decides.
type ocAgent struct {
	client *opencode.Client
	model  *opencode.ModelRef
	events <-chan Event
	// gone is closed when the event stream ended for good (the server
	// died); err says why.
	gone chan struct{}
	err  error
}

// Prompt implements Agent.
func (a *ocAgent) Prompt(ctx context.Context, sessionID, text string) error {
	p := opencode.TextPrompt(text)
	p.Model = a.model
	_, err := a.client.SendPrompt(ctx, sessionID, p)
	return err
}

// Abort implements Agent.
func (a *ocAgent) Abort(ctx context.Context, sessionID string) error {
	return a.client.Abort(ctx, sessionID)
}

// Next implements Agent.
func (a *ocAgent) Next(ctx context.Context) (Event, error) {
	select {
	case ev, ok := <-a.events:
		if ok {
			return ev, nil
		}
		<-a.gone
		return Event{}, fmt.Errorf("read events: %w: %v", ErrAgentGone, a.err)
	case <-ctx.Done():
		return Event{}, ctx.Err()
	}
}

// Snapshot implements Agent.
func (a *ocAgent) Snapshot(ctx context.Context, rootID string) ([]SessionSnapshot, error) {
	root, err := a.client.Session(ctx, rootID)
	if err != nil {
		return nil, err
	}
	desc, err := a.client.Descendants(ctx, rootID)
	if err != nil {
		return nil, err
	}
	sessions := append([]opencode.Session{*root}, desc...)
	out := make([]SessionSnapshot, 0, len(sessions))
	for _, s := range sessions {
		msgs, err := a.client.Messages(ctx, s.ID)
		if err != nil {
			return nil, err
		}
		snap := SessionSnapshot{Info: raw(s.Raw, s)}
		for _, m := range msgs {
			ms := MessageSnapshot{Info: raw(m.Info.Raw, m.Info)}
			for _, p := range m.Parts {
				ms.Parts = append(ms.Parts, raw(p.Raw, p))
			}
			snap.Messages = append(snap.Messages, ms)
		}
		out = append(out, snap)
	}
	return out, nil
}

// raw returns the server's JSON for v, re-encoding only when it was not
// kept.
func raw(r json.RawMessage, v any) json.RawMessage {
	if len(r) > 0 {
		return r
	}
	b, _ := json.Marshal(v)
	return b
}
