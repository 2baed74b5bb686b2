package orchestrator

import (
	"encoding/json"
	"slices"
	"strconv"

	"github.com/trajlab/traj/trace"
)

// partInfo is the little the loop reads from a server part; the part itself
// is kept verbatim.
type partInfo struct {
	ID        string `json:"id"`
	SessionID string `json:"sessionID"`
	MessageID string `json:"messageID"`
	Type      string `json:"type"`
	Tool      string `json:"tool"`
	CallID    string `json:"callID"`
	Time      *struct {
		End json.Number `json:"end"`
	} `json:"time"`
	State *struct {
		Status   string          `json:"status"`
		Input    json.RawMessage `json:"input"`
		Output   json.RawMessage `json:"output"`
		Error    json.RawMessage `json:"error"`
		Metadata json.RawMessage `json:"metadata"`
	} `json:"state"`
	// Tokens and Cost are set on "step-finish" parts.
	Tokens *struct {
		Input     int64 `json:"input"`
		Output    int64 `json:"output"`
		Reasoning int64 `json:"reasoning"`
		Cache     struct {
			Read  int64 `json:"read"`
			Write int64 `json:"write"`
		} `json:"cache"`
	} `json:"tokens"`
	Cost *float64 `json:"cost"`
}

// countable reports whether parts of this type are counted once completed.
func countable(typ string) bool {
	switch typ {
	case "text", "reasoning", "tool", "patch":
		return true
	}
	return false
}

// complete reports whether a countable part is finished.
func (p *partInfo) complete() bool {
	switch p.Type {
	case "text", "reasoning":
		return p.Time != nil && p.Time.End != "" && p.Time.End != "0"
	case "tool":
		return p.State != nil && (p.State.Status == "completed" || p.State.Status == "error")
	case "patch":
		return true
	}
	return false
}

func (p *partInfo) tokens() (trace.Tokens, float64, bool) {
	if p.Type != "step-finish" || (p.Tokens == nil && p.Cost == nil) {
		return trace.Tokens{}, 0, false
	}
	var t trace.Tokens
	if p.Tokens != nil {
		t = trace.Tokens{Input: p.Tokens.Input, Output: p.Tokens.Output, Reasoning: p.Tokens.Reasoning,
			CacheRead: p.Tokens.Cache.Read, CacheWrite: p.Tokens.Cache.Write}
	}
	var c float64
	if p.Cost != nil {
		c = *p.Cost
	}
	return t, c, true
}

type sessionInfo struct {
	ID       string `json:"id"`
	ParentID string `json:"parentID"`
}

type messageInfo struct {
	ID        string `json:"id"`
	SessionID string `json:"sessionID"`
	Role      string `json:"role"`
}

// pending is a server part not yet written to the trace: an uncounted part
// waiting for the next counted one, a part still in progress, or a part
// whose session or message is not known yet.
type pending struct {
	seq  int
	raw  json.RawMessage
	info partInfo
	// started is set once a tool part was seen running.
	started bool
}

// capture turns the server's event stream into counted parts. It keeps
// each part and message until it is written to the trace exactly once, and
// the session family (the root and every descendant, found via parentID).
// It holds only what is not yet recorded plus the ids already recorded, so
// its cost per part does not grow with the trace.
type capture struct {
	root string

	family      map[string]bool
	familyOrder []string
	// orphans are sessions whose parent is not (yet) in the family.
	orphans map[string]orphan
	// newSessions are family session infos not yet written, in join order.
	newSessions []string
	sessionRaw  map[string]json.RawMessage

	msgs        map[string]messageInfo
	msgRecorded map[string]bool
	newMsgs     []string
	msgRaw      map[string]json.RawMessage

	recorded map[string]bool
	open     map[string]*pending
	seq      int
	// ready are ids of open parts that are complete and countable, in
	// completion order.
	ready []string
	// frozen stops counting (after the budget or an abort): completed parts
	// stay open and end up in the turn's trailing parts.
	frozen bool

	// lateUpdates counts updates of parts already written (ignored).
	lateUpdates int
	// onToolStart, when set, is told when a tool part starts running.
	onToolStart func(*partInfo)
}

type orphan struct {
	parent string
	raw    json.RawMessage
}

func newCapture(root string) *capture {
	c := &capture{
		root:        root,
		family:      map[string]bool{},
		orphans:     map[string]orphan{},
		sessionRaw:  map[string]json.RawMessage{},
		msgs:        map[string]messageInfo{},
		msgRecorded: map[string]bool{},
		msgRaw:      map[string]json.RawMessage{},
		recorded:    map[string]bool{},
		open:        map[string]*pending{},
	}
	c.join(root, nil)
	return c
}

// join adds id to the family and, recursively, orphans waiting for it.
func (c *capture) join(id string, raw json.RawMessage) {
	if c.family[id] {
		if raw != nil && c.sessionRaw[id] != nil {
			c.sessionRaw[id] = raw
		}
		return
	}
	c.family[id] = true
	c.familyOrder = append(c.familyOrder, id)
	c.newSessions = append(c.newSessions, id)
	c.sessionRaw[id] = raw
	for oid, o := range c.orphans {
		if o.parent == id {
			delete(c.orphans, oid)
			c.join(oid, o.raw)
		}
	}
}

// handle applies one event. It returns the root session's error, if any.
func (c *capture) handle(ev Event) {
	switch ev.Kind {
	case EventSession:
		c.session(ev.Data)
	case EventMessage:
		c.message(ev.Data)
	case EventPart:
		c.part(ev.Data)
	}
}

func (c *capture) session(raw json.RawMessage) {
	var s sessionInfo
	if json.Unmarshal(raw, &s) != nil || s.ID == "" {
		return
	}
	switch {
	case c.family[s.ID]:
		if _, unwritten := c.sessionRaw[s.ID]; unwritten {
			c.sessionRaw[s.ID] = raw
		}
		return
	case s.ID == c.root || c.family[s.ParentID]:
		c.join(s.ID, raw)
	default:
		c.orphans[s.ID] = orphan{parent: s.ParentID, raw: raw}
		return
	}
	c.reclassify(func(p *pending) bool { return c.family[p.info.SessionID] })
}

func (c *capture) message(raw json.RawMessage) {
	var m messageInfo
	if json.Unmarshal(raw, &m) != nil || m.ID == "" {
		return
	}
	if c.msgRecorded[m.ID] {
		return
	}
	_, known := c.msgs[m.ID]
	c.msgs[m.ID] = m
	if !known {
		c.newMsgs = append(c.newMsgs, m.ID)
	}
	c.msgRaw[m.ID] = raw
	if !known {
		c.reclassify(func(p *pending) bool { return p.info.MessageID == m.ID })
	}
}

func (c *capture) part(raw json.RawMessage) {
	var info partInfo
	if err := json.Unmarshal(raw, &info); err != nil || info.ID == "" {
		// Not a part we can key: keep it as an uncounted part anyway.
		c.seq++
		info = partInfo{ID: "\x00anon" + strconv.Itoa(c.seq), Type: "unknown"}
	}
	if c.recorded[info.ID] {
		c.lateUpdates++
		return
	}
	p := c.open[info.ID]
	if p == nil {
		c.seq++
		p = &pending{seq: c.seq}
		c.open[info.ID] = p
	}
	p.raw, p.info = raw, info
	if !p.started && info.Type == "tool" && info.State != nil && info.State.Status == "running" {
		p.started = true
		if c.onToolStart != nil {
			c.onToolStart(&p.info)
		}
	}
	c.classify(p)
}

// classify queues p as ready when it is a complete, countable assistant part
// of the family.
func (c *capture) classify(p *pending) {
	if c.frozen || !countable(p.info.Type) || !p.info.complete() || !c.family[p.info.SessionID] {
		return
	}
	m, ok := c.msgs[p.info.MessageID]
	if !ok || m.Role != "assistant" {
		return
	}
	if slices.Contains(c.ready, p.info.ID) {
		return
	}
	c.ready = append(c.ready, p.info.ID)
}

func (c *capture) reclassify(match func(*pending) bool) {
	var hits []*pending
	for _, p := range c.open {
		if match(p) {
			hits = append(hits, p)
		}
	}
	slices.SortFunc(hits, func(a, b *pending) int { return a.seq - b.seq })
	for _, p := range hits {
		c.classify(p)
	}
}

// next pops the next ready part, or nil.
func (c *capture) next() *pending {
	for len(c.ready) > 0 {
		id := c.ready[0]
		c.ready = c.ready[1:]
		if p, ok := c.open[id]; ok {
			delete(c.open, id)
			c.recorded[id] = true
			return p
		}
	}
	return nil
}

// settledOther reports whether p is an uncounted part that will not become
// countable: a non-assistant part or an uncountable type, in the family.
func (c *capture) settledOther(p *pending) bool {
	if !c.family[p.info.SessionID] {
		return false
	}
	m, ok := c.msgs[p.info.MessageID]
	if !ok {
		return false
	}
	return m.Role != "assistant" || !countable(p.info.Type)
}

// flushed is what a counted part carries besides its own content.
type flushed struct {
	others     []json.RawMessage
	sessions   []json.RawMessage
	messages   []json.RawMessage
	sessionIDs []string
	tokens     trace.Tokens
	cost       float64
	hasUsage   bool
}

// flush takes the uncounted parts, new sessions and new messages that go
// with the counted part being written.
func (c *capture) flush() flushed {
	var f flushed
	var others []*pending
	for id, p := range c.open {
		if c.settledOther(p) {
			others = append(others, p)
			delete(c.open, id)
			c.recorded[id] = true
		}
	}
	slices.SortFunc(others, func(a, b *pending) int { return a.seq - b.seq })
	for _, p := range others {
		f.others = append(f.others, p.raw)
		if t, cost, ok := p.info.tokens(); ok {
			f.tokens.Add(t)
			f.cost += cost
			f.hasUsage = true
		}
	}
	f.sessions = c.takeSessions()
	f.messages = c.takeMessages(false)
	f.sessionIDs = slices.Clone(c.familyOrder)
	return f
}

func (c *capture) takeSessions() []json.RawMessage {
	var out []json.RawMessage
	for _, id := range c.newSessions {
		if raw := c.sessionRaw[id]; raw != nil {
			out = append(out, raw)
		}
		delete(c.sessionRaw, id)
	}
	c.newSessions = c.newSessions[:0]
	return out
}

// takeMessages returns the unwritten message infos of the family (all of
// them when any is true) in the order first seen.
func (c *capture) takeMessages(any bool) []json.RawMessage {
	var out []json.RawMessage
	keep := c.newMsgs[:0]
	for _, id := range c.newMsgs {
		m := c.msgs[id]
		if !any && !c.family[m.SessionID] {
			keep = append(keep, id)
			continue
		}
		out = append(out, c.msgRaw[id])
		delete(c.msgRaw, id)
		c.msgRecorded[id] = true
	}
	c.newMsgs = keep
	return out
}

// trailing takes every part not yet written, in the order first seen, with
// the usage reported in them, followed by the session and message infos no
// counted part carried (a message without counted parts, the prompt of a
// turn without any). Used at the end of a turn, when the turn's messages are
// settled.
func (c *capture) trailing() ([]json.RawMessage, trace.Tokens, float64) {
	all := make([]*pending, 0, len(c.open))
	for id, p := range c.open {
		all = append(all, p)
		delete(c.open, id)
		c.recorded[id] = true
	}
	c.ready = c.ready[:0]
	slices.SortFunc(all, func(a, b *pending) int { return a.seq - b.seq })
	var (
		out  []json.RawMessage
		tok  trace.Tokens
		cost float64
	)
	for _, p := range all {
		out = append(out, p.raw)
		if t, cst, ok := p.info.tokens(); ok {
			tok.Add(t)
			cost += cst
		}
	}
	out = append(out, c.takeSessions()...)
	out = append(out, c.takeMessages(true)...)
	return out, tok, cost
}
