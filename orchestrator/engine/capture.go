package engine

import (
	"encoding/json"
	"slices"
	"strconv"

	"github.com/trajlab/traj/sandbox/agent"
)

// pending is a server part not yet written to the trace: an uncounted part
// waiting for the next counted one, a part still in progress, or a part
// whose session or message is not known yet.
type pending struct {
	seq  int
	part agent.Part
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

	msgs        map[string]agent.Message
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
	onToolStart func(*agent.Part)
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
		msgs:        map[string]agent.Message{},
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

// handle applies one event.
func (c *capture) handle(ev agent.Event) {
	switch {
	case ev.Kind == agent.EventSession && ev.Session != nil:
		c.session(*ev.Session)
	case ev.Kind == agent.EventMessage && ev.Message != nil:
		c.message(*ev.Message)
	case ev.Kind == agent.EventPart && ev.Part != nil:
		c.part(*ev.Part)
	}
}

func (c *capture) session(s agent.Session) {
	if s.ID == "" {
		return
	}
	switch {
	case c.family[s.ID]:
		if _, unwritten := c.sessionRaw[s.ID]; unwritten {
			c.sessionRaw[s.ID] = s.Raw
		}
		return
	case s.ID == c.root || c.family[s.ParentID]:
		c.join(s.ID, s.Raw)
	default:
		c.orphans[s.ID] = orphan{parent: s.ParentID, raw: s.Raw}
		return
	}
	c.reclassify(func(p *pending) bool { return c.family[p.part.SessionID] })
}

func (c *capture) message(m agent.Message) {
	if m.ID == "" || c.msgRecorded[m.ID] {
		return
	}
	_, known := c.msgs[m.ID]
	c.msgs[m.ID] = m
	if !known {
		c.newMsgs = append(c.newMsgs, m.ID)
	}
	c.msgRaw[m.ID] = m.Raw
	if !known {
		c.reclassify(func(p *pending) bool { return p.part.MessageID == m.ID })
	}
}

func (c *capture) part(part agent.Part) {
	if part.ID == "" {
		// Not a part we can key: keep it as an uncounted part anyway.
		c.seq++
		part = agent.Part{ID: "\x00anon" + strconv.Itoa(c.seq), Kind: "unknown", Raw: part.Raw}
	}
	if c.recorded[part.ID] {
		c.lateUpdates++
		return
	}
	p := c.open[part.ID]
	if p == nil {
		c.seq++
		p = &pending{seq: c.seq}
		c.open[part.ID] = p
	}
	p.part = part
	if !p.started && part.Tool != nil && part.Tool.Status == agent.ToolRunning {
		p.started = true
		if c.onToolStart != nil {
			c.onToolStart(&p.part)
		}
	}
	c.classify(p)
}

// classify queues p as ready when it is a complete, countable assistant part
// of the family.
func (c *capture) classify(p *pending) {
	if c.frozen || !p.part.Kind.Counted() || !p.part.Done || !c.family[p.part.SessionID] {
		return
	}
	m, ok := c.msgs[p.part.MessageID]
	if !ok || m.Role != agent.RoleAssistant {
		return
	}
	if slices.Contains(c.ready, p.part.ID) {
		return
	}
	c.ready = append(c.ready, p.part.ID)
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

// toolBeside reports whether a tool part of p's model response is still
// open (running, or done and not yet recorded). A harness runs a
// response's tool calls side by side, so what such a part wrote may
// already be in the workspace while p is recorded: p's checkpoint is
// deferred to the last of them, so that which checkpoint holds a change
// does not depend on which tool finished first.
func (c *capture) toolBeside(p *pending) bool {
	if p.part.MessageID == "" {
		return false
	}
	for _, q := range c.open {
		if q != p && q.part.MessageID == p.part.MessageID && q.part.Kind == agent.KindTool {
			return true
		}
	}
	return false
}

// settledOther reports whether p is an uncounted part that will not become
// countable: a non-assistant part or an uncountable type, in the family.
func (c *capture) settledOther(p *pending) bool {
	if !c.family[p.part.SessionID] {
		return false
	}
	m, ok := c.msgs[p.part.MessageID]
	if !ok {
		return false
	}
	return m.Role != agent.RoleAssistant || !p.part.Kind.Counted()
}

// flushed is what a counted part carries besides its own content.
type flushed struct {
	others     []json.RawMessage
	sessions   []json.RawMessage
	messages   []json.RawMessage
	sessionIDs []string
	usage      agent.Usage
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
		f.others = append(f.others, p.part.Raw)
		if u := p.part.Usage; u != nil {
			f.usage.Add(*u)
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
func (c *capture) trailing() ([]json.RawMessage, agent.Usage) {
	all := make([]*pending, 0, len(c.open))
	for id, p := range c.open {
		all = append(all, p)
		delete(c.open, id)
		c.recorded[id] = true
	}
	c.ready = c.ready[:0]
	slices.SortFunc(all, func(a, b *pending) int { return a.seq - b.seq })
	var (
		out   []json.RawMessage
		usage agent.Usage
	)
	for _, p := range all {
		out = append(out, p.part.Raw)
		if u := p.part.Usage; u != nil {
			usage.Add(*u)
		}
	}
	out = append(out, c.takeSessions()...)
	out = append(out, c.takeMessages(true)...)
	return out, usage
}
