package wire

import (
	"encoding/json"
	"fmt"
)

// Each type below decodes the fields traj uses and keeps the whole JSON
// object verbatim in Raw, so nothing the server sent is lost when a trace
// records it (marshal Raw, not the struct).

// Session is an OpenCode session. A sub-agent's session has ParentID set.
type Session struct {
	ID        string      `json:"id"`
	ParentID  string      `json:"parentID,omitempty"`
	Title     string      `json:"title,omitempty"`
	Directory string      `json:"directory,omitempty"`
	Agent     string      `json:"agent,omitempty"`
	Version   string      `json:"version,omitempty"` // OpenCode's own version
	Cost      float64     `json:"cost,omitempty"`
	Tokens    *Tokens     `json:"tokens,omitempty"`
	Time      SessionTime `json:"time"`

	Raw json.RawMessage `json:"-"`
}

// SessionTime holds Unix milliseconds.
type SessionTime struct {
	Created int64 `json:"created"`
	Updated int64 `json:"updated"`
}

// Tokens are token counts; on an assistant message and on a "step-finish"
// part they count that model call (Total is set by OpenCode 1.18 there).
type Tokens struct {
	Total     float64 `json:"total,omitempty"`
	Input     float64 `json:"input"`
	Output    float64 `json:"output"`
	Reasoning float64 `json:"reasoning"`
	Cache     struct {
		Read  float64 `json:"read"`
		Write float64 `json:"write"`
	} `json:"cache"`
}

// MessageInfo is a message's metadata (the parts come separately). An
// assistant message is finished when Time.Completed is set; Tokens and
// Cost are then final for it.
type MessageInfo struct {
	ID         string          `json:"id"`
	SessionID  string          `json:"sessionID"`
	Role       string          `json:"role"` // "user" or "assistant"
	ParentID   string          `json:"parentID,omitempty"`
	Agent      string          `json:"agent,omitempty"`
	ModelID    string          `json:"modelID,omitempty"`
	ProviderID string          `json:"providerID,omitempty"`
	Finish     string          `json:"finish,omitempty"`
	Cost       float64         `json:"cost,omitempty"`
	Tokens     *Tokens         `json:"tokens,omitempty"`
	Time       MessageTime     `json:"time"`
	Error      json.RawMessage `json:"error,omitempty"`

	Raw json.RawMessage `json:"-"`
}

// MessageTime holds Unix milliseconds; Completed is nil until an
// assistant message is finished (user messages never have it).
type MessageTime struct {
	Created   int64  `json:"created"`
	Completed *int64 `json:"completed,omitempty"`
}

// Message is a message with its parts, as GET /session/{id}/message
// returns it.
type Message struct {
	Info  MessageInfo `json:"info"`
	Parts []Part      `json:"parts"`

	Raw json.RawMessage `json:"-"`
}

// Part types OpenCode 1.18 emits.
const (
	PartText       = "text"
	PartReasoning  = "reasoning"
	PartTool       = "tool"
	PartPatch      = "patch"
	PartStepStart  = "step-start"
	PartStepFinish = "step-finish"
	PartFile       = "file"
	PartSnapshot   = "snapshot"
	PartAgent      = "agent"
	PartSubtask    = "subtask"
	PartRetry      = "retry"
	PartCompaction = "compaction"
)

// Tool states.
const (
	ToolPending   = "pending"
	ToolRunning   = "running"
	ToolCompleted = "completed"
	ToolError     = "error"
)

// Part is one message part.
type Part struct {
	ID        string `json:"id"`
	SessionID string `json:"sessionID"`
	MessageID string `json:"messageID"`
	Type      string `json:"type"`

	// text, reasoning
	Text string    `json:"text,omitempty"`
	Time *PartTime `json:"time,omitempty"`

	// tool
	Tool   string     `json:"tool,omitempty"`
	CallID string     `json:"callID,omitempty"`
	State  *ToolState `json:"state,omitempty"`

	// "step-finish": the model call's usage
	Reason string   `json:"reason,omitempty"`
	Tokens *Tokens  `json:"tokens,omitempty"`
	Cost   *float64 `json:"cost,omitempty"`

	// patch: files changed by the model call, snapshot hash
	Hash  string   `json:"hash,omitempty"`
	Files []string `json:"files,omitempty"`

	Raw json.RawMessage `json:"-"`
}

// PartTime holds Unix milliseconds; End is nil while a text or reasoning
// part streams.
type PartTime struct {
	Start int64  `json:"start"`
	End   *int64 `json:"end,omitempty"`
}

// ToolState is a tool part's state. Metadata of a task tool holds the
// sub-agent's session id ("sessionId").
type ToolState struct {
	Status   string          `json:"status"`
	Input    json.RawMessage `json:"input,omitempty"`
	Output   string          `json:"output,omitempty"`
	Error    string          `json:"error,omitempty"`
	Title    string          `json:"title,omitempty"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
	Time     *PartTime       `json:"time,omitempty"`
}

// Completed reports whether the part will not change any more in a way
// that matters: a text or reasoning part whose end time is set (a user's
// text part has no time at all and is complete as sent), a tool part in
// state completed or error, and any other part type as soon as it appears
// (patch, "step-start", "step-finish", file, … are emitted whole). OpenCode
// may still send updates for a completed part; count each part id once.
func (p Part) Completed() bool {
	switch p.Type {
	case PartText, PartReasoning:
		return p.Time == nil || p.Time.End != nil
	case PartTool:
		return p.State != nil && (p.State.Status == ToolCompleted || p.State.Status == ToolError)
	default:
		return true
	}
}

// SubSessionID is the child session a task tool part runs, from its
// state metadata; empty for other parts or before the child exists.
func (p Part) SubSessionID() string {
	if p.Type != PartTool || p.State == nil || len(p.State.Metadata) == 0 {
		return ""
	}
	var md struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(p.State.Metadata, &md)
	return md.SessionID
}

func (s *Session) UnmarshalJSON(b []byte) error {
	type plain Session
	if err := json.Unmarshal(b, (*plain)(s)); err != nil {
		return fmt.Errorf("session: %w", err)
	}
	s.Raw = append(json.RawMessage(nil), b...)
	return nil
}

func (m *MessageInfo) UnmarshalJSON(b []byte) error {
	type plain MessageInfo
	if err := json.Unmarshal(b, (*plain)(m)); err != nil {
		return fmt.Errorf("message info: %w", err)
	}
	m.Raw = append(json.RawMessage(nil), b...)
	return nil
}

func (m *Message) UnmarshalJSON(b []byte) error {
	type plain Message
	if err := json.Unmarshal(b, (*plain)(m)); err != nil {
		return fmt.Errorf("message: %w", err)
	}
	m.Raw = append(json.RawMessage(nil), b...)
	return nil
}

func (p *Part) UnmarshalJSON(b []byte) error {
	type plain Part
	if err := json.Unmarshal(b, (*plain)(p)); err != nil {
		return fmt.Errorf("part: %w", err)
	}
	p.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// MarshalJSON writes the server's JSON verbatim when there is one.
func (s Session) MarshalJSON() ([]byte, error) {
	if len(s.Raw) > 0 {
		return s.Raw, nil
	}
	type plain Session
	return json.Marshal(plain(s))
}

// MarshalJSON writes the server's JSON verbatim when there is one.
func (m MessageInfo) MarshalJSON() ([]byte, error) {
	if len(m.Raw) > 0 {
		return m.Raw, nil
	}
	type plain MessageInfo
	return json.Marshal(plain(m))
}

// MarshalJSON writes the server's JSON verbatim when there is one.
func (m Message) MarshalJSON() ([]byte, error) {
	if len(m.Raw) > 0 {
		return m.Raw, nil
	}
	type plain Message
	return json.Marshal(plain(m))
}

// MarshalJSON writes the server's JSON verbatim when there is one.
func (p Part) MarshalJSON() ([]byte, error) {
	if len(p.Raw) > 0 {
		return p.Raw, nil
	}
	type plain Part
	return json.Marshal(plain(p))
}
