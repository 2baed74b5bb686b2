package wire

import (
	"encoding/json"
	"io"
	"log/slog"
	"strings"

	"github.com/trajlab/traj/sandbox/agent"
)

// HarnessName is the trace's agent field for Codex.
const HarnessName = "codex"

// Reader reads the objects a Codex trajectory recorded: `codex exec
// --json` lines, verbatim (a tool part is the JSON array of its
// item.started and item.completed lines). It replays them through the
// translator the recorder ran live, so a reader sees the part the
// recorder counted, one owner per rule. It reads Codex 0.169's lines.
//
// turn.completed's usage is cumulative over the thread; the recorder
// counted each turn's share when it recorded the part, so the usage a
// reader wants is the trace's (tokens on parts), and Part leaves it out.
type Reader struct {
	// Version is the recorded Codex version.
	Version string
}

var _ agent.Reader = Reader{}

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// Part implements agent.Reader. A part's id is the turn's message id,
// ":" and Codex's item id.
func (Reader) Part(id string, kind agent.Kind, raw json.RawMessage) (agent.Part, bool) {
	msg := ""
	if i := strings.LastIndexByte(id, ':'); i > 0 {
		msg = id[:i]
	}
	p, ok := agent.ReplayPart(id, kind, raw, nil, func(emit func(agent.Event)) func(json.RawMessage) {
		t := &Translator{msgID: msg, st: &State{}, save: func() error { return nil }, log: discard,
			pending: map[string]json.RawMessage{}, started: true, emit: emit}
		return func(l json.RawMessage) { t.Line(l) }
	})
	if ok {
		p.Usage = nil
	}
	return p, ok
}

// Session implements agent.Reader. Codex's thread.started names Codex's
// thread, not the session id traj recorded (the adapter's own, mapped to
// the thread), and Codex runs no sub-agent sessions: ok is always false.
func (Reader) Session(raw json.RawMessage) (agent.Session, bool) {
	return agent.Session{Raw: raw}, false
}

// Message implements agent.Reader: a turn is one assistant message,
// recorded as the turn's first line; the line says nothing of the model
// call (the model gateway's record does).
func (Reader) Message(raw json.RawMessage) (agent.Message, bool) {
	var e event
	if json.Unmarshal(raw, &e) != nil || e.Type == "" {
		return agent.Message{Raw: raw}, false
	}
	return agent.Message{Role: agent.RoleAssistant, Raw: raw}, true
}
