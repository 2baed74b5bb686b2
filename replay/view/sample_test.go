package view

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/githistory"
	"github.com/trajlab/traj/replay/replaytest"
	"github.com/trajlab/traj/sandbox/gateway/model"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/tracetest"
)

// xssText is agent text that would run script if any page put it into
// HTML: the browser test asserts window.__pwned stays undefined.
const xssText = `<script>window.__pwned = "script"</script><img src=x onerror="window.__pwned = 'img'"><svg onload="window.__pwned='svg'"></svg>`

// sampleChanges is a small C-compiler-like history: build.sh appears,
// a bug (broken.txt) is fixed, re-introduced by a regression, fixed again.
func sampleChanges(regress bool) []replaytest.Change {
	ch := []replaytest.Change{
		{Write: map[string]string{"build.sh": replaytest.BuildScript, "broken.txt": "ret42 add loop\n", "README.md": "# tiny compiler\n"}},
		{},
		{Write: map[string]string{"src/lexer.c": "int lex(void) { return 0; }\n", "broken.txt": "ret42 loop\n"},
			Calls: []trace.EnvoiCall{tracetest.RunTests("basics", 1, 1)}},
		{Write: map[string]string{"broken.txt": "loop\n"}, Calls: []trace.EnvoiCall{tracetest.RunTests("basics", 2, 0)}},
		{},
		{Write: map[string]string{"broken.txt": "\n", "src/parser.c": "int parse(void) { return 1; }\n"}, Calls: []trace.EnvoiCall{tracetest.RunTests("extra", 1, 0)}},
	}
	if regress {
		ch = append(ch,
			replaytest.Change{Write: map[string]string{"broken.txt": "add\n"}},
			replaytest.Change{Write: map[string]string{"broken.txt": "\n", "src/lexer.c": "int lex(void) { return 1; }\n"}, Calls: []trace.EnvoiCall{tracetest.RunTests("basics", 2, 0)}},
		)
	}
	return ch
}

// dress gives the parts of tr OpenCode-shaped content: reasoning, text
// and tool parts, a sub-agent session, model calls. Text comes from say.
func dress(tr *trace.Trace, say func(n int) string) {
	root := tr.SessionID
	sub := "ses_sub_" + tr.TrajectoryID
	for ti := range tr.Turns {
		for pi := range tr.Turns[ti].Parts {
			p := &tr.Turns[ti].Parts[pi]
			n := p.Part
			p.SessionID = root
			msg, _ := json.Marshal(map[string]any{"id": p.MessageID, "role": "assistant", "sessionID": root, "modelID": "tiny", "providerID": "scripted",
				"cost": 0.001, "finish": "tool-calls", "tokens": map[string]any{"input": 1000, "output": 200, "reasoning": 10, "cache": map[string]int{"read": 800, "write": 0}},
				"time": map[string]int64{"created": int64(n) * 60000, "completed": int64(n)*60000 + 4200}})
			p.NewMessages = []json.RawMessage{msg}
			var c map[string]any
			switch {
			case n == 3:
				si, _ := json.Marshal(map[string]any{"id": sub, "parentID": root, "title": "explore the lexer " + say(n)})
				p.Sessions = []json.RawMessage{si}
				fallthrough
			case n == 4:
				p.SessionID = sub
				c = map[string]any{"type": "tool", "tool": "write", "sessionID": sub, "state": map[string]any{"status": "completed",
					"input": map[string]any{"filePath": "src/lexer.c", "content": "/* " + say(n) + " */\nint lex(void);\n"}, "output": "wrote src/lexer.c " + say(n), "title": "src/lexer.c"}}
			case p.RepoCheckpoint != nil && p.RepoCheckpoint.Committed:
				c = map[string]any{"type": "tool", "tool": "bash", "sessionID": root, "state": map[string]any{"status": "completed",
					"input": map[string]any{"command": "sh build.sh && ./cc t.c # " + say(n)}, "output": "ok\n" + say(n), "title": "build and run"}}
			case n%2 == 0:
				c = map[string]any{"type": "reasoning", "text": "Thinking about part " + fmt.Sprint(n) + ". " + say(n)}
			default:
				c = map[string]any{"type": "text", "text": "Part " + fmt.Sprint(n) + ": " + say(n)}
			}
			p.Content, _ = json.Marshal(c)
			p.PartType, _ = c["type"].(string)
			p.Tool, _ = c["tool"].(string)
			if p.PartType == "tool" {
				before, _ := json.Marshal(map[string]any{"type": "reasoning", "text": "I should run it. " + say(n)})
				p.OtherParts = []json.RawMessage{before}
			}
		}
	}
}

// sampleStore makes a store holding five finished trajectories: alpha
// (with a regression) and beta, both evaluated for real with the tiny
// environment, evil, whose agent text is a script injection, and demo and
// demo-ground-truth, recorded with the real OpenCode (addDemo).
func sampleStore(t testing.TB, dir string) {
	t.Helper()
	ctx := context.Background()
	addDemo(t, dir)
	for _, s := range []struct {
		id, model string
		regress   bool
		evaluate  bool
		say       func(int) string
	}{
		{"alpha", "scripted/tiny", true, true, func(n int) string { return fmt.Sprintf("working on the lexer (%d)", n) }},
		{"beta", "scripted/other", false, true, func(n int) string { return fmt.Sprintf("trying the parser first (%d)", n) }},
		{"evil", "scripted/" + xssText, false, false, func(int) string { return xssText }},
	} {
		tj := replaytest.BuildSpec(t, replaytest.Spec{ID: s.id, Changes: sampleChanges(s.regress), TurnSize: 3, TrajFields: true, Model: s.model, MessagePrefix: s.id + " "})
		tr := tj.Trace
		if s.id == "evil" {
			tr.Task = xssText
		}
		dress(tr, s.say)
		out := filepath.Join(dir, store.TrajectoriesDir, s.id)
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
		data, err := json.MarshalIndent(tr, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(out, store.TraceName), data)
		bundle, err := os.ReadFile(tj.BundlePath)
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(out, store.BundleName), bundle)
		write(t, filepath.Join(out, store.ModelCallsName), gatewayRecord(t, tr, s.say))
		if !s.evaluate {
			continue
		}
		h, err := githistory.Open(ctx, tj.BundlePath)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := replay.Evaluate(ctx, tr, h, replaytest.TinyEnv{}, replay.EvaluateOptions{TestPaths: []string{"basics", "extra"}, Workers: 2})
		h.Close()
		if err != nil {
			t.Fatal(err)
		}
		data, err = replay.MarshalIndent(ev)
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(out, store.EvaluationName), data)
	}
}

// gatewayRecord is a model gateway record with one call per part, linked
// to the part's message by its response id.
func gatewayRecord(t testing.TB, tr *trace.Trace, say func(int) string) []byte {
	t.Helper()
	var b []byte
	n := 0
	for _, turn := range tr.Turns {
		for _, p := range turn.Parts {
			n++
			before := n - 1
			cost := 0.001
			ttfb := 120.0
			// A streamed response, verbatim SSE text as the gateway keeps it.
			chunk, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"delta": map[string]string{"content": say(n)}}}})
			resp := "data: " + string(chunk) + "\n\ndata: [DONE]\n\n"
			line, err := json.Marshal(model.Call{Seq: n, StartedAt: p.Timestamp, LatencyMS: 4200, FirstByteMS: &ttfb, API: "chat.completions", Method: "POST",
				Path: "/v1/chat/completions", Status: 200, Model: tr.AgentModel, Request: model.Digest{SHA256: "00", Bytes: 1000 * n},
				ResponseID: p.MessageID, Tokens: &trace.Tokens{Input: 1000, Output: 200}, Cost: &cost, PartsBefore: &before, Response: resp})
			if err != nil {
				t.Fatal(err)
			}
			b = append(append(b, line...), '\n')
		}
	}
	return b
}

// demoDir is a trajectory recorded by `make demo` (real OpenCode, the
// scripted model) with its evaluation, kept by the export tests.
const demoDir = "../export/testdata/demo"

// groundTruthDemoDir is the demo recorded by `traj run` with ground truth
// (results on parts; the run ended before its final tree's result landed)
// and no evaluation.json: its score must come from ground truth, not from
// the agent's run_tests calls.
const groundTruthDemoDir = "testdata/demo-ground-truth"

// addDemo copies the recorded demo trajectories into the store as "demo"
// (with its evaluation) and "demo-ground-truth" (without).
func addDemo(t testing.TB, dir string) {
	t.Helper()
	for _, d := range []struct {
		id, from string
		names    []string
	}{
		{"demo", demoDir, []string{store.TraceName, store.BundleName, store.EvaluationName}},
		{"demo-ground-truth", groundTruthDemoDir, []string{store.TraceName, store.BundleName}},
	} {
		out := filepath.Join(dir, store.TrajectoriesDir, d.id)
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range d.names {
			data, err := os.ReadFile(filepath.Join(d.from, name))
			if err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(out, name), data)
		}
	}
}

func write(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestWriteSample writes the sample store to TRAJ_VIEW_SAMPLE_DIR, to look
// at with `traj view --store DIR`; without it, it does nothing.
func TestWriteSample(t *testing.T) {
	dir := os.Getenv("TRAJ_VIEW_SAMPLE_DIR")
	if dir == "" {
		t.Skip("set TRAJ_VIEW_SAMPLE_DIR")
	}
	sampleStore(t, dir)
}
