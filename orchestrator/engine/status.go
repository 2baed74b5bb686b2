package engine

import (
	"encoding/json"
	"strings"

	"github.com/trajlab/traj/orchestrator/task"
	"github.com/trajlab/traj/sandbox/agent"
	"github.com/trajlab/traj/trace"
)

// isRunTests reports whether a tool name is the environment's run_tests
// tool as OpenCode exposes MCP tools ("<server>_<tool>").
func isRunTests(tool string) bool {
	return tool == "run_tests" || strings.HasSuffix(tool, "_run_tests")
}

// envoiCall builds the record of a completed run_tests call: the tool's
// JSON answer when it gave one, otherwise the error it reported. A harness
// that truncated a long output saved the whole of it (OutputFile);
// readFull, when set, reads that file so the record holds the complete
// answer.
//
// Through the tool gateway the agent is told what its feedback level
// allows and its answer carries a tool_call_id; full, when set, returns
// the complete answer filed under that id, which is what the trace keeps.
func envoiCall(tc *agent.ToolCall, ts string, readFull func(path string) ([]byte, error), full func(id string) ([]byte, bool)) trace.EnvoiCall {
	call := trace.EnvoiCall{CallID: tc.CallID, Timestamp: ts}
	var in struct {
		TestPath string `json:"test_path"`
		Path     string `json:"path"`
	}
	_ = json.Unmarshal(tc.Input, &in)
	call.Path = in.TestPath
	if call.Path == "" {
		call.Path = in.Path
	}
	switch tc.Status {
	case agent.ToolCompleted:
	case agent.ToolError:
		msg := tc.Error
		call.Error = &msg
		return call
	default:
		msg := "tool call has no result"
		call.Error = &msg
		return call
	}
	output := tc.Output
	if tc.OutputFile != "" && readFull != nil {
		full, err := readFull(tc.OutputFile)
		if err != nil {
			msg := "run_tests answer truncated by the agent and its full output is unreadable: " + err.Error()
			call.Error = &msg
			return call
		}
		output = string(full)
	}
	gatewayID := ""
	if full != nil {
		var ref struct {
			ToolCallID string `json:"tool_call_id"`
		}
		if json.Unmarshal([]byte(strings.TrimSpace(output)), &ref) == nil && ref.ToolCallID != "" {
			if b, ok := full(ref.ToolCallID); ok {
				output = string(b)
				gatewayID = ref.ToolCallID
			}
		}
	}
	var got trace.EnvoiCall
	if err := json.Unmarshal([]byte(strings.TrimSpace(output)), &got); err != nil || got.Path == "" && got.Result == nil {
		msg := "run_tests answer is not the expected JSON: " + truncate(output, 300)
		call.Error = &msg
		return call
	}
	got.CallID = tc.CallID
	got.ToolCallID = gatewayID
	if got.Timestamp == "" {
		got.Timestamp = ts
	}
	if got.Path == "" {
		got.Path = call.Path
	}
	return got
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// testStatus is the latest run_tests result of each required test path.
type testStatus struct {
	paths  []string
	latest map[string]task.PathStatus
}

func newTestStatus(paths []string) *testStatus {
	return &testStatus{paths: paths, latest: map[string]task.PathStatus{}}
}

// observe records a call; it returns the call's status in brief. A call
// on a path that contains a required path ("all", or "basics" for
// "basics/smoke") also updates that required path, from the cases whose
// names fall under it.
func (s *testStatus) observe(c trace.EnvoiCall) task.PathStatus {
	st := task.PathStatus{Path: c.Path, Seen: true}
	if c.Error != nil && *c.Error != "" {
		st.Error = *c.Error
	} else if passed, failed, total, ok := c.Counts(); !ok {
		st.Error = "unreadable result"
	} else {
		st.Passed, st.Failed, st.Total = passed, failed, total
	}
	s.latest[c.Path] = st
	if st.Error != "" {
		return st
	}
	// The cases are read only when the call covers a required sub-path.
	var res struct {
		Cases []struct {
			Name   string `json:"name"`
			Passed bool   `json:"passed"`
		} `json:"cases"`
	}
	casesRead := false
	for _, p := range s.paths {
		if p == c.Path || !(c.Path == "all" || strings.HasPrefix(p, c.Path+"/")) {
			continue
		}
		if !casesRead {
			_ = json.Unmarshal(c.Result, &res) // Counts read it: it is valid JSON
			casesRead = true
		}
		sub := task.PathStatus{Path: p, Seen: true}
		for _, cs := range res.Cases {
			if strings.HasPrefix(cs.Name, p+"/") {
				sub.Total++
				if cs.Passed {
					sub.Passed++
				} else {
					sub.Failed++
				}
			}
		}
		if sub.Total > 0 {
			s.latest[p] = sub
		}
	}
	return st
}

// list returns the status of every required path, in task order.
func (s *testStatus) list() []task.PathStatus {
	out := make([]task.PathStatus, len(s.paths))
	for i, p := range s.paths {
		if st, ok := s.latest[p]; ok {
			out[i] = st
		} else {
			out[i] = task.PathStatus{Path: p}
		}
	}
	return out
}

// solved reports whether every required path passed in its latest run.
func (s *testStatus) solved() bool {
	for _, st := range s.list() {
		if !st.Solved() {
			return false
		}
	}
	return len(s.paths) > 0
}
