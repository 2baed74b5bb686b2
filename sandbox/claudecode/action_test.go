package claudecode

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/trajlab/traj/sandbox/agent"
)

// TestAction reads the arguments of the tools the recorded fixtures do
// not cover (Edit, MultiEdit) and refuses tools it does not know.
func TestAction(t *testing.T) {
	for _, tc := range []struct {
		tool, input string
		want        *agent.Action
	}{
		{"Edit", `{"file_path":"a.c","old_string":"x","new_string":"y","replace_all":true}`,
			&agent.Action{Kind: agent.ActionEdit, Path: "a.c", Edits: []agent.Edit{{Old: "x", New: "y", All: true}}}},
		{"MultiEdit", `{"file_path":"a.c","edits":[{"old_string":"a","new_string":"b"},{"old_string":"c","new_string":"d"}]}`,
			&agent.Action{Kind: agent.ActionEdit, Path: "a.c", Edits: []agent.Edit{{Old: "a", New: "b"}, {Old: "c", New: "d"}}}},
		{"Read", `{"file_path":"a.c"}`, nil},
		{"Edit", `"not an object"`, nil},
	} {
		if got := action(tc.tool, json.RawMessage(tc.input)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("action(%s, %s) = %+v, want %+v", tc.tool, tc.input, got, tc.want)
		}
	}
}
