package agenttest

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/trajlab/traj/orchestrator"
)

// Builder makes OpenCode-shaped events with unique, ordered ids and a
// deterministic clock.
type Builder struct {
	n   int
	now int64
}

// NewBuilder returns a builder whose clock starts at a fixed time.
func NewBuilder() *Builder { return &Builder{now: 1_790_000_000_000} }

func (b *Builder) id(prefix string) string {
	b.n++
	return fmt.Sprintf("%s_%06d", prefix, b.n)
}

func (b *Builder) tick() int64 {
	b.now += 7
	return b.now
}

func mustJSON(v any) json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return raw
}

// SessionID returns a new session id.
func (b *Builder) SessionID() string { return b.id("ses") }

func (b *Builder) sessionInfo(id, parent string) json.RawMessage {
	info := map[string]any{"id": id, "title": "session " + id, "version": "test",
		"time": map[string]any{"created": b.tick(), "updated": b.now}}
	if parent != "" {
		info["parentID"] = parent
	}
	return mustJSON(info)
}

// Session is a session.updated event (parent "" for a root session).
func (b *Builder) Session(id, parent string) Item {
	return Item{Event: orchestrator.Event{Kind: orchestrator.EventSession, SessionID: id, Data: b.sessionInfo(id, parent)}}
}

// Message is a message.updated event for a new message of role in session.
func (b *Builder) Message(session, role string) (string, Item) {
	id := b.id("msg")
	info := map[string]any{"id": id, "sessionID": session, "role": role,
		"time": map[string]any{"created": b.tick()}}
	if role == "assistant" {
		info["modelID"], info["providerID"] = "test-model", "test"
	}
	return id, Item{Event: orchestrator.Event{Kind: orchestrator.EventMessage, SessionID: session, Data: mustJSON(info)}}
}

// Finish is the message.updated event that completes an assistant
// message, its finish reason "stop" (the model is done) or "tool-calls".
func (b *Builder) Finish(session, msg, finish string) Item {
	info := map[string]any{"id": msg, "sessionID": session, "role": "assistant", "finish": finish,
		"time": map[string]any{"created": b.now, "completed": b.tick()}, "modelID": "test-model", "providerID": "test"}
	return Item{Event: orchestrator.Event{Kind: orchestrator.EventMessage, SessionID: session, Data: mustJSON(info)}}
}

// Part is a message.part.updated event for a new part with extra fields.
func (b *Builder) Part(session, msg, typ string, fields map[string]any) Item {
	return b.partWithID(b.id("prt"), session, msg, typ, fields)
}

func (b *Builder) partWithID(id, session, msg, typ string, fields map[string]any) Item {
	p := map[string]any{"id": id, "sessionID": session, "messageID": msg, "type": typ}
	maps.Copy(p, fields)
	return Item{Event: orchestrator.Event{Kind: orchestrator.EventPart, SessionID: session, Data: mustJSON(p)}}
}

// Text is a text part streamed in two updates, the second completing it.
func (b *Builder) Text(session, msg, text string) []Item {
	return b.timed("text", session, msg, text)
}

// Reasoning is a reasoning part streamed in two updates.
func (b *Builder) Reasoning(session, msg, text string) []Item {
	return b.timed("reasoning", session, msg, text)
}

func (b *Builder) timed(typ, session, msg, text string) []Item {
	id := b.id("prt")
	start := b.tick()
	half := text[:len(text)/2]
	return []Item{
		b.partWithID(id, session, msg, typ, map[string]any{"text": half, "time": map[string]any{"start": start}}),
		b.partWithID(id, session, msg, typ, map[string]any{"text": text, "time": map[string]any{"start": start, "end": b.tick()}}),
	}
}

// Tool is a tool part going pending → running → completed with output.
func (b *Builder) Tool(session, msg, tool string, input any, output string) []Item {
	return b.tool(session, msg, tool, input, map[string]any{"status": "completed", "output": output, "title": tool})
}

// ToolError is a tool part ending in the error state.
func (b *Builder) ToolError(session, msg, tool string, input any, errText string) []Item {
	return b.tool(session, msg, tool, input, map[string]any{"status": "error", "error": errText})
}

func (b *Builder) tool(session, msg, tool string, input any, final map[string]any) []Item {
	id, call := b.id("prt"), b.id("call")
	start := b.tick()
	final["input"] = input
	final["time"] = map[string]any{"start": start, "end": b.tick()}
	return []Item{
		b.partWithID(id, session, msg, "tool", map[string]any{"tool": tool, "callID": call,
			"state": map[string]any{"status": "pending", "input": map[string]any{}}}),
		b.partWithID(id, session, msg, "tool", map[string]any{"tool": tool, "callID": call,
			"state": map[string]any{"status": "running", "input": input, "time": map[string]any{"start": start}}}),
		b.partWithID(id, session, msg, "tool", map[string]any{"tool": tool, "callID": call, "state": final}),
	}
}

// ToolRunning is a tool part that has started and not finished.
func (b *Builder) ToolRunning(session, msg, tool string, input any) Item {
	return b.Part(session, msg, "tool", map[string]any{"tool": tool, "callID": b.id("call"),
		"state": map[string]any{"status": "running", "input": input, "time": map[string]any{"start": b.tick()}}})
}

// RunTests is a completed tests_run_tests call answering result (the
// run_tests tool's JSON answer).
func (b *Builder) RunTests(session, msg, path string, passed, failed int) []Item {
	answer := map[string]any{"path": path, "timestamp": "2026-11-21T10:00:00.000000Z", "duration_ms": 12,
		"status_code": 200, "error": nil,
		"result": map[string]any{"path": path, "passed": passed, "failed": failed, "total": passed + failed, "cases": []any{}}}
	return b.Tool(session, msg, "tests_run_tests", map[string]any{"test_path": path}, string(mustJSON(answer)))
}

// CallStart is OpenCode's "step-start" part, opening a model call (uncounted).
func (b *Builder) CallStart(session, msg string) Item {
	return b.Part(session, msg, "step-start", map[string]any{"snapshot": "0000"})
}

// CallFinish is OpenCode's "step-finish" part, closing a model call with its
// token usage and cost.
func (b *Builder) CallFinish(session, msg string, input, output int64, cost float64) Item {
	return b.Part(session, msg, "step-finish", map[string]any{"reason": "stop", "cost": cost,
		"tokens": map[string]any{"input": input, "output": output, "reasoning": 0,
			"cache": map[string]any{"read": 0, "write": 0}}})
}

// Status is a session status event.
func (b *Builder) Status(session string, busy bool) Item {
	return Item{Event: orchestrator.Event{Kind: orchestrator.EventStatus, SessionID: session, Busy: busy}}
}

// Error is a session.error event.
func (b *Builder) Error(session, detail string) Item {
	return Item{Event: orchestrator.Event{Kind: orchestrator.EventError, SessionID: session, Detail: detail,
		Data: mustJSON(map[string]any{"name": "UnknownError", "data": map[string]any{"message": detail}})}}
}
