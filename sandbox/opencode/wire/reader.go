package wire

import (
	"encoding/json"
	"time"

	"github.com/trajlab/traj/sandbox/agent"
)

// HarnessName is the trace's agent field for OpenCode.
const HarnessName = "opencode"

// Reader reads the objects an OpenCode trajectory recorded (parts,
// sessions, message infos) with the same Normalize methods the recorder
// used live, so a reader sees what the recorder saw. It reads OpenCode
// 1.18's shapes; traces of the original recorder (no version) have them
// too.
type Reader struct {
	// Version is the recorded OpenCode version ("" for the original
	// recorder's traces).
	Version string
}

var _ agent.Reader = Reader{}

// Part implements agent.Reader.
func (Reader) Part(id string, kind agent.Kind, raw json.RawMessage) (agent.Part, bool) {
	// Decoded once, by decodePart or else as the plain struct: Part's
	// UnmarshalJSON would check and decode raw a second time to keep a
	// copy of it, and raw is what the part keeps anyway (an export
	// decodes every part).
	type plain Part
	var p Part
	if !decodePart(raw, &p) {
		p = Part{}
		if json.Unmarshal(raw, (*plain)(&p)) != nil {
			return agent.Part{ID: id, Kind: kind, Raw: raw}, false
		}
	}
	if p.Type == "" {
		return agent.Part{ID: id, Kind: kind, Raw: raw}, false
	}
	p.Raw = raw
	out := p.Normalize()
	out.Raw = raw
	if out.ID == "" {
		out.ID = id
	}
	return out, true
}

// Session implements agent.Reader.
func (Reader) Session(raw json.RawMessage) (agent.Session, bool) {
	var s Session
	if json.Unmarshal(raw, &s) != nil || s.ID == "" {
		return agent.Session{Raw: raw}, false
	}
	return s.Normalize(), true
}

// Message implements agent.Reader.
func (Reader) Message(raw json.RawMessage) (agent.Message, bool) {
	var m MessageInfo
	if json.Unmarshal(raw, &m) != nil || m.ID == "" || m.Role == "" {
		return agent.Message{Raw: raw}, false
	}
	return m.Normalize(), true
}

// usage is t as the port counts it (a nil t counts nothing).
func (t *Tokens) usage() *agent.Usage {
	u := &agent.Usage{}
	if t != nil {
		u.Input, u.Output, u.Reasoning = int64(t.Input), int64(t.Output), int64(t.Reasoning)
		u.CacheRead, u.CacheWrite = int64(t.Cache.Read), int64(t.Cache.Write)
	}
	return u
}

// knownTool says whether action reads the tool: OpenCode's built-in ones
// (1.18) and traj's run_tests as OpenCode names an MCP tool
// ("<server>_<tool>").
func knownTool(name string) bool {
	switch name {
	case "edit", "write", "bash", "task", "read", "list", "glob", "grep", "todowrite", "todoread", "tests_run_tests":
		return true
	}
	return false
}

// action is what a tool knownTool names does (nil for any other tool), from
// its arguments.
func action(tool string, in toolInput) *agent.Action {
	switch tool {
	case "read":
		return &agent.Action{Kind: agent.ActionRead, Path: in.FilePath}
	case "list":
		return &agent.Action{Kind: agent.ActionRead, Path: in.Path}
	case "glob", "grep":
		return &agent.Action{Kind: agent.ActionSearch, Pattern: in.Pattern, Path: in.Path}
	case "todowrite", "todoread":
		return &agent.Action{Kind: agent.ActionTodo}
	case "tests_run_tests":
		return &agent.Action{Kind: agent.ActionTests, Path: in.TestPath}
	case "edit":
		return &agent.Action{Kind: agent.ActionEdit, Path: in.FilePath, Edits: []agent.Edit{{Old: in.OldString, New: in.NewString, All: in.ReplaceAll}}}
	case "write":
		return &agent.Action{Kind: agent.ActionWrite, Path: in.FilePath, Content: in.Content}
	case "bash":
		return &agent.Action{Kind: agent.ActionCommand, Command: in.Command, Description: in.Description}
	case "task":
		return &agent.Action{Kind: agent.ActionTask, Description: in.Description, Prompt: in.Prompt}
	}
	return nil
}

// editedFile is the file an editing tool call names (write and edit take
// "filePath"); it is read even from arguments encoding/json decodes with
// a type error in another key.
func editedFile(tool string, in toolInput) string {
	switch tool {
	case "write", "edit":
		return in.FilePath
	}
	return ""
}

func msTime(ms int64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

func msTimePtr(ms *int64) time.Time {
	if ms == nil {
		return time.Time{}
	}
	return msTime(*ms)
}
