// Package harness names the harnesses traj drives and answers, for a
// recorded trajectory, which adapter reads its objects back.
package harness

import (
	"encoding/json"
	"strings"

	"github.com/trajlab/traj/sandbox/agent"
	"github.com/trajlab/traj/sandbox/claudecode"
	"github.com/trajlab/traj/sandbox/codex"
	"github.com/trajlab/traj/sandbox/opencode"
)

// Harness names, as --agent takes them and the trace's "agent" records
// them (name@version).
const (
	OpenCode   = "opencode"
	ClaudeCode = "claude-code"
	Codex      = "codex"
)

// Parse splits a trace's "agent" into the harness name and its version:
// "opencode@1.18.33" → ("opencode", "1.18.33"). The original recorder
// wrote no agent and drove OpenCode: "" → ("opencode", "").
func Parse(field string) (name, version string) {
	name, version, _ = strings.Cut(field, "@")
	if name == "" {
		name = OpenCode
	}
	return name, version
}

// Reader returns the reader of the objects a trace recorded, from its
// "agent" field. A harness traj does not know gets a reader that reads
// nothing: its parts keep their trace fields and raw objects only.
func Reader(field string) agent.Reader {
	name, version := Parse(field)
	switch name {
	case OpenCode:
		return opencode.Reader{Version: version}
	case ClaudeCode:
		return claudecode.Reader{Version: version}
	case Codex:
		return codex.Reader{Version: version}
	}
	return unknown{}
}

type unknown struct{}

func (unknown) Part(id string, kind agent.Kind, raw json.RawMessage) (agent.Part, bool) {
	return agent.Part{ID: id, Kind: kind, Raw: raw}, false
}

func (unknown) Session(raw json.RawMessage) (agent.Session, bool) {
	return agent.Session{Raw: raw}, false
}

func (unknown) Message(raw json.RawMessage) (agent.Message, bool) {
	return agent.Message{Raw: raw}, false
}
