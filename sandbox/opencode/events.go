package opencode

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// Event types traj handles (OpenCode 1.18.33, GET /event). Others
// (plugin.added, catalog.updated, file.watcher.updated, …) pass through
// with Type and Raw only.
const (
	EventServerConnected   = "server.connected"
	EventServerHeartbeat   = "server.heartbeat"
	EventSessionCreated    = "session.created"
	EventSessionUpdated    = "session.updated"
	EventSessionDeleted    = "session.deleted"
	EventSessionStatus     = "session.status"
	EventSessionIdle       = "session.idle"
	EventSessionError      = "session.error"
	EventSessionDiff       = "session.diff"
	EventMessageUpdated    = "message.updated"
	EventMessageRemoved    = "message.removed"
	EventPartUpdated       = "message.part.updated"
	EventPartRemoved       = "message.part.removed"
	EventPartDelta         = "message.part.delta"
	EventFileEdited        = "file.edited"
	EventPermissionAsked   = "permission.asked"
	EventQuestionAsked     = "question.asked"
	EventStreamReconnected = "traj.stream.reconnected"
)

// Event is one server-sent event. Raw is the event's JSON verbatim; the
// typed fields are decoded from it for the event types that carry them.
// EventStreamReconnected is not OpenCode's: the Stream sends it after it
// reconnected, and events may have been missed before it — resynchronise
// by listing the messages of the sessions you follow (Client.Messages).
type Event struct {
	ID         string          `json:"id"`
	Type       string          `json:"type"`
	Properties json.RawMessage `json:"properties"`

	// SessionID is properties.sessionID (most session and message events).
	SessionID string `json:"-"`
	// Part is set on message.part.updated.
	Part *Part `json:"-"`
	// Message is set on message.updated.
	Message *MessageInfo `json:"-"`
	// Session is set on session.created, session.updated, session.deleted.
	Session *Session `json:"-"`
	// Status is set on session.status: "busy", "idle" or "retry".
	Status *SessionStatus `json:"-"`
	// Delta is set on message.part.delta.
	Delta *PartDelta `json:"-"`

	Raw json.RawMessage `json:"-"`
}

// SessionStatus is a session.status payload.
type SessionStatus struct {
	Type    string `json:"type"`
	Attempt int    `json:"attempt,omitempty"`
	Message string `json:"message,omitempty"`
}

// PartDelta is an incremental piece of a streaming part's field (text).
type PartDelta struct {
	MessageID string `json:"messageID"`
	PartID    string `json:"partID"`
	Field     string `json:"field"`
	Delta     string `json:"delta"`
}

// ParseEvent decodes one event's JSON (data is copied, not kept).
func ParseEvent(data []byte) (Event, error) { return parseEvent(bytes.Clone(data)) }

// parseEvent is ParseEvent keeping data itself as the event's Raw (the
// stream reads each event into a fresh buffer).
func parseEvent(data []byte) (Event, error) {
	var e Event
	if err := json.Unmarshal(data, &e); err != nil {
		return Event{}, fmt.Errorf("event: %w", err)
	}
	e.Raw = data
	if len(e.Properties) == 0 {
		return e, nil
	}
	var p struct {
		SessionID string          `json:"sessionID"`
		Part      *Part           `json:"part"`
		Info      json.RawMessage `json:"info"`
		Status    *SessionStatus  `json:"status"`
	}
	if err := json.Unmarshal(e.Properties, &p); err != nil {
		// Not an object we know; keep the raw event.
		return e, nil
	}
	e.SessionID = p.SessionID
	switch e.Type {
	case EventPartUpdated:
		e.Part = p.Part
	case EventMessageUpdated:
		if len(p.Info) > 0 {
			var m MessageInfo
			if err := json.Unmarshal(p.Info, &m); err != nil {
				return Event{}, fmt.Errorf("event %s: %w", e.Type, err)
			}
			e.Message = &m
		}
	case EventSessionCreated, EventSessionUpdated, EventSessionDeleted:
		if len(p.Info) > 0 {
			var s Session
			if err := json.Unmarshal(p.Info, &s); err != nil {
				return Event{}, fmt.Errorf("event %s: %w", e.Type, err)
			}
			e.Session = &s
			if e.SessionID == "" {
				e.SessionID = s.ID
			}
		}
	case EventSessionStatus:
		e.Status = p.Status
	case EventPartDelta:
		var d PartDelta
		if err := json.Unmarshal(e.Properties, &d); err == nil {
			e.Delta = &d
		}
	}
	return e, nil
}

// StreamOptions tune Subscribe; zero values take the defaults.
type StreamOptions struct {
	// GiveUpAfter ends the stream when no connection could be made for
	// this long (the server is gone). Default 30 s.
	GiveUpAfter time.Duration
	// IdleTimeout reconnects when nothing, not even a heartbeat, arrived
	// for this long. Default 60 s (OpenCode sends heartbeats every ~10 s).
	IdleTimeout time.Duration
	// Buffer is the channel's capacity. Default 1024.
	Buffer int
}

func (o *StreamOptions) fill() {
	if o.GiveUpAfter <= 0 {
		o.GiveUpAfter = 30 * time.Second
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 60 * time.Second
	}
	if o.Buffer <= 0 {
		o.Buffer = 1024
	}
}

// Stream is a live subscription to GET /event that reconnects by itself.
type Stream struct {
	c      *Client
	opts   StreamOptions
	events chan Event
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	err    error
}

// Subscribe opens the event stream and returns once the server confirmed
// the subscription (its server.connected event, which is also delivered),
// so no event of a prompt sent afterwards is missed. The stream
// reconnects with backoff (200 ms, ×1.5, at most 5 s) when the connection
// drops, sending EventStreamReconnected after each reconnection; it ends
// (Events closed, Err set) when ctx is cancelled, Close is called, or no
// connection could be made for GiveUpAfter.
func (c *Client) Subscribe(ctx context.Context, opts StreamOptions) (*Stream, error) {
	opts.fill()
	ctx, cancel := context.WithCancel(ctx)
	s := &Stream{c: c, opts: opts, events: make(chan Event, opts.Buffer), cancel: cancel, done: make(chan struct{})}
	body, first, err := s.connect(ctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("subscribe to events: %w", err)
	}
	s.events <- first
	go s.run(ctx, body)
	return s, nil
}

// Events delivers events in server order; closed when the stream ends.
func (s *Stream) Events() <-chan Event { return s.events }

// Done is closed when the stream has ended.
func (s *Stream) Done() <-chan struct{} { return s.done }

// Err says why the stream ended (nil after Close or cancellation).
func (s *Stream) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close ends the stream and waits for it.
func (s *Stream) Close() {
	s.cancel()
	<-s.done
}

// conn is one open connection: its body and a cancel for its context.
type conn struct {
	r      *bufio.Reader
	body   io.Closer
	cancel context.CancelFunc
	idle   *time.Timer
}

// connect opens GET /event and reads its first event.
func (s *Stream) connect(ctx context.Context) (*conn, Event, error) {
	cctx, cancel := context.WithCancel(ctx)
	req, err := s.c.newRequest(cctx, http.MethodGet, "/event", nil)
	if err != nil {
		cancel()
		return nil, Event{}, err
	}
	req.Header.Set("Accept", "text/event-stream")
	// The idle timer also bounds a server that accepts but never answers.
	idle := time.AfterFunc(s.opts.IdleTimeout, cancel)
	resp, err := s.c.stream.Do(req)
	if err != nil {
		idle.Stop()
		cancel()
		return nil, Event{}, fmt.Errorf("GET /event: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
		resp.Body.Close()
		idle.Stop()
		cancel()
		return nil, Event{}, &APIError{Method: http.MethodGet, Path: "/event", Status: resp.StatusCode, Body: string(b)}
	}
	cn := &conn{r: bufio.NewReaderSize(resp.Body, 64<<10), body: resp.Body, cancel: cancel, idle: idle}
	ev, err := s.next(cn)
	if err != nil {
		cn.close()
		return nil, Event{}, fmt.Errorf("GET /event: first event: %w", err)
	}
	return cn, ev, nil
}

func (cn *conn) close() {
	cn.idle.Stop()
	cn.cancel()
	cn.body.Close()
}

// next reads one event: "data:" lines up to a blank line. Lines may be
// arbitrarily long (tool outputs). Other SSE fields are ignored.
func (s *Stream) next(cn *conn) (Event, error) {
	var data []byte
	for {
		line, err := cn.r.ReadBytes('\n')
		if len(line) > 0 {
			cn.idle.Reset(s.opts.IdleTimeout)
		}
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return Event{}, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			if len(data) == 0 {
				continue
			}
			return parseEvent(data)
		}
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			v = bytes.TrimPrefix(v, []byte(" "))
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, v...)
		}
	}
}

func (s *Stream) run(ctx context.Context, cn *conn) {
	defer close(s.done)
	defer close(s.events)
	defer s.cancel()
	for {
		err := s.pump(ctx, cn)
		cn.close()
		if ctx.Err() != nil {
			return
		}
		cn = s.reconnect(ctx, err)
		if cn == nil {
			return
		}
	}
}

// pump forwards events until the connection fails.
func (s *Stream) pump(ctx context.Context, cn *conn) error {
	for {
		ev, err := s.next(cn)
		if err != nil {
			return err
		}
		select {
		case s.events <- ev:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// reconnect retries with backoff until a connection is made (returned,
// after EventStreamReconnected and the first event were sent) or the
// stream must end (nil, with s.err set unless ctx was cancelled).
func (s *Stream) reconnect(ctx context.Context, cause error) *conn {
	start := time.Now()
	delay := 200 * time.Millisecond
	attempt := 0
	for {
		attempt++
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
		cn, first, err := s.connect(ctx)
		if err == nil {
			props, _ := json.Marshal(map[string]any{"attempts": attempt, "cause": cause.Error(), "gapMillis": time.Since(start).Milliseconds()})
			raw, _ := json.Marshal(map[string]any{"type": EventStreamReconnected, "properties": json.RawMessage(props)})
			for _, ev := range []Event{{Type: EventStreamReconnected, Properties: props, Raw: raw}, first} {
				select {
				case s.events <- ev:
				case <-ctx.Done():
					cn.close()
					return nil
				}
			}
			return cn
		}
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, ErrUnauthorized) || time.Since(start) >= s.opts.GiveUpAfter {
			s.mu.Lock()
			s.err = fmt.Errorf("event stream lost (%v), reconnecting for %v failed: %w", cause, time.Since(start).Round(time.Millisecond), err)
			s.mu.Unlock()
			return nil
		}
		delay = min(time.Duration(float64(delay)*1.5), 5*time.Second)
	}
}
