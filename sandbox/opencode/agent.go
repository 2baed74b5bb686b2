package opencode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/trajlab/traj/sandbox/agent"
)

// Adapter is an OpenCode server behind the agent port: prompts and aborts
// through the HTTP client, events from its SSE stream translated into
// agent.Events, snapshots from the message lists of the session family.
// It only translates; the orchestrator decides.
type Adapter struct {
	client *Client
	model  *ModelRef
	events <-chan agent.Event
	// gone is closed when the event stream ended for good (the server
	// died); err says why.
	gone chan struct{}
	err  error
}

var _ agent.Agent = (*Adapter)(nil)

// NewAdapter follows srv's events from stream (subscribed before the
// first prompt) and prompts with model.
func NewAdapter(srv *Server, stream *Stream, model ModelRef) *Adapter {
	a := &Adapter{client: srv.Client, model: &model, gone: make(chan struct{})}
	a.events = a.pump(stream, srv)
	return a
}

// Prompt implements agent.Agent (SendPrompt: delivered exactly once).
func (a *Adapter) Prompt(ctx context.Context, sessionID, text string) error {
	p := TextPrompt(text)
	p.Model = a.model
	_, err := a.client.SendPrompt(ctx, sessionID, p)
	return err
}

// Abort implements agent.Agent.
func (a *Adapter) Abort(ctx context.Context, sessionID string) error {
	return a.client.Abort(ctx, sessionID)
}

// Next implements agent.Agent.
func (a *Adapter) Next(ctx context.Context) (agent.Event, error) {
	select {
	case ev, ok := <-a.events:
		if ok {
			return ev, nil
		}
		<-a.gone
		return agent.Event{}, fmt.Errorf("read events: %w: %v", agent.ErrGone, a.err)
	case <-ctx.Done():
		return agent.Event{}, ctx.Err()
	}
}

// Snapshot implements agent.Agent: the root session and its descendants,
// each with its messages and parts as the server lists them.
func (a *Adapter) Snapshot(ctx context.Context, rootID string) ([]agent.SessionSnapshot, error) {
	root, err := a.client.Session(ctx, rootID)
	if err != nil {
		return nil, err
	}
	desc, err := a.client.Descendants(ctx, rootID)
	if err != nil {
		return nil, err
	}
	sessions := append([]Session{*root}, desc...)
	out := make([]agent.SessionSnapshot, 0, len(sessions))
	for _, s := range sessions {
		msgs, err := a.client.Messages(ctx, s.ID)
		if err != nil {
			return nil, err
		}
		snap := agent.SessionSnapshot{Session: s.Normalize()}
		for _, m := range msgs {
			ms := agent.MessageSnapshot{Message: m.Info.Normalize()}
			for _, p := range m.Parts {
				ms.Parts = append(ms.Parts, p.Normalize())
			}
			snap.Messages = append(snap.Messages, ms)
		}
		out = append(out, snap)
	}
	return out, nil
}

// pump translates the stream's events until it ends or the server dies;
// then it closes the channel after setting the gone error.
func (a *Adapter) pump(stream *Stream, srv *Server) <-chan agent.Event {
	out := make(chan agent.Event, 1024)
	go func() {
		defer close(out)
		defer close(a.gone)
		for {
			select {
			case <-srv.Done():
				a.err = fmt.Errorf("opencode server exited: %v", srv.Err())
				// Deliver what the stream still holds.
				for {
					select {
					case ev, ok := <-stream.Events():
						if !ok {
							return
						}
						if e, ok := Translate(ev); ok {
							out <- e
						}
					default:
						return
					}
				}
			case ev, ok := <-stream.Events():
				if !ok {
					a.err = stream.Err()
					if a.err == nil {
						a.err = errors.New("event stream closed")
					}
					return
				}
				if e, ok := Translate(ev); ok {
					out <- e
				}
			}
		}
	}()
	return out
}

// Translate maps an OpenCode event to an agent event; ok is false for
// events the recorder does not use (deltas, heartbeats, file notices, …)
// and for the error OpenCode reports after our own abort.
func Translate(ev Event) (agent.Event, bool) {
	switch ev.Type {
	case EventSessionCreated, EventSessionUpdated:
		if ev.Session != nil {
			s := ev.Session.Normalize()
			return agent.Event{Kind: agent.EventSession, SessionID: s.ID, Session: &s}, true
		}
	case EventMessageUpdated:
		if ev.Message != nil {
			m := ev.Message.Normalize()
			return agent.Event{Kind: agent.EventMessage, SessionID: m.SessionID, Message: &m}, true
		}
	case EventPartUpdated:
		if ev.Part != nil {
			p := ev.Part.Normalize()
			return agent.Event{Kind: agent.EventPart, SessionID: p.SessionID, Part: &p}, true
		}
	case EventSessionStatus:
		if ev.Status != nil {
			return agent.Event{Kind: agent.EventStatus, SessionID: ev.SessionID, Busy: ev.Status.Type != "idle"}, true
		}
	case EventSessionIdle:
		return agent.Event{Kind: agent.EventStatus, SessionID: ev.SessionID}, true
	case EventStreamReconnected:
		return agent.Event{Kind: agent.EventResync}, true
	case EventSessionError:
		var p struct {
			Error json.RawMessage `json:"error"`
		}
		_ = json.Unmarshal(ev.Properties, &p)
		var e struct {
			Name string `json:"name"`
			Data struct {
				Message string `json:"message"`
			} `json:"data"`
		}
		_ = json.Unmarshal(p.Error, &e)
		if e.Name == "MessageAbortedError" {
			return agent.Event{}, false // our own abort
		}
		msg := "agent server error: " + strings.TrimSpace(e.Name+": "+e.Data.Message)
		if e.Name == "" && e.Data.Message == "" {
			msg = "agent server reported an error: " + string(p.Error)
		}
		return agent.Event{Kind: agent.EventError, SessionID: ev.SessionID, Error: &agent.Error{Message: msg, Raw: p.Error}}, true
	}
	return agent.Event{}, false
}
