package export

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/atomicfile"
)

// ATIF (Harbor's Agent Trajectory Interchange Format, RFC 0001 v1.7). The
// field names below ("steps", "step_id", …) are ATIF's and are kept
// verbatim; traj's own words are part and turn.

// ATIFVersion is the schema_version of the documents written.
const ATIFVersion = "ATIF-v1.7"

// ATIFName is the file each trajectory's ATIF document is written to, in
// a folder named after the trajectory.
const ATIFName = "trajectory.json"

// atifNotes explains the mapping inside every document.
const atifNotes = "Exported by traj (replay/export, schema " + SchemaVersion + "). Each turn's prompt is a user entry; " +
	"each model message (one model call) is one agent entry holding its text, reasoning, tool calls and their results; " +
	"the traj parts it was made of are in extra.traj.parts, verbatim. " +
	"Sub-agent sessions are embedded in subagent_trajectories and referenced from the tool call that started them. " +
	"final_metrics are the trajectory's totals (sub-agents included, trace session_end totals when present); " +
	"total_steps counts this document's entries."

type atifAgent struct {
	Name      string         `json:"name"`
	Version   string         `json:"version"`
	ModelName string         `json:"model_name,omitempty"`
	Extra     map[string]any `json:"extra,omitempty"`
}

// atifEntry is one element of ATIF's "steps" array. EntryID must stay the
// first field: spilled sub-agent entries are renumbered by rewriting their
// leading {"step_id":0,.
type atifEntry struct {
	EntryID          int              `json:"step_id"`
	Timestamp        string           `json:"timestamp,omitempty"`
	Source           string           `json:"source"`
	ModelName        string           `json:"model_name,omitempty"`
	Message          string           `json:"message"`
	ReasoningContent string           `json:"reasoning_content,omitempty"`
	ToolCalls        []atifToolCall   `json:"tool_calls,omitempty"`
	Observation      *atifObservation `json:"observation,omitempty"`
	Metrics          *atifMetrics     `json:"metrics,omitempty"`
	LLMCallCount     *int             `json:"llm_call_count,omitempty"`
	Extra            map[string]any   `json:"extra,omitempty"`

	// traj and parts are an agent entry's extra.traj and its parts,
	// already marshalled (marshalEntry puts them in Extra).
	traj  map[string]any
	parts [][]byte
}

// marshal is json.Marshal(ent), extra.traj included.
func (ent *atifEntry) marshal() ([]byte, error) {
	if ent.traj != nil {
		return marshalEntry(ent, ent.traj, ent.parts)
	}
	return json.Marshal(ent)
}

type atifToolCall struct {
	ToolCallID   string          `json:"tool_call_id"`
	FunctionName string          `json:"function_name"`
	Arguments    json.RawMessage `json:"arguments"`
	Extra        map[string]any  `json:"extra,omitempty"`
}

type atifObservation struct {
	Results []atifResult `json:"results"`
}

type atifResult struct {
	SourceCallID          string            `json:"source_call_id,omitempty"`
	Content               string            `json:"content"`
	SubagentTrajectoryRef []atifSubagentRef `json:"subagent_trajectory_ref,omitempty"`
	Extra                 map[string]any    `json:"extra,omitempty"`
}

type atifSubagentRef struct {
	TrajectoryID string `json:"trajectory_id"`
	SessionID    string `json:"session_id,omitempty"`
}

type atifMetrics struct {
	PromptTokens     int64          `json:"prompt_tokens"`
	CompletionTokens int64          `json:"completion_tokens"`
	CachedTokens     int64          `json:"cached_tokens"`
	CostUSD          *float64       `json:"cost_usd,omitempty"`
	Extra            map[string]any `json:"extra,omitempty"`
}

type atifFinalMetrics struct {
	TotalPromptTokens     *int64         `json:"total_prompt_tokens,omitempty"`
	TotalCompletionTokens *int64         `json:"total_completion_tokens,omitempty"`
	TotalCachedTokens     *int64         `json:"total_cached_tokens,omitempty"`
	TotalCostUSD          *float64       `json:"total_cost_usd,omitempty"`
	TotalEntries          int            `json:"total_steps"`
	Extra                 map[string]any `json:"extra,omitempty"`
}

// metricsOf maps traj's token kinds onto ATIF's: prompt tokens include
// cached ones (ATIF) while traj's input excludes cache reads and writes
// (OpenCode's count); completion tokens include reasoning. The trace's own
// breakdown is kept in extra.
func metricsOf(t trace.Tokens, cost *float64) *atifMetrics {
	return &atifMetrics{
		PromptTokens: t.Input + t.CacheRead + t.CacheWrite, CompletionTokens: t.Output + t.Reasoning,
		CachedTokens: t.CacheRead, CostUSD: cost, Extra: tokenExtra(t),
	}
}

func tokenExtra(t trace.Tokens) map[string]any {
	return map[string]any{"traj_tokens": t}
}

// atifExport streams one trajectory into an ATIF document: root entries
// go straight to the output; a sub-agent session's entries are spilled to
// a temporary file and copied into subagent_trajectories at the end, so
// memory holds one model message per session, not the trace.
type atifExport struct {
	in   *input
	opts *Options

	out     *bufio.Writer
	header  trace.Header
	wrote   bool // the document's opening (through "steps":[) is written
	rootN   int  // root entries written
	turns   []trace.Turn
	userFor int // the turn whose user entry was written last (1-based)

	sessions sessionMap
	models   map[string]string
	pending  map[string]*atifMessage // session → its message being built
	children map[string]*atifChild   // sub-agent session → its spilled entries
	order    []string                // sub-agent sessions in order of appearance
	usage    trace.Usage
	end      *trace.Trace
	tmp      string
	// perCall is set once the harness's per-call usage was seen: from
	// then on an entry's metrics come only from it (the parts' usage is
	// the same numbers, attributed later). unattached is per-call usage
	// whose message was no longer open.
	perCall bool
	// gateway is set once a part names a model gateway call: the
	// entries' metrics are the gateway's, the harness's usage parts
	// are left out.
	gateway    bool
	unattached *trace.Tokens
	unattCost  float64
}

// atifMessage gathers one model message's parts into one agent entry.
type atifMessage struct {
	session, messageID, timestamp string
	texts, reasoning              []string
	calls                         []atifToolCall
	results                       []atifResult
	parts                         [][]byte     // partExtra of each, marshalled
	callUsage                     trace.Tokens // from the harness's per-call usage
	callCost                      float64
	callsSeen                     int          // model calls whose usage was seen
	partUsage                     trace.Tokens // the usage traj attributed to the parts
	partCost                      float64
	partHasUsage                  bool
	seqs                          map[int]int // model gateway calls of the parts (part.model_call)
}

// atifChild is a sub-agent session's entries, spilled to a file.
type atifChild struct {
	id, prompt, promptTime, parentCall string
	f                                  *os.File
	w                                  *bufio.Writer
	tokens                             trace.Tokens
	cost                               float64
	hasUsage                           bool
}

func writeATIF(ctx context.Context, in *input, opts *Options) (map[string]int64, error) {
	turns, err := scanTurns(in.tracePath)
	if err != nil {
		return nil, fmt.Errorf("read trace of %s: %w", in.id, err)
	}
	tmp, err := os.MkdirTemp("", "traj-atif-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	e := &atifExport{in: in, opts: opts, turns: turns, sessions: newSessionMap(), models: map[string]string{},
		pending: map[string]*atifMessage{}, children: map[string]*atifChild{}, tmp: tmp}
	defer e.closeChildren()
	path := filepath.Join(opts.Out, in.id, ATIFName)
	err = atomicfile.Write(path, func(w io.Writer) error {
		e.out = bufio.NewWriterSize(w, 256<<10)
		if err := e.scan(ctx); err != nil {
			return err
		}
		if err := e.finish(); err != nil {
			return err
		}
		return e.out.Flush()
	})
	if err != nil {
		return nil, err
	}
	return map[string]int64{"documents": 1, "entries": int64(e.rootN), "subagent_trajectories": int64(len(e.order))}, nil
}

// scanTurns reads the turns' own fields (timestamp, prompt) first: the
// streaming reader hands a turn's fields over after its parts, and the
// user entry of a turn comes before them. It walks the trace by byte
// offset, decoding no part.
func scanTurns(path string) ([]trace.Turn, error) {
	var turns []trace.Turn
	err := readTurns(path, func(_ int, t *trace.Turn) error {
		t.TrailingParts = nil // read again with the parts
		turns = append(turns, *t)
		return nil
	})
	return turns, err
}

func (e *atifExport) scan(ctx context.Context) error {
	// Each part's extra is marshalled on the decoders, with the turns'
	// prompts as the first pass read them.
	turns := slices.Clone(e.turns)
	extra := func(p *trace.Part, turn int) ([]byte, error) { return marshalPartExtra(p, turns, turn) }
	err := readTrace(ctx, e.in.tracePath, 0, readOptions{otherUsage: true, extra: extra}, traceVisitor{
		OnHeader: func(h *trace.Header) error {
			e.header = *h
			e.sessions.root = h.SessionID
			e.sessions.setAgent(h.Agent)
			return nil
		},
		OnPart: func(turn int, d *decodedPart) error {
			return e.part(turn, d)
		},
		OnTurn: func(i int, t *trace.Turn) error {
			if err := e.userEntry(i); err != nil {
				return err
			}
			for _, raw := range t.TrailingParts {
				e.callUsage(raw)
			}
			if i < len(e.turns) {
				e.turns[i].TrailingParts = t.TrailingParts
			}
			return e.flushAll()
		},
		OnEnd: func(t *trace.Trace) error {
			e.end = t
			if e.header.TrajectoryID == "" {
				e.header = t.Header()
				e.sessions.root = t.SessionID
				e.sessions.setAgent(t.Agent)
			}
			e.usage.End(t.SessionEnd)
			return e.flushAll()
		},
	})
	if err != nil {
		return fmt.Errorf("read trace of %s: %w", e.in.id, err)
	}
	return nil
}

// userEntry writes the prompt of turn i (0-based) once, before its parts.
func (e *atifExport) userEntry(i int) error {
	if i+1 <= e.userFor || i >= len(e.turns) {
		return nil
	}
	if err := e.flushAll(); err != nil {
		return err
	}
	e.userFor = i + 1
	t := e.turns[i]
	return e.writeRoot(&atifEntry{Timestamp: t.Timestamp, Source: "user", Message: t.Prompt,
		Extra: map[string]any{"traj": map[string]any{"turn": t.Turn, "session_id": t.SessionID}}})
}

func (e *atifExport) part(turn int, d *decodedPart) error {
	p := &d.Part
	for _, s := range d.sessions {
		e.sessions.addSession(s)
	}
	for _, m := range d.models {
		e.models[m.id] = m.model
	}
	if err := e.userEntry(turn); err != nil {
		return err
	}
	e.usage.AddPart(p)
	if p.ModelCall != nil {
		e.gateway = true
	}
	// The harness's per-call usage comes in uncounted parts after the
	// call's last part: attach it to that message before this part may
	// close it.
	for _, u := range d.usage {
		e.addCallUsage(u)
	}
	sess := p.SessionID
	if sess == "" {
		sess = e.sessions.root
	}
	m := e.pending[sess]
	// One entry per model response: a message, or, when the parts name
	// the model gateway's calls, one call.
	if m != nil && (m.messageID != p.MessageID || p.MessageID == "" ||
		(p.ModelCall != nil && m.seqs[p.ModelCall.Seq] == 0 && len(m.seqs) > 0)) {
		if err := e.flush(sess); err != nil {
			return err
		}
		m = nil
	}
	if m == nil {
		m = &atifMessage{session: sess, messageID: p.MessageID, timestamp: p.Timestamp}
		e.pending[sess] = m
	}
	if sess != e.sessions.root {
		e.child(sess)
	}
	v := &d.view
	switch v.Type {
	case "text":
		m.texts = append(m.texts, v.Text)
	case "reasoning":
		m.reasoning = append(m.reasoning, v.Text)
	case "tool":
		id := v.CallID
		if id == "" {
			id = p.PartID
		}
		if id == "" {
			id = fmt.Sprintf("part-%d", p.Part)
		}
		args := v.Input
		if len(args) == 0 || args[0] != '{' {
			// ATIF's arguments are an object; anything else is wrapped.
			if len(args) == 0 {
				args = json.RawMessage("null")
			}
			args = json.RawMessage(`{"input":` + string(args) + `}`)
		}
		m.calls = append(m.calls, atifToolCall{ToolCallID: id, FunctionName: v.Tool, Arguments: args})
		r := atifResult{SourceCallID: id, Content: v.Output, Extra: map[string]any{"status": v.Status}}
		if v.Error != "" {
			r.Extra["error"] = v.Error
			if r.Content == "" {
				r.Content = v.Error
			}
		}
		if v.Subsession != "" {
			r.SubagentTrajectoryRef = []atifSubagentRef{{TrajectoryID: v.Subsession, SessionID: v.Subsession}}
			c := e.child(v.Subsession)
			c.parentCall = id
			var in struct {
				Prompt string `json:"prompt"`
			}
			if json.Unmarshal(v.Input, &in) == nil {
				c.prompt = in.Prompt
			}
			if !v.Start.IsZero() {
				c.promptTime = trace.Timestamp(v.Start)
			}
		}
		m.results = append(m.results, r)
	}
	if p.ModelCall != nil {
		if m.seqs == nil {
			m.seqs = map[int]int{}
		}
		m.seqs[p.ModelCall.Seq]++
	}
	if p.Tokens != nil {
		m.partUsage.Add(*p.Tokens)
		m.partHasUsage = true
	}
	if p.Cost != nil {
		m.partCost += *p.Cost
		m.partHasUsage = true
	}
	m.parts = append(m.parts, d.extra)
	return nil
}

// partExtra is what ATIF has no field for, verbatim: the part's trace
// record and its harness object without the fields moved into the entry.
func partExtra(p *trace.Part, turns []trace.Turn, turn int) map[string]any {
	x := map[string]any{"part": p.Part, "timestamp": p.Timestamp, "git_commit": p.GitCommit}
	set := func(k string, ok bool, val any) {
		if ok {
			x[k] = val
		}
	}
	set("part_id", p.PartID != "", p.PartID)
	set("part_type", p.PartType != "", p.PartType)
	set("tool", p.Tool != "", p.Tool)
	set("message_id", p.MessageID != "", p.MessageID)
	set("session_id", p.SessionID != "", p.SessionID)
	set("repo_checkpoint", p.RepoCheckpoint != nil, p.RepoCheckpoint)
	set("envoi_calls", len(p.EnvoiCalls) > 0, p.EnvoiCalls)
	set("tokens", p.Tokens != nil, p.Tokens)
	set("cost", p.Cost != nil, p.Cost)
	if len(p.Content) > 0 {
		x["content"] = p.Content
	}
	set("other_parts", len(p.OtherParts) > 0, p.OtherParts)
	set("sessions", len(p.Sessions) > 0, p.Sessions)
	set("session_ids", len(p.SessionIDs) > 0, p.SessionIDs)
	set("new_messages", len(p.NewMessages) > 0, p.NewMessages)
	// The prompt is the turn's user entry; kept here only if it differs.
	if p.Prompt != "" && (turn >= len(turns) || turns[turn].Prompt != p.Prompt) {
		x["prompt"] = p.Prompt
	}
	return x
}

// callUsage adds a per-call usage part's numbers to its open message's
// metrics (the part itself stays verbatim in extra).
func (e *atifExport) callUsage(raw json.RawMessage) {
	if u, ok := modelCallUsage(raw, e.sessions.reader); ok {
		e.addCallUsage(u)
	}
}

// addCallUsage adds one call's usage the reader found.
func (e *atifExport) addCallUsage(u usage) {
	if e.gateway {
		// The parts carry the model gateway's usage; the harness's own
		// is in session_end.harness_tokens.
		return
	}
	e.perCall = true
	for _, m := range e.pending {
		if m.messageID == u.MessageID {
			m.callUsage.Add(u.Tokens)
			m.callCost += u.Cost
			m.callsSeen++
			return
		}
	}
	if e.unattached == nil {
		e.unattached = &trace.Tokens{}
	}
	e.unattached.Add(u.Tokens)
	e.unattCost += u.Cost
}

func (e *atifExport) child(id string) *atifChild {
	c := e.children[id]
	if c == nil {
		c = &atifChild{id: id}
		e.children[id] = c
		e.order = append(e.order, id)
	}
	return c
}

// flushAll closes every open message, root first.
func (e *atifExport) flushAll() error {
	if _, ok := e.pending[e.sessions.root]; ok {
		if err := e.flush(e.sessions.root); err != nil {
			return err
		}
	}
	for _, id := range e.order {
		if _, ok := e.pending[id]; ok {
			if err := e.flush(id); err != nil {
				return err
			}
		}
	}
	for id := range e.pending { // sessions of unknown kind
		if err := e.flush(id); err != nil {
			return err
		}
	}
	return nil
}

// flush writes session's open message as one agent entry.
func (e *atifExport) flush(session string) error {
	m := e.pending[session]
	delete(e.pending, session)
	if m == nil {
		return nil
	}
	ent := &atifEntry{Timestamp: m.timestamp, Source: "agent", Message: strings.Join(m.texts, "\n\n"),
		ReasoningContent: strings.Join(m.reasoning, "\n\n"), ToolCalls: m.calls}
	if model := e.models[m.messageID]; model != "" && model != e.header.AgentModel {
		ent.ModelName = model
	}
	if len(m.results) > 0 {
		ent.Observation = &atifObservation{Results: m.results}
	}
	traj := map[string]any{"message_id": m.messageID, "session_id": m.session}
	var tokens trace.Tokens
	var cost float64
	switch {
	case len(m.seqs) > 0:
		// The model gateway's record, shared among the call's parts.
		tokens, cost = m.partUsage, m.partCost
		ent.Metrics = metricsOf(tokens, &cost)
		n := len(m.seqs)
		ent.LLMCallCount = &n
		seqs := make([]int, 0, n)
		for s := range m.seqs {
			seqs = append(seqs, s)
		}
		slices.Sort(seqs)
		traj["model_calls"] = seqs
		traj["metrics_source"] = "model gateway"
	case m.callsSeen > 0:
		tokens, cost = m.callUsage, m.callCost
		ent.Metrics = metricsOf(tokens, &cost)
		n := m.callsSeen
		ent.LLMCallCount = &n
		traj["metrics_source"] = "harness per-call usage"
	case m.partHasUsage && !e.perCall:
		tokens, cost = m.partUsage, m.partCost
		ent.Metrics = metricsOf(tokens, &cost)
		traj["metrics_source"] = "usage traj attributed to the parts"
	}
	ent.traj, ent.parts = traj, m.parts
	if session == e.sessions.root {
		return e.writeRoot(ent)
	}
	c := e.child(session)
	if ent.Metrics != nil {
		c.tokens.Add(tokens)
		c.cost += cost
		c.hasUsage = true
	}
	return e.spill(c, ent)
}

// writeRoot writes one root entry, opening the document first.
func (e *atifExport) writeRoot(ent *atifEntry) error {
	if !e.wrote {
		if err := e.begin(); err != nil {
			return err
		}
	} else if _, err := e.out.WriteString(",\n"); err != nil {
		return err
	}
	e.rootN++
	ent.EntryID = e.rootN
	b, err := ent.marshal()
	if err != nil {
		return err
	}
	_, err = e.out.Write(b)
	return err
}

// begin writes the document's fields before "steps". By the first entry
// the header and the first part's session objects are known.
func (e *atifExport) begin() error {
	e.wrote = true
	h := e.header
	head := struct {
		SchemaVersion string    `json:"schema_version"`
		SessionID     string    `json:"session_id,omitempty"`
		TrajectoryID  string    `json:"trajectory_id"`
		Agent         atifAgent `json:"agent"`
		Notes         string    `json:"notes"`
	}{ATIFVersion, h.SessionID, e.in.id, e.agent(), atifNotes}
	b, err := json.Marshal(head)
	if err != nil {
		return err
	}
	b = bytes.TrimSuffix(b, []byte("}"))
	if _, err := e.out.Write(b); err != nil {
		return err
	}
	_, err = e.out.WriteString(`,"steps":[` + "\n")
	return err
}

func (e *atifExport) agent() atifAgent {
	return atifAgent{Name: e.sessions.name, Version: orUnknown(e.sessions.version), ModelName: e.header.AgentModel}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// spill appends a sub-agent entry to its session's file, numbered 0 for
// now (renumbered when copied).
func (e *atifExport) spill(c *atifChild, ent *atifEntry) error {
	if c.f == nil {
		f, err := os.CreateTemp(e.tmp, "child-*.jsonl")
		if err != nil {
			return err
		}
		c.f, c.w = f, bufio.NewWriter(f)
	}
	ent.EntryID = 0
	b, err := ent.marshal()
	if err != nil {
		return err
	}
	if _, err := c.w.Write(b); err != nil {
		return err
	}
	return c.w.WriteByte('\n')
}

func (e *atifExport) closeChildren() {
	for _, c := range e.children {
		if c.f != nil {
			c.f.Close()
		}
	}
}

// finish closes "steps" and writes final_metrics, extra and the embedded
// sub-agent trajectories.
func (e *atifExport) finish() error {
	if !e.wrote {
		// A trace without turns or parts: ATIF needs one entry.
		if err := e.writeRoot(&atifEntry{Source: "system", Timestamp: e.header.StartedAt,
			Message: "The trajectory recorded no parts."}); err != nil {
			return err
		}
	}
	if _, err := e.out.WriteString("\n]"); err != nil {
		return err
	}
	fm := atifFinalMetrics{TotalEntries: e.rootN}
	if t := e.usage.Tokens(); t != nil {
		m := metricsOf(*t, nil)
		fm.TotalPromptTokens, fm.TotalCompletionTokens, fm.TotalCachedTokens = &m.PromptTokens, &m.CompletionTokens, &m.CachedTokens
		fm.Extra = tokenExtra(*t)
	}
	fm.TotalCostUSD = e.usage.Cost()
	extra := map[string]any{"export_schema_version": SchemaVersion, "traj_version": e.opts.Version}
	h := e.header
	extra["trace_schema_version"] = firstNonEmpty(h.SchemaVersion, "0")
	if h.Task != "" {
		extra["task"] = h.Task
	}
	if h.Environment != nil {
		extra["environment"] = h.Environment
	}
	extra["started_at"] = h.StartedAt
	if e.end != nil {
		extra["session_end"] = e.end.SessionEnd
		if len(e.end.Artifacts) > 0 {
			extra["artifacts"] = e.end.Artifacts
		}
	}
	extra["turns"] = e.turns
	if e.unattached != nil {
		// Per-call usage reported after its message had closed: in the
		// totals, in no entry's metrics.
		extra["usage_without_entry"] = map[string]any{"tokens": e.unattached, "cost": e.unattCost}
	}
	if len(e.in.warnings) > 0 {
		extra["warnings"] = e.in.warnings
	}
	tail := struct {
		FinalMetrics atifFinalMetrics `json:"final_metrics"`
		Extra        map[string]any   `json:"extra"`
	}{fm, map[string]any{"traj": extra}}
	b, err := json.Marshal(tail)
	if err != nil {
		return err
	}
	b[0] = ','
	b = bytes.TrimSuffix(b, []byte("}"))
	if _, err := e.out.Write(b); err != nil {
		return err
	}
	if err := e.writeChildren(e.sessions.root); err != nil {
		return err
	}
	_, err = e.out.WriteString("}\n")
	return err
}

// childrenOf lists the sub-agent sessions whose parent is parent (a
// session of unknown parent belongs to the root), in order of appearance.
func (e *atifExport) childrenOf(parent string) []*atifChild {
	var out []*atifChild
	for _, id := range e.order {
		if id == e.sessions.root {
			continue
		}
		if e.sessions.parent(id) == parent && id != parent {
			out = append(out, e.children[id])
		}
	}
	return out
}

// writeChildren writes ,"subagent_trajectories":[…] for parent's
// sub-agents, each a complete ATIF trajectory with its own entries
// numbered from 1, recursively.
func (e *atifExport) writeChildren(parent string) error {
	kids := e.childrenOf(parent)
	if len(kids) == 0 {
		return nil
	}
	if _, err := e.out.WriteString(`,"subagent_trajectories":[` + "\n"); err != nil {
		return err
	}
	for i, c := range kids {
		if i > 0 {
			if _, err := e.out.WriteString(",\n"); err != nil {
				return err
			}
		}
		if err := e.writeChild(c); err != nil {
			return err
		}
	}
	_, err := e.out.WriteString("\n]")
	return err
}

func (e *atifExport) writeChild(c *atifChild) error {
	head := struct {
		SchemaVersion string    `json:"schema_version"`
		SessionID     string    `json:"session_id"`
		TrajectoryID  string    `json:"trajectory_id"`
		Agent         atifAgent `json:"agent"`
	}{ATIFVersion, c.id, c.id, e.agent()}
	b, err := json.Marshal(head)
	if err != nil {
		return err
	}
	if _, err := e.out.Write(bytes.TrimSuffix(b, []byte("}"))); err != nil {
		return err
	}
	if _, err := e.out.WriteString(`,"steps":[` + "\n"); err != nil {
		return err
	}
	n := 0
	write := func(ent *atifEntry) error {
		n++
		ent.EntryID = n
		b, err := json.Marshal(ent)
		if err != nil {
			return err
		}
		if n > 1 {
			if _, err := e.out.WriteString(",\n"); err != nil {
				return err
			}
		}
		_, err = e.out.Write(b)
		return err
	}
	if c.prompt != "" {
		if err := write(&atifEntry{Timestamp: c.promptTime, Source: "user", Message: c.prompt,
			Extra: map[string]any{"traj": map[string]any{"from_tool_call": c.parentCall}}}); err != nil {
			return err
		}
	}
	if c.f != nil {
		if err := c.w.Flush(); err != nil {
			return err
		}
		if _, err := c.f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		sc := bufio.NewScanner(c.f)
		sc.Buffer(make([]byte, 1<<20), 1<<30)
		const zero = `{"step_id":0,`
		for sc.Scan() {
			line := sc.Bytes()
			if !bytes.HasPrefix(line, []byte(zero)) {
				return fmt.Errorf("sub-agent %s: spilled entry without its number", c.id)
			}
			n++
			if n > 1 {
				if _, err := e.out.WriteString(",\n"); err != nil {
					return err
				}
			}
			if _, err := fmt.Fprintf(e.out, `{"step_id":%d,`, n); err != nil {
				return err
			}
			if _, err := e.out.Write(line[len(zero):]); err != nil {
				return err
			}
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("sub-agent %s: %w", c.id, err)
		}
	}
	if n == 0 {
		if err := write(&atifEntry{Source: "system", Message: "The sub-agent session recorded no parts."}); err != nil {
			return err
		}
	}
	if _, err := e.out.WriteString("\n]"); err != nil {
		return err
	}
	fm := atifFinalMetrics{TotalEntries: n}
	if c.hasUsage {
		m := metricsOf(c.tokens, nil)
		cost := c.cost
		fm.TotalPromptTokens, fm.TotalCompletionTokens, fm.TotalCachedTokens = &m.PromptTokens, &m.CompletionTokens, &m.CachedTokens
		fm.TotalCostUSD, fm.Extra = &cost, tokenExtra(c.tokens)
	}
	tail := struct {
		FinalMetrics atifFinalMetrics `json:"final_metrics"`
		Extra        map[string]any   `json:"extra"`
	}{fm, map[string]any{"traj": map[string]any{"parent_session_id": e.sessions.parent(c.id), "parent_tool_call_id": c.parentCall}}}
	b, err = json.Marshal(tail)
	if err != nil {
		return err
	}
	b[0] = ','
	if _, err := e.out.Write(bytes.TrimSuffix(b, []byte("}"))); err != nil {
		return err
	}
	if err := e.writeChildren(c.id); err != nil {
		return err
	}
	_, err = e.out.WriteString("}")
	return err
}
