package agent

import (
	"encoding/json"
	"time"
)

// EventKind says what an Event carries.
type EventKind int

// Event kinds.
const (
	// EventSession: Session is set.
	EventSession EventKind = iota + 1
	// EventMessage: Message is set.
	EventMessage
	// EventPart: Part is set.
	EventPart
	// EventStatus: SessionID became busy (Busy) or idle (!Busy).
	EventStatus
	// EventError: the harness reported an error for SessionID ("" when it
	// names no session); Error is set.
	EventError
	// EventResync: events may have been lost; call Snapshot to catch up.
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

// Event is one thing the harness reported. Exactly the field its Kind
// names is set.
type Event struct {
	Kind EventKind
	// SessionID is the session the event concerns (also for Session,
	// Message and Part events, where it equals their SessionID).
	SessionID string
	Busy      bool
	Session   *Session
	Message   *Message
	Part      *Part
	Error     *Error
}

// Session is a session of the harness: the root one the orchestrator
// prompts, or a sub-agent's.
type Session struct {
	ID string
	// ParentID is the session that started this one (sub-agents); "" for
	// a root session.
	ParentID string
	// Title is the harness's name for the session (a sub-agent's task
	// description), "" when it gives none.
	Title string
	// Version is the harness's version when the session object names it
	// (OpenCode's does), for traces whose agent field has none.
	Version string
	// Raw is the harness's object, verbatim.
	Raw json.RawMessage
}

// Role is who wrote a message.
type Role string

// Roles.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Message groups parts as the harness does.
type Message struct {
	ID        string
	SessionID string
	Role      Role
	// Final is set on an assistant message that completed and does not
	// wait for tool results: the harness's work on the latest prompt is
	// done in this session (it stopped, or ended with an error).
	Final bool
	// Call is the model call this message records, when the harness's
	// object says (OpenCode: every assistant message; Claude Code: the
	// API message); nil otherwise.
	Call *ModelCall
	// Raw is the harness's object, verbatim.
	Raw json.RawMessage
}

// Kind is a part's kind, recorded as the trace's part_type.
type Kind string

// Counted kinds. Any other value is the harness's own name for an object
// kept verbatim and not counted.
const (
	KindText      Kind = "text"
	KindReasoning Kind = "reasoning"
	KindTool      Kind = "tool"
	KindPatch     Kind = "patch"
)

// Counted reports whether parts of this kind count against the budget
// once Done.
func (k Kind) Counted() bool {
	switch k {
	case KindText, KindReasoning, KindTool, KindPatch:
		return true
	}
	return false
}

// ChangesFiles reports whether a part of this kind can stand for a change
// of the workspace: tools act, a patch reports a change. Text and
// reasoning cannot.
func (k Kind) ChangesFiles() bool { return k == KindTool || k == KindPatch }

// Part is one part of a message: text, reasoning, a tool call with its
// result, a file change, or an uncounted object of the harness.
type Part struct {
	ID        string
	SessionID string
	MessageID string
	Kind      Kind
	// Done is set once the part will not change in a way that matters:
	// text and reasoning finished, a tool's result or error arrived, any
	// other kind as soon as it exists.
	Done bool
	// Text is a text or reasoning part's text (a user part: the prompt).
	Text string
	// Tool is set on KindTool parts.
	Tool *ToolCall
	// Files are the workspace paths the part says it changed: a file
	// change's files, an editing tool's target.
	Files []string
	// Title is the harness's one-line summary of the part, if it gives
	// one (OpenCode's tool title).
	Title string
	// Start and End are when the part began and completed, as the
	// harness reports them (zero when it does not).
	Start, End time.Time
	// Usage is the model usage this object reports, if any.
	Usage *Usage
	// Raw is the harness's object (or objects: a JSON array), verbatim.
	Raw json.RawMessage
}

// ToolStatus is a tool call's state.
type ToolStatus string

// Tool states.
const (
	ToolPending   ToolStatus = "pending"
	ToolRunning   ToolStatus = "running"
	ToolCompleted ToolStatus = "completed"
	ToolError     ToolStatus = "error"
)

// ToolCall is a tool call and, once Done, its result.
type ToolCall struct {
	// Name is the tool's name as the harness offers it ("bash",
	// "tests_run_tests", "Bash", "mcp__tests__run_tests", …).
	Name string
	// CallID is the model's id for the call.
	CallID string
	Status ToolStatus
	// Input is the call's arguments, a JSON object.
	Input json.RawMessage
	// Output is the result text (ToolCompleted); Error the error text
	// (ToolError).
	Output string
	Error  string
	// OutputFile, when set, is where the harness saved the whole output
	// after truncating Output (a path in the harness's state folder).
	OutputFile string
	// ChildSessionID is the session a sub-agent call runs ("" otherwise).
	ChildSessionID string
	// Action is what the call does in the port's terms, when the adapter
	// knows the tool (nil otherwise): readers of a trace show an edit as
	// a diff or a command with its output without knowing each harness's
	// tool names and argument shapes.
	Action *Action
}

// ActionKind names what a tool call does.
type ActionKind string

// Action kinds.
const (
	// ActionEdit replaces text in one file (Path, Edits).
	ActionEdit ActionKind = "edit"
	// ActionWrite writes a whole file (Path, Content).
	ActionWrite ActionKind = "write"
	// ActionCommand runs a shell command (Command); the output is the
	// call's Output.
	ActionCommand ActionKind = "command"
	// ActionTask runs a sub-agent (Description, Prompt; the session is
	// ChildSessionID when known).
	ActionTask ActionKind = "task"
	// ActionRead reads a file (Path) or lists a folder.
	ActionRead ActionKind = "read"
	// ActionSearch searches files or the web (Pattern; Path the folder
	// when given).
	ActionSearch ActionKind = "search"
	// ActionTests is traj's run_tests (Path: the test path).
	ActionTests ActionKind = "run_tests"
	// ActionTodo reads or updates the agent's todo list.
	ActionTodo ActionKind = "todo"
)

// Action is a tool call's arguments read by the adapter that knows the
// tool.
type Action struct {
	Kind        ActionKind
	Path        string
	Edits       []Edit
	Content     string
	Command     string
	Pattern     string
	Description string
	Prompt      string
	// ExitCode is a command's exit status, when the harness reports it
	// with the result (nil while it runs, or when it does not say).
	ExitCode *int
}

// ToolKind is the harness-neutral kind of tool a call is, the one
// vocabulary of Parquet's tool_kind column and the viewer: shell, edit,
// write, read, search, run_tests, sub-agent, todo; "" for a nil Action
// (a tool the adapter does not know).
func (a *Action) ToolKind() string {
	if a == nil {
		return ""
	}
	switch a.Kind {
	case ActionCommand:
		return "shell"
	case ActionTask:
		return "sub-agent"
	}
	return string(a.Kind)
}

// ToolKinds are the values ToolKind gives, in the order readers list them.
func ToolKinds() []string {
	return []string{"shell", "edit", "write", "read", "search", "run_tests", "sub-agent", "todo"}
}

// Edit is one replacement of an edit: Old's first occurrence (every one
// when All) becomes New.
type Edit struct {
	Old, New string
	All      bool
}

// ModelCall is one model call as the harness recorded it.
type ModelCall struct {
	// Model is "provider/model" or the model's name as the harness gives it.
	Model string
	// Usage is what the call consumed, when the message says.
	Usage *Usage
	// Created and Completed are when the call began and ended (zero when
	// unknown); Finish is the harness's stop reason.
	Created, Completed time.Time
	Finish             string
	// Error is the error the call ended with, as text.
	Error string
}

// Usage is what one model call (or harness turn) consumed.
type Usage struct {
	Input      int64
	Output     int64
	Reasoning  int64
	CacheRead  int64
	CacheWrite int64
	// Cost in US dollars, as the harness reports it.
	Cost float64
}

// Add adds u2 to u.
func (u *Usage) Add(u2 Usage) {
	u.Input += u2.Input
	u.Output += u2.Output
	u.Reasoning += u2.Reasoning
	u.CacheRead += u2.CacheRead
	u.CacheWrite += u2.CacheWrite
	u.Cost += u2.Cost
}

// Error is an error the harness reported.
type Error struct {
	// Message is a readable summary ("APIError: rate limited").
	Message string
	// Raw is the harness's error object, verbatim.
	Raw json.RawMessage
}
