package wire

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/trajlab/traj/sandbox/agent"
)

// TestAction reads the arguments of the tools the recorded fixtures do
// not cover (Edit, MultiEdit, Grep, TodoWrite, …) and refuses tools it
// does not know.
func TestAction(t *testing.T) {
	for _, tc := range []struct {
		tool, input string
		want        *agent.Action
	}{
		{"Edit", `{"file_path":"a.c","old_string":"x","new_string":"y","replace_all":true}`,
			&agent.Action{Kind: agent.ActionEdit, Path: "a.c", Edits: []agent.Edit{{Old: "x", New: "y", All: true}}}},
		{"MultiEdit", `{"file_path":"a.c","edits":[{"old_string":"a","new_string":"b"},{"old_string":"c","new_string":"d"}]}`,
			&agent.Action{Kind: agent.ActionEdit, Path: "a.c", Edits: []agent.Edit{{Old: "a", New: "b"}, {Old: "c", New: "d"}}}},
		{"Read", `{"file_path":"a.c"}`, &agent.Action{Kind: agent.ActionRead, Path: "a.c"}},
		{"Grep", `{"pattern":"main","path":"src"}`, &agent.Action{Kind: agent.ActionSearch, Pattern: "main", Path: "src"}},
		{"TodoWrite", `{"todos":[]}`, &agent.Action{Kind: agent.ActionTodo}},
		{"mcp__tests__run_tests", `{"test_path":"basics"}`, &agent.Action{Kind: agent.ActionTests, Path: "basics"}},
		{"WebFetch", `{"url":"https://example.com"}`, nil},
		{"Edit", `"not an object"`, nil},
	} {
		if got := action(tc.tool, json.RawMessage(tc.input)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("action(%s, %s) = %+v, want %+v", tc.tool, tc.input, got, tc.want)
		}
	}
}

// TestExitCode: Claude Code's Bash result says a non-zero exit as an
// error opening "Exit code N"; a plain result is 0; another error says
// nothing.
func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		isError bool
		out     string
		want    int // -1: nil
	}{
		{false, "ok\n", 0},
		{true, "Exit code 2\nno such file", 2},
		{true, "Exit code 127", 127},
		{true, "Command timed out after 2m", -1},
		{true, "Exit code x", -1},
	} {
		got := exitCode(tc.isError, tc.out)
		if (got == nil) != (tc.want < 0) || (got != nil && *got != tc.want) {
			t.Errorf("exitCode(%v, %q) = %v, want %d", tc.isError, tc.out, got, tc.want)
		}
	}
}
