package scripted

import (
	"encoding/json"
	"os"
	"testing"
)

// TestDemoScriptsFitHarnesses checks the Claude Code and Codex demos
// against the tools those harnesses really send (testdata, captured from
// Claude Code 2.1.330 and Codex 0.169.0 with the tests MCP server), without
// starting them: every call names an offered tool with arguments its
// schema accepts, sub-agents (Claude Code's Agent tool) come back to their
// parent, and each demo makes exactly demoParts counted parts (each
// reasoning, text and tool call is one part in both harnesses) over at
// least two turns with the tests run between rounds, the last one its
// closing message: make demo's budget ends the run there, with exit 0,
// once the agent finished its work (a shorter script ran out of answers
// and ended agent_error).
func TestDemoScriptsFitHarnesses(t *testing.T) {
	// demoParts is make demo's --max-parts.
	const demoParts = 50
	for _, tt := range []struct {
		script, tools string
		view          func(tools json.RawMessage) request
		runTests      string
		subAgent      string
	}{
		{"demo/c-compiler-claude-code.jsonl", "testdata/claude-code-2.1.330-tools.json", func(tools json.RawMessage) request {
			var req messagesRequest
			req.Model = "demo"
			_ = json.Unmarshal(tools, &req.Tools)
			return req.view()
		}, "mcp__tests__run_tests", "Agent"},
		{"demo/c-compiler-codex.jsonl", "testdata/codex-0.169.0-tools.json", func(tools json.RawMessage) request {
			var req responsesRequest
			req.Model = "demo"
			_ = json.Unmarshal(tools, &req.Tools)
			return req.view()
		}, "run_tests", ""},
	} {
		t.Run(tt.script, func(t *testing.T) {
			s, err := Load(tt.script)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(tt.tools)
			if err != nil {
				t.Fatal(err)
			}
			var sets struct {
				Agent    json.RawMessage `json:"agent"`
				Subagent json.RawMessage `json:"subagent"`
			}
			if err := json.Unmarshal(raw, &sets); err != nil {
				t.Fatal(err)
			}
			depth, parts, tests, turns, subs := 0, 0, 0, 0, 0
			for _, r := range s.Responses {
				tools := sets.Agent
				if depth > 0 {
					tools = sets.Subagent
				}
				checked := r
				if r.Expect != nil && r.Expect.Contains != "" {
					e := *r.Expect // tool outputs are unknown without running the harness
					e.Contains = ""
					checked.Expect = &e
				}
				if err := check(checked, tt.view(tools)); err != nil {
					t.Errorf("%s:%d: %v", s.Name, r.Line, err)
				}
				if r.Reasoning != "" {
					parts++
				}
				if r.Text != "" {
					parts++
				}
				for _, tc := range r.Tools {
					parts++
					switch tc.Name {
					case tt.runTests:
						tests++
					case tt.subAgent:
						var a struct {
							RunInBackground *bool `json:"run_in_background"`
						}
						_ = json.Unmarshal(tc.Args, &a)
						if a.RunInBackground == nil || *a.RunInBackground {
							t.Errorf("%s:%d: a sub-agent must run in the foreground (run_in_background false) or the script's order breaks", s.Name, r.Line)
						}
						depth++
						subs++
					}
				}
				if len(r.Tools) == 0 {
					if depth > 0 {
						depth--
					} else {
						turns++
					}
				}
			}
			if depth != 0 {
				t.Errorf("a sub-agent never finished (depth %d)", depth)
			}
			if parts != demoParts || turns < 2 || tests < 3 {
				t.Errorf("%d parts over %d turns with %d test runs; want %d (make demo's --max-parts) over ≥ 2 with ≥ 3", parts, turns, tests, demoParts)
			}
			// The run ends at the budget with the agent's last message, as
			// a model ends a task: a text answer without tool calls.
			if last := s.Responses[len(s.Responses)-1]; len(last.Tools) > 0 || last.Text == "" {
				t.Errorf("%s:%d: the last response must be the agent's closing text, without tool calls", s.Name, last.Line)
			}
			if tt.subAgent != "" && subs == 0 {
				t.Errorf("no %s sub-agent", tt.subAgent)
			}
			t.Logf("%d parts, %d turns, %d test runs, %d sub-agents", parts, turns, tests, subs)
		})
	}
}
