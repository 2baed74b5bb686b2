// Package rerun says whether a rerun (`traj replay rerun`: the same
// harness, task and sandbox, its model calls answered from the source's
// record) reproduced its source: part by part (kind, tool, input, text,
// read through each trace's harness reader, never harness JSON), the
// checkpoint tree at every part either committed, and the model requests
// (by digest, the record keeps no bodies).
//
// Parts match by number: part n of the rerun is the rerun of the source's
// part n (the trace's rerun_of says so). Reproduced N/M counts the parts
// equal from the first on; after the first difference the two runs are
// different trajectories and nothing more is claimed.
//
// Trees are compared twice. Each part's own checkpoint (committed or not,
// and its tree) must be equal: the recorder defers the checkpoint of a
// tool part whose response still has tool calls open (a harness runs them
// side by side), so which part's checkpoint holds a change does not
// depend on which tool finished first (FirstCheckpoint); in a response
// whose parts came in another order (parallel tool calls; OpenCode
// completing a response's text and its tool call in either order, seen
// under load) only the tree at the response end is compared. And the
// workspace as of each model response end of the source (where its next
// model call started among its parts, calls.Placement: the trace's part →
// call attribution) and the last part (FirstTree), which
// says which response changed the workspace otherwise. A source recorded
// before the recorder deferred such checkpoints can differ at a part
// whose response ran tools side by side: the report says where.
//
// The workflow around it (fetching the source, running the rerun or the
// fork, saving rerun.json) is orchestrator/handler/record's; Report.Print
// is the comparison for a reader.
package rerun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/trajlab/traj/sandbox/agent"
	"github.com/trajlab/traj/sandbox/gateway/model/calls"
	"github.com/trajlab/traj/sandbox/harness/recorded"
	"github.com/trajlab/traj/trace"
)

// Side is one trajectory of the comparison as files on this machine.
type Side struct {
	ID    string
	Trace string
	// Bundles hold its checkpoint history (repo.bundle or history/).
	Bundles []string
	// Calls is its model_calls.jsonl ("": not compared).
	Calls string
}

// Trees gives the tree of a checkpoint commit (replay/githistory).
type Trees interface {
	Tree(ctx context.Context, commit string) (string, error)
}

// Report is the comparison, as rerun.json stores it.
type Report struct {
	Source string `json:"source"`
	Rerun  string `json:"rerun"`
	// SourceParts counts the source's parts asked for (all, or up to
	// --until-part); RerunParts the rerun's.
	SourceParts int `json:"source_parts"`
	RerunParts  int `json:"rerun_parts"`
	// Reproduced is how many parts, from the first, are equal in both
	// (kind, tool, input, text) with equal checkpoints and equal trees at
	// the response ends among them.
	Reproduced int `json:"reproduced"`
	// Boundaries counts the response ends compared by tree.
	Boundaries int `json:"boundaries"`
	// FirstPart is the first part whose kind, tool, input or text
	// differs (or that one side lacks); FirstTree the first response end
	// (a part) where the workspace trees differ; FirstRequest the first model request whose
	// digest differs. Nil: none.
	FirstPart *PartDiff `json:"first_part,omitempty"`
	FirstTree *TreeDiff `json:"first_tree,omitempty"`
	// FirstCheckpoint is the first part whose own checkpoint differs
	// (committed in one run only, or another tree).
	FirstCheckpoint *TreeDiff `json:"first_checkpoint,omitempty"`
	// FirstReordered is the first part where a model response's parts
	// came in another order, the same parts (0: none): a harness runs a
	// response's tool calls in parallel, and they finish in any order.
	FirstReordered int          `json:"first_reordered,omitempty"`
	FirstRequest   *RequestDiff `json:"first_request,omitempty"`
	// SourceEnd and RerunEnd are the session_end reasons.
	SourceEnd string `json:"source_end,omitempty"`
	RerunEnd  string `json:"rerun_end,omitempty"`
}

// PartDiff is a part that differs: Field says what, the values are short.
type PartDiff struct {
	Part   int    `json:"part"`
	Field  string `json:"field"`
	Source string `json:"source"`
	Rerun  string `json:"rerun"`
}

// TreeDiff is a part whose checkpoint differs ("" tree: not committed).
type TreeDiff struct {
	Part   int    `json:"part"`
	Source string `json:"source_tree"`
	Rerun  string `json:"rerun_tree"`
}

// RequestDiff is the first model request of the rerun that is not its
// source's bytes: the n-th call of one path and model in each record.
type RequestDiff struct {
	Call      int          `json:"call"`
	Path      string       `json:"path"`
	Model     string       `json:"model,omitempty"`
	Source    calls.Digest `json:"source"`
	Rerun     calls.Digest `json:"rerun"`
	SourceSeq int          `json:"source_seq"`
	RerunSeq  int          `json:"rerun_seq"`
	Why       string       `json:"why"`
}

// Summary is the one line a user reads first.
func (r Report) Summary() string {
	s := fmt.Sprintf("reproduced %d/%d parts", r.Reproduced, r.SourceParts)
	switch {
	case r.FirstPart != nil:
		s += fmt.Sprintf("; first divergence at part %d (%s)", r.FirstPart.Part, r.FirstPart.Field)
	case r.FirstCheckpoint != nil && (r.FirstTree == nil || r.FirstCheckpoint.Part <= r.FirstTree.Part):
		s += fmt.Sprintf("; first checkpoint that differs at part %d", r.FirstCheckpoint.Part)
	case r.FirstTree != nil:
		s += fmt.Sprintf("; first tree that differs at part %d", r.FirstTree.Part)
	}
	return s
}

// Compare compares rerun with source up to the source's part untilPart
// (0: all). trees opens each side's history.
func Compare(ctx context.Context, source, rerun Side, untilPart int, trees func(ctx context.Context, bundles []string) (Trees, func(), error)) (*Report, error) {
	src, err := readParts(source.Trace)
	if err != nil {
		return nil, err
	}
	re, err := readParts(rerun.Trace)
	if err != nil {
		return nil, err
	}
	if untilPart > 0 && untilPart < len(src.parts) {
		src.parts = src.parts[:untilPart]
	}
	rep := &Report{Source: source.ID, Rerun: rerun.ID, SourceParts: len(src.parts), RerunParts: len(re.parts),
		SourceEnd: src.end, RerunEnd: re.end}
	st, closeS, err := trees(ctx, source.Bundles)
	if err != nil {
		return nil, fmt.Errorf("source history: %w", err)
	}
	defer closeS()
	rt, closeR, err := trees(ctx, rerun.Bundles)
	if err != nil {
		return nil, fmt.Errorf("rerun history: %w", err)
	}
	defer closeR()
	bounds, err := boundaries(source.Calls, source.Trace, len(src.parts))
	if err != nil {
		return nil, err
	}
	n := max(len(src.parts), len(re.parts))
	if untilPart > 0 {
		n = len(src.parts)
	}
	var lastA, lastB string // the trees as of the part: the last committed one's
	goodBoundary := 0       // the last response end with equal trees
	reorderedTo := 0        // the last part of a response whose parts came in another order
	for i := 0; i < n; i++ {
		part := i + 1
		if i >= len(src.parts) || i >= len(re.parts) {
			if rep.FirstPart == nil {
				d := &PartDiff{Part: part, Field: "part", Source: "(none)", Rerun: "(none)"}
				if i < len(src.parts) {
					d.Source = src.parts[i].describe()
				} else {
					d.Rerun = re.parts[i].describe()
				}
				rep.FirstPart = d
			}
			break
		}
		a, b := src.parts[i], re.parts[i]
		if d := a.diff(b); d != nil && rep.FirstPart == nil {
			if lo, hi := response(bounds, part, n); sameParts(src.parts, re.parts, lo, hi) {
				// The response's parts, in another order: parallel tool
				// calls finish in any order (Codex).
				if rep.FirstReordered == 0 {
					rep.FirstReordered = part
				}
				reorderedTo = hi
			} else {
				d.Part = part
				rep.FirstPart = d
			}
		}
		ta, err := treeOf(ctx, st, a)
		if err != nil {
			return nil, fmt.Errorf("source part %d: %w", part, err)
		}
		tb, err := treeOf(ctx, rt, b)
		if err != nil {
			return nil, fmt.Errorf("rerun part %d: %w", part, err)
		}
		// In a response whose parts came in another order, a part's
		// checkpoint holds what other parts did first: only the tree at
		// the response end is compared.
		if ta != tb && rep.FirstCheckpoint == nil && part > reorderedTo {
			rep.FirstCheckpoint = &TreeDiff{Part: part, Source: ta, Rerun: tb}
		}
		if ta != "" {
			lastA = ta
		}
		if tb != "" {
			lastB = tb
		}
		if bounds[part] || part == n {
			rep.Boundaries++
			if lastA != lastB && rep.FirstTree == nil {
				rep.FirstTree = &TreeDiff{Part: part, Source: lastA, Rerun: lastB}
			} else if rep.FirstTree == nil {
				goodBoundary = part
			}
		}
		if rep.FirstPart == nil && rep.FirstTree == nil && rep.FirstCheckpoint == nil {
			rep.Reproduced = part
		}
	}
	if rep.FirstTree != nil {
		// The response that ended there changed the tree otherwise.
		rep.Reproduced = min(rep.Reproduced, goodBoundary)
	}
	if source.Calls != "" && rerun.Calls != "" {
		if rep.FirstRequest, err = firstRequest(source.Calls, rerun.Calls); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// response is the parts lo..hi of the model response part n belongs to:
// after the previous response end, up to the next one (or last).
func response(bounds map[int]bool, part, last int) (lo, hi int) {
	lo = part
	for lo > 1 && !bounds[lo-1] {
		lo--
	}
	hi = part
	for hi < last && !bounds[hi] {
		hi++
	}
	return lo, hi
}

// sameParts says whether parts lo..hi (1-based) of a and b are the same
// parts, in any order.
func sameParts(a, b []part, lo, hi int) bool {
	if hi > len(a) || hi > len(b) {
		return false
	}
	count := map[part]int{}
	for i := lo - 1; i < hi; i++ {
		count[a[i].key()]++
		count[b[i].key()]--
	}
	for _, c := range count {
		if c != 0 {
			return false
		}
	}
	return true
}

// boundaries are the parts at which the source's model responses ended:
// where each call started among the parts of the source's trace
// (calls.Placement). Without a record, every part is one.
func boundaries(record, tracePath string, parts int) (map[int]bool, error) {
	if record == "" {
		out := map[int]bool{}
		for p := 1; p <= parts; p++ {
			out[p] = true
		}
		return out, nil
	}
	var all []calls.Call
	if _, err := calls.ReadRecord(record, func(c calls.Call) error {
		all = append(all, c)
		return nil
	}); err != nil {
		return nil, err
	}
	placed, err := calls.Place(tracePath)
	if err != nil {
		return nil, err
	}
	return placed.Ends(all), nil
}

// part is what a part is compared by.
type part struct {
	kind, tool, input, text string
	committed               bool
	commit                  string
}

// key is p as compared: its record, not its checkpoint.
func (p part) key() part { return part{kind: p.kind, tool: p.tool, input: p.input, text: p.text} }

func (p part) describe() string {
	if p.tool != "" {
		return p.kind + " " + p.tool
	}
	return p.kind
}

// diff names the first field of p and q that differs.
func (p part) diff(q part) *PartDiff {
	for _, f := range []struct{ name, a, b string }{
		{"kind", p.kind, q.kind}, {"tool", p.tool, q.tool}, {"input", p.input, q.input}, {"text", p.text, q.text},
	} {
		if f.a != f.b {
			return &PartDiff{Field: f.name, Source: short(f.a), Rerun: short(f.b)}
		}
	}
	return nil
}

func short(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

type parts struct {
	parts []part
	end   string
}

// readParts reads a trace's parts through its harness's reader.
func readParts(path string) (parts, error) {
	f, err := os.Open(path)
	if err != nil {
		return parts{}, fmt.Errorf("read trace: %w", err)
	}
	defer f.Close()
	var out parts
	var rd agent.Reader
	err = trace.Scan(f, trace.Visitor{
		OnHeader: func(h *trace.Header) error { rd = recorded.Reader(h.Agent); return nil },
		OnPart: func(_ int, p *trace.Part) error {
			np, _ := rd.Part(p.PartID, agent.Kind(p.PartType), p.Content)
			q := part{kind: string(np.Kind)}
			if q.kind == "" {
				q.kind = p.PartType
			}
			switch {
			case np.Tool != nil:
				q.tool, q.input = np.Tool.Name, canonical(np.Tool.Input)
			case p.Tool != "":
				q.tool = p.Tool
			}
			if np.Kind == agent.KindText || np.Kind == agent.KindReasoning {
				q.text = np.Text
			}
			if c := p.RepoCheckpoint; c != nil && c.Committed {
				q.committed, q.commit = true, c.CommitAfter
			}
			out.parts = append(out.parts, q)
			return nil
		},
		OnEnd: func(t *trace.Trace) error {
			if t.SessionEnd != nil {
				out.end = t.SessionEnd.Reason
			}
			return nil
		},
	})
	if err != nil {
		return parts{}, fmt.Errorf("read trace %s: %w", path, err)
	}
	return out, nil
}

// canonical is a JSON value with its keys sorted and no spacing, so two
// harness versions' spacing never counts as a difference.
func canonical(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(bytes.TrimSpace(raw))
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func treeOf(ctx context.Context, t Trees, p part) (string, error) {
	if !p.committed {
		return "", nil
	}
	return t.Tree(ctx, p.commit)
}

// firstRequest pairs the two records' answered calls in order within each
// path and model, and returns the first pair whose digests differ.
func firstRequest(sourcePath, rerunPath string) (*RequestDiff, error) {
	type key struct{ path, model string }
	// The calls an upstream answered, by playback's one rule.
	load := calls.LoadAnswered
	src, err := load(sourcePath)
	if err != nil {
		return nil, err
	}
	re, err := load(rerunPath)
	if err != nil {
		return nil, err
	}
	queue := map[key][]calls.Call{}
	for _, c := range src {
		k := key{c.Path, c.Model}
		queue[k] = append(queue[k], c)
	}
	taken := map[key]int{}
	for _, c := range re {
		k := key{c.Path, c.Model}
		n := taken[k]
		taken[k]++
		if n >= len(queue[k]) {
			return &RequestDiff{Call: n + 1, Path: c.Path, Model: c.Model, Rerun: c.Request, RerunSeq: c.Seq,
				Why: "the source recorded no such call"}, nil
		}
		s := queue[k][n]
		if !c.Request.Same(s.Request) {
			return &RequestDiff{Call: n + 1, Path: c.Path, Model: c.Model, Source: s.Request, Rerun: c.Request,
				SourceSeq: s.Seq, RerunSeq: c.Seq, Why: c.Request.Differs(s.Request)}, nil
		}
	}
	return nil, nil
}
