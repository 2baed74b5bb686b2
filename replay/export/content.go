package export

import (
	"encoding/json"
	"time"

	"github.com/trajlab/traj/sandbox/agent"
	"github.com/trajlab/traj/sandbox/harness/recorded"
	"github.com/trajlab/traj/trace"
)

// partView is what the exports read of a part: its harness-neutral
// content, read from the part's recorded object by the harness's own
// reader (sandbox/harness/recorded.Reader for the trace's "agent"), over the
// trace's own fields. The exports never decode a harness's objects.
type partView struct {
	Type       string
	Text       string // text and reasoning parts
	Tool       string
	CallID     string
	Status     string          // tool state
	Input      json.RawMessage // tool arguments, a JSON object
	Output     string
	Error      string
	Title      string
	Subsession string // a sub-agent tool's session
	Start, End time.Time
	Files      []string // files the part says it changed
	// Action is what the tool call does as its harness's adapter reads it
	// (nil: a tool the adapter does not know).
	Action *agent.Action
	// read says the harness's reader read the content.
	read bool
}

// viewPart reads p's content with r. A part without content (a trace
// from the original recorder) or one r cannot read gives a view with only
// the trace's own fields.
func viewPart(p *trace.Part, r agent.Reader) partView {
	v := partView{Type: p.PartType, Tool: p.Tool}
	if len(p.Content) == 0 {
		return v
	}
	np, ok := r.Part(p.PartID, agent.Kind(p.PartType), p.Content)
	if !ok {
		return v
	}
	v.read = true
	if np.Kind != "" {
		v.Type = string(np.Kind)
	}
	v.Text, v.Files, v.Title, v.Start, v.End = np.Text, np.Files, np.Title, np.Start, np.End
	if t := np.Tool; t != nil {
		if t.Name != "" {
			v.Tool = t.Name
		}
		v.CallID, v.Status, v.Input, v.Output, v.Error, v.Subsession = t.CallID, string(t.Status), t.Input, t.Output, t.Error, t.ChildSessionID
		v.Action = t.Action
	}
	return v
}

// usage is one model call's usage found in a raw part (OpenCode's
// "step-finish" part carries the call's tokens and cost).
type usage struct {
	MessageID string
	Tokens    trace.Tokens
	Cost      float64
}

// modelCallUsage returns the usage of one model call that a raw uncounted
// part reports, if r reads any.
func modelCallUsage(raw json.RawMessage, r agent.Reader) (usage, bool) {
	p, ok := r.Part("", "", raw)
	if !ok || p.Usage == nil {
		return usage{}, false
	}
	return usage{MessageID: p.MessageID, Tokens: tokens(*p.Usage), Cost: p.Usage.Cost}, true
}

func tokens(u agent.Usage) trace.Tokens {
	return trace.Tokens{Input: u.Input, Output: u.Output, Reasoning: u.Reasoning, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite}
}

// messageModel returns the id of a raw message and the model its call
// used, as r reads them.
func messageModel(raw json.RawMessage, r agent.Reader) (id, model string) {
	m, ok := r.Message(raw)
	if !ok || m.Call == nil {
		return m.ID, ""
	}
	return m.ID, m.Call.Model
}

// sessionMap knows each session's parent, from the session objects the
// trace records, and which harness recorded them.
type sessionMap struct {
	root    string
	parents map[string]string
	// reader reads the trace's harness objects; name and version are the
	// trace's "agent", parsed.
	reader        agent.Reader
	name, version string
}

// newSessionMap reads OpenCode's objects until the trace names its agent
// (the original recorder drove OpenCode and wrote no agent).
func newSessionMap() sessionMap {
	m := sessionMap{}
	m.setAgent("")
	return m
}

// setAgent takes the trace's "agent" field.
func (m *sessionMap) setAgent(field string) {
	id := trace.ParseAgent(field)
	m.name = id.Name
	if id.Version != "" {
		m.version = id.Version
	}
	if m.name == "" {
		m.name = recorded.Default
	}
	m.reader = recorded.Reader(field)
}

// addSession takes a session object the reader read.
func (m *sessionMap) addSession(s agent.Session) {
	if m.parents == nil {
		m.parents = make(map[string]string)
	}
	m.parents[s.ID] = s.ParentID
	if m.version == "" {
		m.version = s.Version // the original recorder wrote no version
	}
}

func (m *sessionMap) parent(id string) string {
	if p, ok := m.parents[id]; ok && p != "" {
		return p
	}
	return m.root
}

func (m *sessionMap) subagents() int {
	n := 0
	for id, p := range m.parents {
		if id != m.root && p != "" {
			n++
		}
	}
	return n
}
