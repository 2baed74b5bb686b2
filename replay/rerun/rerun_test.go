package rerun

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trajlab/traj/trace"
)

// ocPart is an OpenCode part as the trace keeps it: text, or a tool call
// with its input.
type ocPart struct {
	text, tool, input string
	commit            string // "" for a part without a checkpoint
	call              int    // the seq of the model call it came from (0: not attributed)
}

func writeTrace(t *testing.T, id string, parts []ocPart) string {
	t.Helper()
	tr := trace.Trace{TrajectoryID: id, SessionID: "ses", Agent: "opencode@1.18.33", AgentModel: "scripted/demo", StartedAt: "2026-11-25T00:00:00Z"}
	turn := trace.Turn{Turn: 1}
	for i, p := range parts {
		var content map[string]any
		kind := "text"
		if p.tool != "" {
			kind = "tool"
			content = map[string]any{"id": fmt.Sprint("prt_", i), "type": "tool", "tool": p.tool, "callID": "call",
				"state": map[string]any{"status": "completed", "input": json.RawMessage(p.input), "output": "ok"}}
		} else {
			content = map[string]any{"id": fmt.Sprint("prt_", i), "type": "text", "text": p.text}
		}
		raw, _ := json.Marshal(content)
		tp := trace.Part{Part: i + 1, PartID: fmt.Sprint("prt_", i), PartType: kind, Tool: p.tool, Content: raw}
		if p.call > 0 {
			tp.ModelCall = &trace.PartCall{Seq: p.call}
		}
		if p.commit != "" {
			tp.RepoCheckpoint = &trace.RepoCheckpoint{CommitAfter: p.commit, Committed: true}
		}
		turn.Parts = append(turn.Parts, tp)
	}
	tr.Turns = []trace.Turn{turn}
	tr.SessionEnd = &trace.SessionEnd{Reason: "agent_error", TotalParts: len(parts)}
	b, _ := json.Marshal(tr)
	p := filepath.Join(t.TempDir(), id+".json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// trees is a history by table: commit → tree.
type trees map[string]string

func (m trees) Tree(_ context.Context, c string) (string, error) {
	if tr, ok := m[c]; ok {
		return tr, nil
	}
	return "", fmt.Errorf("no commit %s", c)
}

// TestCompare: the first part that differs (by its field), the first
// checkpoint tree that differs, a rerun that stops short, and --until-part.
func TestCompare(t *testing.T) {
	source := []ocPart{
		{text: "Writing build.sh."},
		{tool: "write", input: `{"filePath":"build.sh","content":"x"}`, commit: "s2"},
		{tool: "bash", input: `{"command":"ls"}`},
		{text: "Done.", commit: "s4"},
	}
	// The rerun's commits are other ids (other times); their trees are
	// what counts.
	same := []ocPart{
		{text: "Writing build.sh."},
		{tool: "write", input: `{ "content": "x", "filePath": "build.sh" }`, commit: "r2"},
		{tool: "bash", input: `{"command":"ls"}`},
		{text: "Done.", commit: "r4"},
	}
	srcTrees := trees{"s2": "T2", "s4": "T4"}
	with := func(i int, p ocPart) []ocPart {
		out := append([]ocPart(nil), same...)
		out[i] = p
		return out
	}
	for _, tc := range []struct {
		name       string
		rerun      []ocPart
		rerunTrees trees
		until      int
		reproduced int
		firstPart  string // "part:field"
		firstTree  int
		// firstCheckpoint is 0 unless it differs where no tree does.
		firstCheckpoint int
	}{
		{name: "reproduced", rerun: same, rerunTrees: trees{"r2": "T2", "r4": "T4"}, reproduced: 4},
		{name: "text", rerun: with(0, ocPart{text: "Writing BUILD.sh."}), rerunTrees: trees{"r2": "T2", "r4": "T4"}, firstPart: "1:text"},
		{name: "tool input", rerun: with(2, ocPart{tool: "bash", input: `{"command":"ls -la"}`}), rerunTrees: trees{"r2": "T2", "r4": "T4"},
			reproduced: 2, firstPart: "3:input"},
		{name: "tool", rerun: with(2, ocPart{tool: "read", input: `{"command":"ls"}`}), rerunTrees: trees{"r2": "T2", "r4": "T4"},
			reproduced: 2, firstPart: "3:tool"},
		{name: "tree", rerun: same, rerunTrees: trees{"r2": "T2", "r4": "other"}, reproduced: 3, firstTree: 4},
		{name: "not committed", rerun: with(1, ocPart{tool: "write", input: `{"filePath":"build.sh","content":"x"}`}),
			rerunTrees: trees{"r4": "T4"}, reproduced: 1, firstTree: 2},
		// The same tree, committed one part later (a change that landed
		// in another part's checkpoint): equal at the response end.
		{name: "checkpoint", rerun: with(2, ocPart{tool: "bash", input: `{"command":"ls"}`, commit: "r3"}),
			rerunTrees: trees{"r2": "T2", "r3": "T2", "r4": "T4"}, reproduced: 2, firstCheckpoint: 3},
		{name: "stops short", rerun: same[:2], rerunTrees: trees{"r2": "T2"}, reproduced: 2, firstPart: "3:part"},
		{name: "until part", rerun: same[:2], rerunTrees: trees{"r2": "T2"}, until: 2, reproduced: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := Side{ID: "src", Trace: writeTrace(t, "src", source), Bundles: []string{"src"}}
			re := Side{ID: "re", Trace: writeTrace(t, "re", tc.rerun), Bundles: []string{"re"}}
			rep, err := Compare(t.Context(), src, re, tc.until, func(_ context.Context, b []string) (Trees, func(), error) {
				if b[0] == "src" {
					return srcTrees, func() {}, nil
				}
				return tc.rerunTrees, func() {}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Reproduced != tc.reproduced {
				t.Errorf("reproduced %d, want %d (%s)", rep.Reproduced, tc.reproduced, rep.Summary())
			}
			got := ""
			if rep.FirstPart != nil {
				got = fmt.Sprintf("%d:%s", rep.FirstPart.Part, rep.FirstPart.Field)
			}
			if got != tc.firstPart {
				t.Errorf("first part %q, want %q", got, tc.firstPart)
			}
			gotTree := 0
			if rep.FirstTree != nil {
				gotTree = rep.FirstTree.Part
			}
			if gotTree != tc.firstTree {
				t.Errorf("first tree %d, want %d", gotTree, tc.firstTree)
			}
			if tc.firstCheckpoint > 0 && (rep.FirstCheckpoint == nil || rep.FirstCheckpoint.Part != tc.firstCheckpoint ||
				!strings.Contains(rep.Summary(), fmt.Sprintf("first checkpoint that differs at part %d", tc.firstCheckpoint))) {
				t.Errorf("first checkpoint %+v, want part %d (%s)", rep.FirstCheckpoint, tc.firstCheckpoint, rep.Summary())
			}
			wantParts := len(source)
			if tc.until > 0 {
				wantParts = tc.until
			}
			if rep.SourceParts != wantParts {
				t.Errorf("source parts %d, want %d", rep.SourceParts, wantParts)
			}
		})
	}
}

// writeCalls writes a model_calls.jsonl of calls made with before parts
// recorded before each: the response ends.
func writeCalls(t *testing.T, before ...int) string {
	t.Helper()
	calls := filepath.Join(t.TempDir(), "model_calls.jsonl")
	var lines []byte
	for i, b := range before {
		l, _ := json.Marshal(map[string]any{"seq": i + 1, "status": 200, "parts_before": b})
		lines = append(append(lines, l...), '\n')
	}
	if err := os.WriteFile(calls, lines, 0o644); err != nil {
		t.Fatal(err)
	}
	return calls
}

// TestCompareReordered: a response's parallel tool calls that finish in
// another order are the same parts (reported apart); the same swap across
// two responses is a difference.
func TestCompareReordered(t *testing.T) {
	x := ocPart{tool: "bash", input: `{"command":"a"}`}
	y := ocPart{tool: "bash", input: `{"command":"b"}`}
	source := []ocPart{{text: "Go."}, x, y, {text: "Done."}}
	rerun := []ocPart{{text: "Go."}, y, x, {text: "Done."}}
	for _, tc := range []struct {
		name       string
		before     []int // parts_before of the source's calls: the response ends
		calls      []int // the call each source part came from (nil: none named)
		reproduced int
		reordered  int
		firstPart  int
	}{
		{name: "one response", before: []int{0, 3}, reproduced: 4, reordered: 2},
		{name: "two responses", before: []int{0, 2, 3}, reproduced: 1, firstPart: 2},
		// Failure injection: call 2's parts_before lags by one (the harness
		// asked before traj recorded part 3, as Codex does under load), which
		// alone would end a response at part 2; the trace attributes parts
		// 1..3 to call 1, part 4 to call 2: one response, as the attribution
		// says.
		{name: "parts_before lagging the attribution", before: []int{0, 2}, calls: []int{1, 1, 1, 2}, reproduced: 4, reordered: 2},
		{name: "parts_before lagging, two responses", before: []int{0, 1, 2}, calls: []int{1, 1, 2, 3}, reproduced: 1, firstPart: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := writeCalls(t, tc.before...)
			source := slices.Clone(source)
			for i, seq := range tc.calls {
				source[i].call = seq
			}
			src := Side{ID: "src", Trace: writeTrace(t, "src", source), Bundles: []string{"src"}, Calls: calls}
			re := Side{ID: "re", Trace: writeTrace(t, "re", rerun), Bundles: []string{"re"}}
			rep, err := Compare(t.Context(), src, re, 0, func(context.Context, []string) (Trees, func(), error) {
				return trees{}, func() {}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			fp := 0
			if rep.FirstPart != nil {
				fp = rep.FirstPart.Part
			}
			if rep.Reproduced != tc.reproduced || rep.FirstReordered != tc.reordered || fp != tc.firstPart {
				t.Fatalf("reproduced %d, reordered at %d, first part %d; want %d, %d, %d", rep.Reproduced, rep.FirstReordered, fp,
					tc.reproduced, tc.reordered, tc.firstPart)
			}
		})
	}
}

// TestCompareReorderedCheckpoint: OpenCode can complete a response's
// text and its tool call in either order (seen under load), so the write's
// checkpoint lands on part 1 in one run and part 2 in the other. The
// response is the same parts and ends with the same tree: reproduced. A
// different tree at the response end is still a difference.
func TestCompareReorderedCheckpoint(t *testing.T) {
	w := func(commit string) ocPart {
		return ocPart{tool: "write", input: `{"filePath":"build.sh","content":"x"}`, commit: commit}
	}
	source := []ocPart{{text: "Go."}, w("s2"), {text: "Done."}}
	rerun := []ocPart{w("r1"), {text: "Go."}, {text: "Done."}}
	calls := writeCalls(t, 0, 2)
	for _, tc := range []struct {
		name       string
		rerunTree  string
		reproduced int
		firstTree  int
	}{
		{name: "same tree", rerunTree: "T", reproduced: 3},
		{name: "other tree", rerunTree: "U", reproduced: 0, firstTree: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := Side{ID: "src", Trace: writeTrace(t, "src", source), Bundles: []string{"src"}, Calls: calls}
			re := Side{ID: "re", Trace: writeTrace(t, "re", rerun), Bundles: []string{"re"}}
			rep, err := Compare(t.Context(), src, re, 0, func(_ context.Context, b []string) (Trees, func(), error) {
				if b[0] == "src" {
					return trees{"s2": "T"}, func() {}, nil
				}
				return trees{"r1": tc.rerunTree}, func() {}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			ft := 0
			if rep.FirstTree != nil {
				ft = rep.FirstTree.Part
			}
			if rep.Reproduced != tc.reproduced || rep.FirstReordered != 1 || rep.FirstPart != nil || ft != tc.firstTree ||
				(tc.firstTree == 0 && rep.FirstCheckpoint != nil) {
				t.Fatalf("%s (reordered at %d, first tree %d, first checkpoint %+v); want reproduced %d, reordered at 1, first tree %d",
					rep.Summary(), rep.FirstReordered, ft, rep.FirstCheckpoint, tc.reproduced, tc.firstTree)
			}
		})
	}
}
