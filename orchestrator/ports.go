package orchestrator

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/trajlab/traj/orchestrator/progress"
	"github.com/trajlab/traj/trace"
)

// EventKind says what an agent Event carries.
type EventKind int

// Event kinds. Data is always the server's object verbatim.
const (
	// EventSession: Data is a session info ({"id", "parentID", …}).
	EventSession EventKind = iota + 1
	// EventMessage: Data is a message info ({"id", "sessionID", "role", …}).
	EventMessage
	// EventPart: Data is a message part ({"id", "sessionID", "messageID", "type", …}).
	EventPart
	// EventStatus: SessionID became busy (Busy) or idle (!Busy).
	EventStatus
	// EventError: the server reported an error for SessionID; Data is the
	// error object, Detail a readable summary.
	EventError
	// EventResync: the event stream was interrupted and resumed; events may
	// have been lost (the loop lists the messages to catch up).
	EventResync
)

func (k EventKind) String() string {
	switch k {
	case EventSession:
		return "session"
	case EventMessage:
		return "message"
	case EventPart:
		return "part"
	case EventStatus:
		return "status"
	case EventError:
		return "error"
	case EventResync:
		return "resync"
	}
	return "unknown"
}

// Event is one thing the agent server reported, reduced to what the loop
// needs; the server's own object is kept verbatim in Data.
type Event struct {
	Kind      EventKind
	SessionID string
	Busy      bool
	Data      json.RawMessage
	Detail    string
}

// SessionSnapshot is everything the server holds for one session, used to
// reconcile after a turn settles (events may have been missed).
type SessionSnapshot struct {
	Info     json.RawMessage
	Messages []MessageSnapshot
}

// MessageSnapshot is one message with its parts, verbatim.
type MessageSnapshot struct {
	Info  json.RawMessage
	Parts []json.RawMessage
}

// ErrAgentGone is returned (wrapped) by Agent.Next when the agent server
// died or its event stream cannot be recovered.
var ErrAgentGone = errors.New("agent server gone")

// Agent is the loop's view of an agent server (OpenCode): prompt a session,
// follow its events, abort it, and list what it holds.
type Agent interface {
	// Prompt sends text to the session and returns once the server has
	// accepted it; the response arrives as events.
	Prompt(ctx context.Context, sessionID, text string) error
	// Abort stops whatever the session is doing.
	Abort(ctx context.Context, sessionID string) error
	// Next returns the next event. It returns ctx.Err() when ctx ends and
	// an error wrapping ErrAgentGone when the server is gone.
	Next(ctx context.Context) (Event, error)
	// Snapshot returns the session rootID and all its descendant sessions
	// with their messages and parts, in server order.
	Snapshot(ctx context.Context, rootID string) ([]SessionSnapshot, error)
}

// Checkpointer commits the workspace when files changed.
type Checkpointer interface {
	// Checkpoint commits the workspace if it changed since the last
	// checkpoint, labelled with the part index.
	Checkpoint(ctx context.Context, part int) (trace.RepoCheckpoint, error)
}

// TraceWriter persists the trace durably, part by part: after AppendPart
// returns, the local agent_trace.json holds the part.
// *trace.Writer implements it.
type TraceWriter interface {
	BeginTurn(t trace.TurnStart) error
	AppendPart(p *trace.Part) error
	// EndTurn closes the open turn with what the server returned after its
	// last counted part (end.TrailingParts).
	EndTurn(end trace.TurnEnd) error
}

// Publisher hands a durable part to the store (asynchronously): the part's
// record and, when it made a commit, the incremental history bundle. It
// must not block on the network.
type Publisher interface {
	PartRecorded(ctx context.Context, p *trace.Part) error
}

// Reporter receives progress events.
type Reporter interface {
	Report(ev progress.Event)
}
