package wire

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strings"

	"github.com/trajlab/traj/sandbox/agent"
)

// State is the Codex adapter's state: the root session id traj gave the
// trajectory, Codex's thread behind it, the turns so far and the thread's
// cumulative usage at the last turn.completed.
type State struct {
	SessionID string      `json:"session_id"`
	ThreadID  string      `json:"thread_id,omitempty"`
	Turns     int         `json:"turns"`
	Usage     agent.Usage `json:"cumulative_usage"`
}

// Translator turns one turn's `codex exec --json` lines into events: the
// adapter runs it live, the Reader replays recorded lines through it. All
// parts of a turn belong to one assistant message (Codex's exec stream has
// no message ids; the turn is its unit).
type Translator struct {
	root    string
	st      *State
	price   *agent.Price
	emit    func(agent.Event)
	save    func() error
	log     *slog.Logger
	msgID   string
	msgRaw  json.RawMessage
	started bool
	// pending holds item.started lines by item id until item.completed.
	pending map[string]json.RawMessage
	order   []string
	ended   bool
}

// NewTranslator translates one turn of session root, its parts in the
// message msgID: st is the adapter's state (the thread and usage are
// updated, then saved with save), price prices the turn's usage, log takes
// what could not be saved, emit the events.
func NewTranslator(root, msgID string, st *State, price *agent.Price, save func() error, log *slog.Logger, emit func(agent.Event)) *Translator {
	return &Translator{root: root, st: st, price: price, emit: emit, save: save, msgID: msgID,
		pending: map[string]json.RawMessage{}, log: log}
}

type event struct {
	Type     string          `json:"type"`
	ThreadID string          `json:"thread_id"`
	Item     *item           `json:"item"`
	Usage    *turnUsage      `json:"usage"`
	Error    json.RawMessage `json:"error"`
	Message  string          `json:"message"`
}

type item struct {
	ID               string          `json:"id"`
	Type             string          `json:"type"`
	Text             string          `json:"text"`
	Command          string          `json:"command"`
	AggregatedOutput string          `json:"aggregated_output"`
	ExitCode         *int            `json:"exit_code"`
	Status           string          `json:"status"`
	Server           string          `json:"server"`
	Tool             string          `json:"tool"`
	Arguments        json.RawMessage `json:"arguments"`
	Result           *struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
	Error   json.RawMessage `json:"error"`
	Message string          `json:"message"`
	Changes json.RawMessage `json:"changes"`
	// Query is a web_search's, read for the part's action.
	Query string `json:"query"`
}

// turnUsage is turn.completed's usage: cumulative over the thread (a
// resumed thread's first turn includes every earlier turn).
type turnUsage struct {
	InputTokens           int64 `json:"input_tokens"`
	CachedInputTokens     int64 `json:"cached_input_tokens"`
	CacheWriteInputTokens int64 `json:"cache_write_input_tokens"`
	OutputTokens          int64 `json:"output_tokens"`
	ReasoningOutputTokens int64 `json:"reasoning_output_tokens"`
}

// toolItems are the item types that are tool calls; their part is done at
// item.completed.
var toolItems = map[string]bool{"command_execution": true, "mcp_tool_call": true, "web_search": true,
	"collab_tool_call": true, "image_view": true}

func (t *Translator) message(raw []byte) {
	if t.started {
		return
	}
	t.started, t.msgRaw = true, raw
	t.emit(agent.Event{Kind: agent.EventMessage, SessionID: t.root, Message: &agent.Message{
		ID: t.msgID, SessionID: t.root, Role: agent.RoleAssistant, Raw: raw}})
}

// Line translates one stdout line.
func (t *Translator) Line(raw []byte) {
	var e event
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &e) != nil || e.Type == "" {
		return // not one of Codex's JSON lines
	}
	raw = append([]byte(nil), raw...)
	switch e.Type {
	case "thread.started":
		if e.ThreadID != "" && t.st.ThreadID != e.ThreadID {
			t.st.ThreadID = e.ThreadID
			if err := t.save(); err != nil {
				t.log.Warn("codex: thread id not saved", "err", err)
			}
		}
		t.emit(agent.Event{Kind: agent.EventSession, SessionID: t.root, Session: &agent.Session{ID: t.root, Raw: raw}})
	case "turn.started":
		t.message(raw)
	case "item.started":
		if e.Item == nil || !toolItems[e.Item.Type] {
			return
		}
		t.message(raw)
		t.pending[e.Item.ID] = raw
		t.order = append(t.order, e.Item.ID)
		p := t.toolPart(e.Item, []json.RawMessage{raw})
		t.emit(agent.Event{Kind: agent.EventPart, SessionID: t.root, Part: &p})
	case "item.updated":
		// todo lists and the like change in place; their completed
		// version is recorded.
	case "item.completed":
		if e.Item == nil {
			return
		}
		t.message(raw)
		t.completed(e.Item, raw)
	case "turn.completed":
		t.message(raw)
		t.turnCompleted(e.Usage, raw)
	case "turn.failed", "error":
		t.message(raw)
		msg := e.Message
		if len(e.Error) > 0 {
			var inner struct {
				Message string `json:"message"`
			}
			if json.Unmarshal(e.Error, &inner) == nil && inner.Message != "" {
				msg = inner.Message
			}
		}
		t.emit(agent.Event{Kind: agent.EventPart, SessionID: t.root, Part: &agent.Part{
			ID: t.msgID + ":" + e.Type + ":" + shortHash(raw), SessionID: t.root, MessageID: t.msgID, Kind: agent.Kind(e.Type), Done: true, Raw: raw}})
		if e.Type == "turn.failed" {
			t.ended = true
			t.emit(agent.Event{Kind: agent.EventError, SessionID: t.root, Error: &agent.Error{Message: "codex: " + msg, Raw: raw}})
			t.final()
		}
	}
}

func shortHash(b []byte) string {
	h := fnv.New32a()
	_, _ = h.Write(b)
	return fmt.Sprintf("%08x", h.Sum32())
}

// toolName is the name the model called: exec_command for commands,
// mcp__SERVER__TOOL for MCP tools (Claude Code's form, so run_tests reads
// the same across harnesses), the item type otherwise.
func toolName(it *item) string {
	switch it.Type {
	case "command_execution":
		return "exec_command"
	case "mcp_tool_call":
		return "mcp__" + it.Server + "__" + it.Tool
	}
	return it.Type
}

func (t *Translator) toolPart(it *item, raws []json.RawMessage) agent.Part {
	raw, _ := json.Marshal(raws)
	input := it.Arguments
	if it.Type == "command_execution" {
		input, _ = json.Marshal(map[string]string{"command": it.Command})
	}
	tool := &agent.ToolCall{Name: toolName(it), CallID: it.ID, Status: agent.ToolRunning, Input: input, Action: action(it)}
	return agent.Part{ID: t.msgID + ":" + it.ID, SessionID: t.root, MessageID: t.msgID, Kind: agent.KindTool, Raw: raw, Tool: tool}
}

// action is what a tool item does in the port's terms (nil for an item
// the adapter does not know): a command with its exit code once it
// completed, traj's run_tests (the MCP server "tests"), a web search, an
// image viewed (a read), a collaborator agent (a sub-agent); only the
// command's and run_tests' fields are read.
func action(it *item) *agent.Action {
	var args struct {
		TestPath string `json:"test_path"`
	}
	switch it.Type {
	case "command_execution":
		return &agent.Action{Kind: agent.ActionCommand, Command: it.Command, ExitCode: it.ExitCode}
	case "mcp_tool_call":
		if it.Server != "tests" || it.Tool != "run_tests" {
			return nil
		}
		_ = json.Unmarshal(it.Arguments, &args)
		return &agent.Action{Kind: agent.ActionTests, Path: args.TestPath}
	case "web_search":
		return &agent.Action{Kind: agent.ActionSearch, Pattern: it.Query}
	case "image_view":
		return &agent.Action{Kind: agent.ActionRead}
	case "collab_tool_call":
		return &agent.Action{Kind: agent.ActionTask}
	}
	return nil
}

// changedPaths are the paths of a file_change item's changes
// ([{"path": …, "kind": …}]).
func changedPaths(raw json.RawMessage) []string {
	var changes []struct {
		Path string `json:"path"`
	}
	_ = json.Unmarshal(raw, &changes)
	var out []string
	for _, c := range changes {
		if c.Path != "" {
			out = append(out, c.Path)
		}
	}
	return out
}

func (t *Translator) completed(it *item, raw []byte) {
	p := agent.Part{ID: t.msgID + ":" + it.ID, SessionID: t.root, MessageID: t.msgID, Done: true, Raw: raw}
	switch {
	case toolItems[it.Type]:
		raws := []json.RawMessage{raw}
		if started, ok := t.pending[it.ID]; ok {
			raws = []json.RawMessage{started, raw}
			delete(t.pending, it.ID)
		}
		p = t.toolPart(it, raws)
		p.Done = true
		tool := p.Tool
		out := it.AggregatedOutput
		if it.Result != nil {
			var b strings.Builder
			for _, c := range it.Result.Content {
				b.WriteString(c.Text)
			}
			out = b.String()
		}
		failed := it.Status == "failed" || (len(it.Error) > 0 && string(it.Error) != "null")
		if failed {
			tool.Status, tool.Error = agent.ToolError, out
			if tool.Error == "" {
				tool.Error = string(it.Error)
			}
		} else {
			tool.Status, tool.Output = agent.ToolCompleted, out
		}
	case it.Type == "agent_message":
		p.Kind, p.Text = agent.KindText, it.Text
	case it.Type == "reasoning":
		p.Kind, p.Text = agent.KindReasoning, it.Text
	case it.Type == "file_change":
		p.Kind, p.Files = agent.KindPatch, changedPaths(it.Changes)
	default:
		p.Kind = agent.Kind(it.Type) // error, todo_list, …: kept, not counted
	}
	t.emit(agent.Event{Kind: agent.EventPart, SessionID: t.root, Part: &p})
}

// turnCompleted sends the turn's usage (this turn's share of the thread's
// cumulative count) with the turn.completed line, and ends the turn.
func (t *Translator) turnCompleted(u *turnUsage, raw []byte) {
	t.ended = true
	p := agent.Part{ID: t.msgID + ":turn.completed", SessionID: t.root, MessageID: t.msgID, Kind: "turn.completed", Done: true, Raw: raw}
	if u != nil {
		cum := agent.Usage{Input: u.InputTokens - u.CachedInputTokens, CacheRead: u.CachedInputTokens,
			CacheWrite: u.CacheWriteInputTokens, Output: u.OutputTokens - u.ReasoningOutputTokens, Reasoning: u.ReasoningOutputTokens}
		prev := t.st.Usage
		turn := agent.Usage{Input: max(0, cum.Input-prev.Input), Output: max(0, cum.Output-prev.Output),
			Reasoning: max(0, cum.Reasoning-prev.Reasoning), CacheRead: max(0, cum.CacheRead-prev.CacheRead),
			CacheWrite: max(0, cum.CacheWrite-prev.CacheWrite)}
		if t.price != nil {
			turn.Cost = t.price.Cost(turn)
		}
		p.Usage = &turn
		t.st.Usage = cum
		if err := t.save(); err != nil {
			t.log.Warn("codex: usage accounting not saved", "err", err)
		}
	}
	t.emit(agent.Event{Kind: agent.EventPart, SessionID: t.root, Part: &p})
	t.final()
}

func (t *Translator) final() {
	t.emit(agent.Event{Kind: agent.EventMessage, SessionID: t.root, Message: &agent.Message{
		ID: t.msgID, SessionID: t.root, Role: agent.RoleAssistant, Final: true, Raw: t.msgRaw}})
}

// End runs after the process exited: tool calls without a result (an
// aborted turn) are sent as they are, not done.
func (t *Translator) End() bool {
	for _, id := range t.order {
		if started, ok := t.pending[id]; ok {
			var e event
			if json.Unmarshal(started, &e) == nil && e.Item != nil {
				p := t.toolPart(e.Item, []json.RawMessage{started})
				t.emit(agent.Event{Kind: agent.EventPart, SessionID: t.root, Part: &p})
			}
		}
	}
	t.pending = map[string]json.RawMessage{}
	return t.ended
}
