package view

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/trajlab/traj/environment"
	"github.com/trajlab/traj/sandbox/agent"
	"github.com/trajlab/traj/trace"
)

// Row is one part in the timeline: enough to draw a line, nothing more.
type Row struct {
	Part int    `json:"part"`
	Turn int    `json:"turn"`
	Time int64  `json:"time"`
	Kind string `json:"kind"` // text | reasoning | tool | patch | … (the part type)
	Tool string `json:"tool,omitempty"`
	// ToolKind is what the tool does whatever the harness calls it
	// (agent.Action.ToolKind: shell, edit, write, read, search,
	// run_tests, sub-agent, todo).
	ToolKind  string  `json:"tool_kind,omitempty"`
	Title     string  `json:"title"`
	Session   string  `json:"session,omitempty"`
	Depth     int     `json:"depth"`
	Committed bool    `json:"committed"`
	Changed   int     `json:"changed"`
	Calls     int     `json:"calls"`
	Tokens    int64   `json:"tokens,omitempty"`
	Cost      float64 `json:"cost,omitempty"`
	Error     bool    `json:"error,omitempty"`
}

// content is a part's harness-neutral content, read from its recorded
// object by the harness's own reader (sandbox/harness, by the trace's
// "agent"). An object the reader cannot read leaves the fields empty and
// is shown raw.
type content = agent.Part

// maxTitle bounds a timeline title (characters).
const maxTitle = 160

// decodeContent reads raw (a part recorded with id and kind, or an
// uncounted entry with neither) with r.
func decodeContent(r agent.Reader, id, kind string, raw json.RawMessage) content {
	if len(raw) == 0 {
		return content{}
	}
	c, _ := r.Part(id, agent.Kind(kind), raw)
	return c
}

// toolName is c's tool, if it is a tool call.
func toolName(c content) string {
	if c.Tool == nil {
		return ""
	}
	return c.Tool.Name
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	return clip(s, maxTitle)
}

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// row builds a timeline row from a part's bytes.
func row(ix *Index, i int, raw []byte) Row {
	loc := ix.Parts[i]
	r := Row{Part: int(loc.Part), Turn: int(loc.Turn) + 1, Time: loc.Time, Committed: loc.Committed}
	if s := int(loc.Session); s >= 0 && s < len(ix.Sessions) {
		r.Session, r.Depth = ix.Sessions[s].ID, ix.Sessions[s].Depth
	}
	if t := int(loc.Turn); t >= 0 && t < len(ix.Turns) && ix.Turns[t].Turn > 0 {
		r.Turn = ix.Turns[t].Turn
	}
	var p trace.Part
	if err := json.Unmarshal(raw, &p); err != nil {
		r.Kind, r.Title, r.Error = "invalid", "unreadable part: "+err.Error(), true
		return r
	}
	c := decodeContent(ix.reader(), p.PartID, p.PartType, p.Content)
	r.Kind = p.PartType
	if r.Kind == "" {
		r.Kind = string(c.Kind)
	}
	r.Tool = p.Tool
	if r.Tool == "" {
		r.Tool = toolName(c)
	}
	if c.Tool != nil {
		r.ToolKind = c.Tool.Action.ToolKind()
	}
	if p.RepoCheckpoint != nil {
		r.Changed = len(p.RepoCheckpoint.ChangedFiles)
	}
	r.Calls = len(p.EnvoiCalls)
	if p.Tokens != nil {
		r.Tokens = p.Tokens.Total()
	}
	if p.Cost != nil {
		r.Cost = *p.Cost
	}
	r.Title = title(&p, c)
	for _, call := range p.EnvoiCalls {
		if passed, _, total, ok := call.Counts(); ok {
			r.Title += fmt.Sprintf(" → %d/%d passed", passed, total)
		}
	}
	if t := c.Tool; t != nil && (t.Status == agent.ToolError || t.Error != "") {
		r.Error = true
	}
	return r
}

func title(p *trace.Part, c content) string {
	switch {
	case c.Tool != nil:
		t := c.Title
		if a := c.Tool.Action; t == "" && a != nil {
			t = cmp.Or(a.Command, a.Path, a.Pattern, a.Description)
		}
		if t == "" {
			var in map[string]any
			if json.Unmarshal(c.Tool.Input, &in) == nil {
				for _, k := range []string{"command", "filePath", "test_path", "path", "pattern", "description", "prompt", "url"} {
					if v, ok := in[k].(string); ok && v != "" {
						t = v
						break
					}
				}
			}
		}
		if t == "" {
			t = string(c.Tool.Status)
		}
		return firstLine(t)
	case c.Text != "":
		return firstLine(c.Text)
	case len(c.Files) > 0:
		return clip(fmt.Sprintf("%d files: %s", len(c.Files), strings.Join(c.Files, ", ")), maxTitle)
	case p.RepoCheckpoint != nil && len(p.RepoCheckpoint.ChangedFiles) > 0:
		return clip("changed "+strings.Join(p.RepoCheckpoint.ChangedFiles, ", "), maxTitle)
	case p.Prompt != "":
		return firstLine(p.Prompt)
	case len(p.Content) > 0:
		// A harness object its harness's reader does not read: its
		// compact JSON, clipped.
		var b bytes.Buffer
		if json.Compact(&b, p.Content) == nil {
			return clip(b.String(), maxTitle)
		}
	}
	return ""
}

// Detail is everything about one part the part view shows.
type Detail struct {
	Row
	Timestamp string `json:"timestamp"`
	Prompt    string `json:"prompt,omitempty"`
	MessageID string `json:"message_id,omitempty"`
	PartID    string `json:"part_id,omitempty"`
	CallID    string `json:"call_id,omitempty"`
	Text      string `json:"text,omitempty"`
	Input     string `json:"input,omitempty"`
	Output    string `json:"output,omitempty"`
	ToolError string `json:"tool_error,omitempty"`
	Status    string `json:"status,omitempty"`
	// Action is what the tool did, as the harness's reader reads its
	// arguments (render.go): a diff, a file, a command, a sub-agent.
	Action     *ActionView           `json:"action,omitempty"`
	Before     []Aside               `json:"before"`
	Calls      []CallView            `json:"calls"`
	Checkpoint *trace.RepoCheckpoint `json:"checkpoint"`
	GitCommit  string                `json:"git_commit"`
	Usage      *trace.Tokens         `json:"usage,omitempty"`
	CostUSD    *float64              `json:"cost_usd,omitempty"`
	// ModelCall is the model gateway's call the part came from (usage
	// and cost are then its share); HarnessUsage and HarnessCost what the
	// harness reported beside.
	ModelCall    *trace.PartCall `json:"model_call,omitempty"`
	HarnessUsage *trace.Tokens   `json:"harness_usage,omitempty"`
	HarnessCost  *float64        `json:"harness_cost,omitempty"`
	ModelCalls   []ModelCall     `json:"model_calls"`
	// GatewayCalls are the model gateway's records of the calls that
	// produced this part, when the trajectory has a record.
	GatewayCalls []CallRow `json:"gateway_calls"`
	Parent       string    `json:"parent_session,omitempty"`
	// SubAgent is the session a sub-agent tool part (OpenCode's task)
	// ran, with its parts; SpawnedBy is, for a sub-agent's part, the tool
	// part that ran its session.
	SubAgent  *Session `json:"sub_agent,omitempty"`
	SpawnedBy int      `json:"spawned_by,omitempty"`
	// Raw is the part's content verbatim (pretty-printed, clipped), for
	// whatever the fields above do not show.
	Raw          string `json:"raw"`
	RawTruncated bool   `json:"raw_truncated"`
}

// Aside is an uncounted part recorded with this one (reasoning or text
// before a tool call, OpenCode step-start and step-finish, …).
type Aside struct {
	Kind string `json:"kind"`
	Text string `json:"text"`
}

// CallView is one run_tests call.
type CallView struct {
	Path       string `json:"path"`
	Passed     int    `json:"passed"`
	Failed     int    `json:"failed"`
	Total      int    `json:"total"`
	OK         bool   `json:"ok"`
	StatusCode int    `json:"status_code"`
	DurationMs int64  `json:"duration_ms"`
	Error      string `json:"error,omitempty"`
	// Build is the build's outcome when it failed; Cases the call's
	// cases, failing first (MoreCases beyond the list's limit).
	Build     *environment.BuildResult `json:"build,omitempty"`
	Voided    []environment.Void       `json:"voided,omitempty"`
	Cases     []environment.CaseResult `json:"cases,omitempty"`
	MoreCases int                      `json:"more_cases,omitempty"`
}

// ModelCall is one model response as the harness recorded it (an
// assistant message: model, tokens, cost, timing).
type ModelCall struct {
	ID       string        `json:"id"`
	Model    string        `json:"model"`
	Provider string        `json:"provider,omitempty"`
	Tokens   *trace.Tokens `json:"tokens,omitempty"`
	Cost     *float64      `json:"cost,omitempty"`
	Created  int64         `json:"created,omitempty"`
	Done     int64         `json:"completed,omitempty"`
	Finish   string        `json:"finish,omitempty"`
	Error    string        `json:"error,omitempty"`
}

// Limits on one part's answer: a tool output of megabytes is clipped.
const (
	maxTextBytes = 256 << 10
	maxRawBytes  = 256 << 10
)

func clipBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "\n… (" + fmt.Sprint(len(s)-n) + " more bytes)"
}

func detail(ix *Index, i int, raw []byte) (*Detail, error) {
	var p trace.Part
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("decode part: %w", err)
	}
	d := &Detail{Row: row(ix, i, raw), Timestamp: p.Timestamp, Prompt: clipBytes(p.Prompt, maxTextBytes),
		MessageID: p.MessageID, PartID: p.PartID, Checkpoint: p.RepoCheckpoint, GitCommit: p.GitCommit,
		Usage: p.Tokens, CostUSD: p.Cost, ModelCall: p.ModelCall, HarnessUsage: p.HarnessTokens, HarnessCost: p.HarnessCost, Before: []Aside{}, Calls: []CallView{}, ModelCalls: []ModelCall{}, GatewayCalls: []CallRow{}}
	if s := int(ix.Parts[i].Session); s < len(ix.Sessions) {
		d.Parent = ix.Sessions[s].Parent
	}
	r := ix.reader()
	c := decodeContent(r, p.PartID, p.PartType, p.Content)
	sub := ""
	if c.Tool != nil {
		sub = c.Tool.ChildSessionID
	}
	if sub != "" {
		d.SubAgent = &Session{ID: sub}
		for _, se := range ix.Sessions {
			if se.ID == sub {
				d.SubAgent = &se
				break
			}
		}
	}
	d.Text = clipBytes(c.Text, maxTextBytes)
	if t := c.Tool; t != nil {
		d.CallID = t.CallID
		d.Input = clipBytes(pretty(agent.PlainJSON(t.Input)), maxTextBytes) // every harness alike
		d.Output = clipBytes(t.Output, maxTextBytes)
		d.ToolError, d.Status = clipBytes(t.Error, maxTextBytes), string(t.Status)
		d.Action = actionView(t.Action)
	}
	for _, o := range p.OtherParts {
		oc := decodeContent(r, "", "", o)
		a := Aside{Kind: string(oc.Kind), Text: oc.Text}
		if a.Text == "" {
			a.Text = oc.Title
		}
		a.Text = clipBytes(a.Text, maxTextBytes)
		d.Before = append(d.Before, a)
	}
	for _, call := range p.EnvoiCalls {
		cv := CallView{Path: call.Path, StatusCode: call.StatusCode, DurationMs: call.DurationMs}
		cv.Passed, cv.Failed, cv.Total, cv.OK = call.Counts()
		if call.Error != nil {
			cv.Error = clipBytes(*call.Error, 4096)
		}
		casesOf(call, &cv)
		d.Calls = append(d.Calls, cv)
	}
	for _, m := range p.NewMessages {
		if mc, ok := modelCall(r, m); ok {
			d.ModelCalls = append(d.ModelCalls, mc)
		}
	}
	d.Raw = pretty(p.Content)
	if len(d.Raw) > maxRawBytes {
		d.Raw, d.RawTruncated = strings.ToValidUTF8(d.Raw[:maxRawBytes], ""), true
	}
	return d, nil
}

// modelCall is a recorded message's model call, as the harness's reader
// reads it (OpenCode: every assistant message; Claude Code: each API
// message; Codex records none: the gateway's record has them).
func modelCall(r agent.Reader, raw json.RawMessage) (ModelCall, bool) {
	m, ok := r.Message(raw)
	if !ok || m.Call == nil {
		return ModelCall{}, false
	}
	c := m.Call
	mc := ModelCall{ID: m.ID, Model: c.Model, Created: ms(c.Created), Done: ms(c.Completed), Finish: c.Finish,
		Error: clipBytes(c.Error, 4096)}
	if provider, model, ok := strings.Cut(c.Model, "/"); ok {
		mc.Provider, mc.Model = provider, model
	}
	if u := c.Usage; u != nil {
		mc.Tokens = &trace.Tokens{Input: u.Input, Output: u.Output, Reasoning: u.Reasoning, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite}
		if u.Cost != 0 {
			cost := u.Cost
			mc.Cost = &cost
		}
	}
	return mc, true
}

// ms is t in Unix milliseconds, 0 for the zero time.
func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func pretty(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}
