package wire

import (
	"encoding/json"

	"github.com/trajlab/traj/sandbox/agent"
)

// HarnessName is the trace's agent field for Claude Code.
const HarnessName = "claude-code"

// Reader reads the objects a Claude Code trajectory recorded: stdout lines
// of `claude -p --output-format stream-json`, verbatim (a tool part is the
// JSON array of its assistant line and the user line with its result).
// It replays them through the translator the recorder ran live, so a
// reader sees the part the recorder counted, one owner per rule. It reads
// Claude Code 2.1's lines.
type Reader struct {
	// Version is the recorded Claude Code version.
	Version string
}

var _ agent.Reader = Reader{}

// Part implements agent.Reader: the part the translator makes of raw's
// lines whose id is id (a line with several blocks makes a part per
// block, "UUID:i"); with no id, the first counted part.
func (Reader) Part(id string, kind agent.Kind, raw json.RawMessage) (agent.Part, bool) {
	counted := func(p agent.Part) bool { return p.Kind.Counted() }
	return agent.ReplayPart(id, kind, raw, counted, func(emit func(agent.Event)) func(json.RawMessage) {
		t := NewTranslator("", nil, &Accounting{}, nil, emit)
		return func(l json.RawMessage) { t.Line(l) }
	})
}

// Session implements agent.Reader: the init line names the root session
// (Claude Code's session id, which traj passes as --session-id); a
// task_started line, or traj's {"parent_tool_use_id": ID} when Claude
// Code sent none, names a sub-agent's session after the tool call that
// started it. Its parent is the root: a nested sub-agent's parent is the
// session of the tool call, which the part that call is recorded in
// holds (session_id), not the line.
func (Reader) Session(raw json.RawMessage) (agent.Session, bool) {
	var l struct {
		line
		Description     string `json:"description"`
		ParentToolUseID string `json:"parent_tool_use_id"`
	}
	if json.Unmarshal(raw, &l) != nil {
		return agent.Session{Raw: raw}, false
	}
	switch {
	case l.Type == "system" && l.Subtype == "init" && l.SessionID != "":
		return agent.Session{ID: l.SessionID, Raw: raw}, true
	case l.Type == "system" && l.Subtype == "task_started" && l.ToolUseID != "":
		return agent.Session{ID: l.ToolUseID, ParentID: l.SessionID, Title: l.Description, Raw: raw}, true
	case l.Type == "" && l.ParentToolUseID != "":
		return agent.Session{ID: l.ParentToolUseID, Raw: raw}, true
	}
	return agent.Session{Raw: raw}, false
}

// Message implements agent.Reader: an assistant message is announced by
// its first line (the API's message_start event, or the assistant line
// when no stream event came first); a user line is a user message.
func (Reader) Message(raw json.RawMessage) (agent.Message, bool) {
	var l line
	if json.Unmarshal(raw, &l) != nil {
		return agent.Message{Raw: raw}, false
	}
	switch {
	case l.Type == "stream_event" && l.Event != nil && l.Event.Message != nil:
		m := l.Event.Message
		c := &agent.ModelCall{Model: m.Model}
		if m.Usage != nil {
			c.Usage = &agent.Usage{}
			mergeUsage(c.Usage, m.Usage)
		}
		return agent.Message{ID: m.ID, Role: agent.RoleAssistant, Call: c, Raw: raw}, true
	case l.Type == "assistant" && l.Message != nil:
		id := l.Message.ID
		if id == "" {
			id = l.UUID
		}
		return agent.Message{ID: id, Role: agent.RoleAssistant, Call: &agent.ModelCall{Model: l.Message.Model, Created: lineTime(l)}, Raw: raw}, true
	case l.Type == "user":
		return agent.Message{ID: l.UUID, Role: agent.RoleUser, Raw: raw}, true
	case l.Type == "result":
		return agent.Message{ID: l.UUID, Role: agent.RoleAssistant, Raw: raw}, true
	}
	return agent.Message{Raw: raw}, false
}
