package wire

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/trajlab/traj/sandbox/agent"
)

// Translator turns one turn's stream-json lines into agent events: the
// adapter runs it live, the Reader replays recorded lines through it. It
// is used from the turn's reader goroutine only (and End after it
// finished).
type Translator struct {
	root  string
	price *agent.Price
	emit  func(agent.Event)

	sessions map[string]bool            // sessions announced
	toolSess map[string]string          // tool_use id → the session that called it
	messages map[string]json.RawMessage // message ids announced, with their Raw
	pending  map[string]*pendingTool
	order    []string // pending tool ids in call order
	// calls holds message_start usage by message id until message_delta.
	calls map[string]agent.Usage
	// acct is the session's usage accounting, carried across turns.
	acct *Accounting
	// saved is called after the result line updated acct.
	saved     func()
	lastMsg   map[string]string // session → its latest message id
	sawResult bool
}

type pendingTool struct {
	part agent.Part
	call json.RawMessage // the assistant line
}

// Accounting reconciles the per-call usage with the result lines, whose
// modelUsage is cumulative over the whole session (a resumed session's
// result includes every earlier turn).
type Accounting struct {
	// Cum is modelUsage (tokens and Claude Code's cost) at the last result.
	Cum agent.Usage `json:"cumulative"`
	// Seen is the per-call usage sent since that result (an aborted turn
	// has no result line; its calls are in the next one's totals).
	Seen agent.Usage `json:"seen_since"`
}

// NewTranslator translates the lines of root's session; price, when set,
// prices each call; acct is carried across turns and saved, when set, is
// called after a result line updated it; emit receives the events.
func NewTranslator(root string, price *agent.Price, acct *Accounting, saved func(), emit func(agent.Event)) *Translator {
	return &Translator{root: root, price: price, emit: emit, acct: acct, saved: saved,
		sessions: map[string]bool{root: true}, toolSess: map[string]string{}, messages: map[string]json.RawMessage{},
		pending: map[string]*pendingTool{}, calls: map[string]agent.Usage{}, lastMsg: map[string]string{}}
}

// line is one stdout line of `claude -p --output-format stream-json`.
type line struct {
	Type            string          `json:"type"`
	Subtype         string          `json:"subtype"`
	UUID            string          `json:"uuid"`
	SessionID       string          `json:"session_id"`
	ParentToolUseID *string         `json:"parent_tool_use_id"`
	ToolUseID       string          `json:"tool_use_id"`
	Message         *message        `json:"message"`
	Event           *streamEvent    `json:"event"`
	IsError         bool            `json:"is_error"`
	TotalCostUSD    *float64        `json:"total_cost_usd"`
	ModelUsage      map[string]mu   `json:"modelUsage"`
	Result          json.RawMessage `json:"result"`
	Timestamp       string          `json:"timestamp"`
}

type message struct {
	ID      string          `json:"id"`
	Role    string          `json:"role"`
	Model   string          `json:"model"`
	Content json.RawMessage `json:"content"`
}

type block struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
}

type streamEvent struct {
	Type    string `json:"type"`
	Message *struct {
		ID    string     `json:"id"`
		Model string     `json:"model"`
		Usage *wireUsage `json:"usage"`
	} `json:"message"`
	Usage *wireUsage `json:"usage"`
}

type wireUsage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
}

// mu is one model's totals in the result line's modelUsage.
type mu struct {
	InputTokens              int64   `json:"inputTokens"`
	OutputTokens             int64   `json:"outputTokens"`
	CacheReadInputTokens     int64   `json:"cacheReadInputTokens"`
	CacheCreationInputTokens int64   `json:"cacheCreationInputTokens"`
	CostUSD                  float64 `json:"costUSD"`
}

// mergeUsage applies the fields w sets onto u (Anthropic usage:
// input_tokens exclude cache reads; output_tokens include thinking).
func mergeUsage(u *agent.Usage, w *wireUsage) {
	if w == nil {
		return
	}
	if w.InputTokens != nil {
		u.Input = *w.InputTokens
	}
	if w.OutputTokens != nil {
		u.Output = *w.OutputTokens
	}
	if w.CacheReadInputTokens != nil {
		u.CacheRead = *w.CacheReadInputTokens
	}
	if w.CacheCreationInputTokens != nil {
		u.CacheWrite = *w.CacheCreationInputTokens
	}
}

// Line translates one stdout line.
func (t *Translator) Line(raw []byte) {
	var l line
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &l) != nil || l.Type == "" {
		return // not one of Claude Code's JSON lines
	}
	raw = append([]byte(nil), raw...)
	switch l.Type {
	case "system":
		t.system(l, raw)
	case "stream_event":
		t.streamEvent(l, raw)
	case "assistant":
		t.assistant(l, raw)
	case "user":
		t.user(l, raw)
	case "result":
		t.result(l, raw)
	}
}

// sessionOf is the session a line belongs to: the root, or the sub-agent
// session named after the Task/Agent tool call that started it.
func (t *Translator) sessionOf(l line) string {
	if l.ParentToolUseID == nil || *l.ParentToolUseID == "" {
		return t.root
	}
	return t.child(*l.ParentToolUseID, nil)
}

// child announces the sub-agent session of tool call id once (raw: the
// harness's task_started line when known).
func (t *Translator) child(id string, raw json.RawMessage) string {
	if t.sessions[id] {
		return id
	}
	t.sessions[id] = true
	parent := t.toolSess[id]
	if parent == "" {
		parent = t.root
	}
	if raw == nil {
		raw, _ = json.Marshal(map[string]string{"parent_tool_use_id": id})
	}
	t.emit(agent.Event{Kind: agent.EventSession, SessionID: id, Session: &agent.Session{ID: id, ParentID: parent, Raw: raw}})
	return id
}

func (t *Translator) system(l line, raw []byte) {
	switch l.Subtype {
	case "init":
		t.emit(agent.Event{Kind: agent.EventSession, SessionID: t.root, Session: &agent.Session{ID: t.root, Raw: raw}})
	case "task_started":
		if l.ToolUseID != "" {
			t.child(l.ToolUseID, raw)
		}
	}
}

func (t *Translator) announce(sess, id string, role agent.Role, raw []byte) {
	if _, ok := t.messages[id]; ok {
		return
	}
	t.messages[id] = raw
	if role == agent.RoleAssistant {
		t.lastMsg[sess] = id
	}
	t.emit(agent.Event{Kind: agent.EventMessage, SessionID: sess, Message: &agent.Message{ID: id, SessionID: sess, Role: role, Raw: raw}})
}

// streamEvent reads the usage of each model call: message_start has the
// input side, message_delta the final output count. The usage goes out as
// an uncounted "usage" part of that message, which the recorder adds to
// the next counted part.
func (t *Translator) streamEvent(l line, raw []byte) {
	e := l.Event
	if e == nil {
		return
	}
	sess := t.sessionOf(l)
	switch e.Type {
	case "message_start":
		if e.Message == nil || e.Message.ID == "" {
			return
		}
		t.announce(sess, e.Message.ID, agent.RoleAssistant, raw)
		var u agent.Usage
		mergeUsage(&u, e.Message.Usage)
		t.calls[e.Message.ID] = u
		t.lastMsg[sess] = e.Message.ID
	case "message_delta":
		id := t.lastMsg[sess]
		u, ok := t.calls[id]
		if !ok {
			return
		}
		delete(t.calls, id)
		mergeUsage(&u, e.Usage)
		if t.price != nil {
			u.Cost = t.price.Cost(u)
		}
		t.acct.Seen.Add(u)
		t.emit(agent.Event{Kind: agent.EventPart, SessionID: sess, Part: &agent.Part{
			ID: "usage:" + id, SessionID: sess, MessageID: id, Kind: "usage", Done: true, Usage: &u, Raw: raw}})
	}
}

func (t *Translator) assistant(l line, raw []byte) {
	if l.Message == nil {
		return
	}
	sess := t.sessionOf(l)
	id := l.Message.ID
	if id == "" {
		id = l.UUID
	}
	t.announce(sess, id, agent.RoleAssistant, raw)
	var blocks []block
	_ = json.Unmarshal(l.Message.Content, &blocks)
	for i, b := range blocks {
		pid := l.UUID
		if len(blocks) > 1 {
			pid = fmt.Sprintf("%s:%d", l.UUID, i)
		}
		p := agent.Part{ID: pid, SessionID: sess, MessageID: id, Done: true, Raw: raw, Start: lineTime(l), End: lineTime(l)}
		switch b.Type {
		case "text":
			p.Kind, p.Text = agent.KindText, b.Text
		case "thinking", "redacted_thinking":
			p.Kind, p.Text = agent.KindReasoning, b.Thinking
		case "tool_use":
			p.ID, p.Done, p.Kind, p.End = b.ID, false, agent.KindTool, time.Time{}
			p.Raw, _ = json.Marshal([]json.RawMessage{raw})
			p.Tool = &agent.ToolCall{Name: b.Name, CallID: b.ID, Status: agent.ToolRunning, Input: b.Input}
			if b.Name == "Agent" || b.Name == "Task" {
				p.Tool.ChildSessionID = b.ID
			}
			if f := editedFile(b.Name, b.Input); f != "" {
				p.Files = []string{f}
			}
			p.Tool.Action = action(b.Name, b.Input)
			t.toolSess[b.ID] = sess
			t.pending[b.ID] = &pendingTool{part: p, call: raw}
			t.order = append(t.order, b.ID)
		default:
			p.Kind = agent.Kind(b.Type)
		}
		t.emit(agent.Event{Kind: agent.EventPart, SessionID: sess, Part: &p})
	}
}

// user lines carry tool results (completing the call's part) or a
// sub-agent's prompt.
func (t *Translator) user(l line, raw []byte) {
	if l.Message == nil {
		return
	}
	sess := t.sessionOf(l)
	var blocks []block
	if json.Unmarshal(l.Message.Content, &blocks) != nil {
		blocks = nil // a plain string: a prompt
	}
	rest := false
	for _, b := range blocks {
		if b.Type != "tool_result" {
			rest = true
			continue
		}
		pt, ok := t.pending[b.ToolUseID]
		if !ok {
			rest = true
			continue
		}
		delete(t.pending, b.ToolUseID)
		p := pt.part
		p.Done, p.End = true, lineTime(l)
		tool := *p.Tool
		out := resultText(b.Content)
		if b.IsError {
			tool.Status, tool.Error = agent.ToolError, out
		} else {
			tool.Status, tool.Output = agent.ToolCompleted, out
		}
		if a := tool.Action; a != nil && a.Kind == agent.ActionCommand {
			done := *a
			done.ExitCode = exitCode(b.IsError, out)
			tool.Action = &done
		}
		p.Tool = &tool
		p.Raw, _ = json.Marshal([]json.RawMessage{pt.call, raw})
		t.emit(agent.Event{Kind: agent.EventPart, SessionID: p.SessionID, Part: &p})
	}
	if len(blocks) == 0 || rest {
		id := l.UUID
		t.announce(sess, id, agent.RoleUser, raw)
		t.emit(agent.Event{Kind: agent.EventPart, SessionID: sess, Part: &agent.Part{
			ID: id + ":user", SessionID: sess, MessageID: id, Kind: agent.KindText, Done: true, Raw: raw,
			Text: promptText(l.Message.Content, blocks), Start: lineTime(l), End: lineTime(l)}})
	}
}

// promptText is a user line's text: a plain string, or its text blocks.
func promptText(content json.RawMessage, blocks []block) string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s
	}
	var b strings.Builder
	for _, bl := range blocks {
		if bl.Type == "text" {
			b.WriteString(bl.Text)
		}
	}
	return b.String()
}

// lineTime is when Claude Code wrote a line (assistant and user lines
// carry "timestamp"); zero when absent.
func lineTime(l line) time.Time {
	t, err := time.Parse(time.RFC3339Nano, l.Timestamp)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

// editedFile is the file an editing tool call names (Write, Edit and
// MultiEdit take "file_path", NotebookEdit "notebook_path").
func editedFile(tool string, input json.RawMessage) string {
	switch tool {
	case "Write", "Edit", "MultiEdit", "NotebookEdit":
	default:
		return ""
	}
	var in struct {
		FilePath     string `json:"file_path"`
		NotebookPath string `json:"notebook_path"`
	}
	_ = json.Unmarshal(input, &in)
	if in.FilePath != "" {
		return in.FilePath
	}
	return in.NotebookPath
}

// action reads the arguments of Claude Code's built-in tools (edit,
// write, command, sub-agent, read, search, todo) and traj's run_tests
// (nil for any other tool).
func action(tool string, input json.RawMessage) *agent.Action {
	type edit struct {
		OldString  string `json:"old_string"`
		NewString  string `json:"new_string"`
		ReplaceAll bool   `json:"replace_all"`
	}
	var in struct {
		FilePath string `json:"file_path"`
		edit
		Edits       []edit `json:"edits"`
		Content     string `json:"content"`
		Command     string `json:"command"`
		Description string `json:"description"`
		Prompt      string `json:"prompt"`
		Path        string `json:"path"`
		Pattern     string `json:"pattern"`
		Query       string `json:"query"`
		TestPath    string `json:"test_path"`
		Notebook    string `json:"notebook_path"`
	}
	switch tool {
	case "Edit", "MultiEdit", "Write", "Bash", "Agent", "Task", "Read", "NotebookEdit", "LS", "Glob", "Grep", "WebSearch",
		"TodoWrite", runTestsTool:
		if json.Unmarshal(input, &in) != nil {
			return nil
		}
	default:
		return nil
	}
	switch tool {
	case "Read":
		return &agent.Action{Kind: agent.ActionRead, Path: in.FilePath}
	case "LS":
		return &agent.Action{Kind: agent.ActionRead, Path: in.Path}
	case "NotebookEdit":
		return &agent.Action{Kind: agent.ActionEdit, Path: in.Notebook}
	case "Glob", "Grep":
		return &agent.Action{Kind: agent.ActionSearch, Pattern: in.Pattern, Path: in.Path}
	case "WebSearch":
		return &agent.Action{Kind: agent.ActionSearch, Pattern: in.Query}
	case "TodoWrite":
		return &agent.Action{Kind: agent.ActionTodo}
	case runTestsTool:
		return &agent.Action{Kind: agent.ActionTests, Path: in.TestPath}
	case "Edit", "MultiEdit":
		a := &agent.Action{Kind: agent.ActionEdit, Path: in.FilePath}
		if tool == "Edit" {
			in.Edits = []edit{in.edit}
		}
		for _, e := range in.Edits {
			a.Edits = append(a.Edits, agent.Edit{Old: e.OldString, New: e.NewString, All: e.ReplaceAll})
		}
		return a
	case "Write":
		return &agent.Action{Kind: agent.ActionWrite, Path: in.FilePath, Content: in.Content}
	case "Bash":
		return &agent.Action{Kind: agent.ActionCommand, Command: in.Command, Description: in.Description}
	}
	return &agent.Action{Kind: agent.ActionTask, Description: in.Description, Prompt: in.Prompt}
}

// runTestsTool is traj's run_tests as Claude Code names an MCP tool
// (mcp__SERVER__TOOL; the server is "tests").
const runTestsTool = "mcp__tests__run_tests"

// exitCode is a Bash result's exit status: Claude Code answers a command
// that exited non-zero as an error whose text opens "Exit code N" (read
// in the pinned binary: the shell error's message is "Exit code
// ${code}", then stderr and stdout), and one that exited 0 as a plain
// result; any other error says no code (nil).
func exitCode(isError bool, out string) *int {
	if !isError {
		zero := 0
		return &zero
	}
	rest, ok := strings.CutPrefix(out, "Exit code ")
	if !ok {
		return nil
	}
	end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
	if end < 0 {
		end = len(rest)
	}
	n, err := strconv.Atoi(rest[:end])
	if err != nil {
		return nil
	}
	return &n
}

// resultText flattens a tool_result's content (a string or text blocks).
func resultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []block
	if json.Unmarshal(raw, &blocks) != nil {
		return string(raw)
	}
	var b strings.Builder
	for _, bl := range blocks {
		b.WriteString(bl.Text)
	}
	return b.String()
}

// result closes the turn: the totals over every model the turn used,
// minus what the per-call usage already reported, go out with the result
// line as an uncounted part; the root's last message is final.
func (t *Translator) result(l line, raw []byte) {
	t.sawResult = true
	var cum agent.Usage
	for _, m := range l.ModelUsage {
		cum.Add(agent.Usage{Input: m.InputTokens, Output: m.OutputTokens, CacheRead: m.CacheReadInputTokens,
			CacheWrite: m.CacheCreationInputTokens, Cost: m.CostUSD})
	}
	if l.TotalCostUSD != nil {
		cum.Cost = *l.TotalCostUSD
	}
	prev, seen := t.acct.Cum, t.acct.Seen
	rest := agent.Usage{
		Input:      max(0, cum.Input-prev.Input-seen.Input),
		Output:     max(0, cum.Output-prev.Output-seen.Output),
		CacheRead:  max(0, cum.CacheRead-prev.CacheRead-seen.CacheRead),
		CacheWrite: max(0, cum.CacheWrite-prev.CacheWrite-seen.CacheWrite),
	}
	if t.price != nil {
		rest.Cost = t.price.Cost(rest)
	} else {
		rest.Cost = max(0, cum.Cost-prev.Cost) // Claude Code's own prices, for the whole turn
	}
	t.acct.Cum, t.acct.Seen = cum, agent.Usage{}
	if t.saved != nil {
		t.saved()
	}
	msg := t.lastMsg[t.root]
	if msg == "" {
		msg = l.UUID
		t.announce(t.root, msg, agent.RoleAssistant, raw)
	}
	t.emit(agent.Event{Kind: agent.EventPart, SessionID: t.root, Part: &agent.Part{
		ID: "result:" + l.UUID, SessionID: t.root, MessageID: msg, Kind: "result", Done: true, Usage: &rest, Raw: raw}})
	if l.IsError {
		t.emit(agent.Event{Kind: agent.EventError, SessionID: t.root, Error: &agent.Error{
			Message: "claude-code: " + l.Subtype + ": " + string(l.Result), Raw: raw}})
	}
	t.emit(agent.Event{Kind: agent.EventMessage, SessionID: t.root, Message: &agent.Message{
		ID: msg, SessionID: t.root, Role: agent.RoleAssistant, Final: true, Raw: t.messages[msg]}})
}

// End runs after the process exited: tool calls that never got a result
// (the turn was aborted) are sent as they are, not done.
func (t *Translator) End() bool {
	for _, id := range t.order {
		if pt, ok := t.pending[id]; ok {
			p := pt.part
			t.emit(agent.Event{Kind: agent.EventPart, SessionID: p.SessionID, Part: &p})
		}
	}
	t.pending = map[string]*pendingTool{}
	return t.sawResult
}
