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

// Normalize returns the session as the agent port sees it.
func (s Session) Normalize() agent.Session {
	return agent.Session{ID: s.ID, ParentID: s.ParentID, Title: s.Title, Version: s.Version, Raw: raw(s.Raw, s)}
}

// Normalize returns the message as the agent port sees it. Final: an
// assistant message that completed with an error or with a finish other
// than "tool-calls" (which means more model calls follow).
func (m MessageInfo) Normalize() agent.Message {
	out := agent.Message{ID: m.ID, SessionID: m.SessionID, Role: agent.Role(m.Role), Raw: raw(m.Raw, m)}
	if m.Role == "assistant" && m.Time.Completed != nil {
		out.Final = len(m.Error) > 0 && string(m.Error) != "null" || m.Finish != "" && m.Finish != "tool-calls"
	}
	if m.Role == "assistant" {
		c := &agent.ModelCall{Model: m.ModelID, Created: msTime(m.Time.Created), Finish: m.Finish}
		if m.ProviderID != "" && m.ModelID != "" {
			c.Model = m.ProviderID + "/" + m.ModelID
		}
		if m.Time.Completed != nil {
			c.Completed = msTime(*m.Time.Completed)
		}
		if m.Tokens != nil || m.Cost != 0 {
			c.Usage = m.Tokens.usage()
			c.Usage.Cost = m.Cost
		}
		if len(m.Error) > 0 && string(m.Error) != "null" {
			c.Error = string(m.Error)
		}
		out.Call = c
	}
	return out
}

// Normalize returns the part as the agent port sees it: its kind is
// OpenCode's part type (text, reasoning, tool and patch are counted;
// "step-start", "step-finish", … are kept uncounted), Done as the
// recorder counts it (text and reasoning once their end time is set, tool
// once completed or failed), a tool's call and result, and the usage of a
// "step-finish" part.
func (p Part) Normalize() agent.Part {
	out := agent.Part{ID: p.ID, SessionID: p.SessionID, MessageID: p.MessageID, Kind: agent.Kind(p.Type), Raw: raw(p.Raw, p),
		Text: p.Text, Files: p.Files}
	if p.Time != nil {
		out.Start, out.End = msTime(p.Time.Start), msTimePtr(p.Time.End)
	}
	switch p.Type {
	case PartText, PartReasoning:
		out.Done = p.Time != nil && p.Time.End != nil && *p.Time.End != 0
	case PartTool:
		out.Done = p.State != nil && (p.State.Status == ToolCompleted || p.State.Status == ToolError)
		out.Tool = &agent.ToolCall{Name: p.Tool, CallID: p.CallID, ChildSessionID: p.SubSessionID()}
		if st := p.State; st != nil {
			out.Tool.Status = agent.ToolStatus(st.Status)
			out.Tool.Input, out.Tool.Output, out.Tool.Error = st.Input, st.Output, st.Error
			md, mdErr := readMetadata(st.Metadata)
			if mdErr == nil && md.Truncated {
				out.Tool.OutputFile = md.OutputPath
			}
			out.Title = st.Title
			if st.Time != nil {
				out.Start, out.End = msTime(st.Time.Start), msTimePtr(st.Time.End)
			}
			if knownTool(p.Tool) {
				in, err := readToolInput(st.Input)
				if f := editedFile(p.Tool, in); f != "" {
					out.Files = []string{f}
				}
				if err == nil {
					out.Tool.Action = action(p.Tool, in)
				}
				if a := out.Tool.Action; a != nil && a.Kind == agent.ActionCommand && mdErr == nil {
					a.ExitCode = md.Exit
				}
			}
		}
	default:
		out.Done = true
	}
	if p.Type == PartStepFinish && (p.Tokens != nil || p.Cost != nil) {
		u := p.Tokens.usage()
		if p.Cost != nil {
			u.Cost = *p.Cost
		}
		out.Usage = u
	}
	return out
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
