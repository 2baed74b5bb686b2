package launch

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/trajlab/traj/trace"
)

// TestScriptPlayedRaceLagged attacks a fork that continues its source's
// script with parts_before that lag (failure injection: the harness
// asked before traj recorded the part that ended, as Codex does under
// load): the script lines played before the fork point are counted by
// the trace's part → call attribution (parts 1..4 from call 1, 5..6 from
// call 2, 7..9 from call 3; parts_before say 0, 2 and 5).
func TestScriptPlayedRaceLagged(t *testing.T) {
	dir := t.TempDir()
	var lines []byte
	for i, before := range []int{0, 2, 5} {
		// An error answer plays a script line ("error").
		l, _ := json.Marshal(map[string]any{"seq": i + 1, "status": 500, "method": "POST", "path": "/v1/chat/completions",
			"response": `{"error":{}}`, "parts_before": before})
		lines = append(append(lines, l...), '\n')
	}
	callsPath := filepath.Join(dir, "model_calls.jsonl")
	tr := trace.Trace{TrajectoryID: "src", Agent: "codex", Turns: []trace.Turn{{Turn: 1}}}
	for i, seq := range []int{1, 1, 1, 1, 2, 2, 3, 3, 3} {
		tr.Turns[0].Parts = append(tr.Turns[0].Parts, trace.Part{Part: i + 1, PartType: "text", ModelCall: &trace.PartCall{Seq: seq}})
	}
	b, _ := json.Marshal(tr)
	tracePath := filepath.Join(dir, "agent_trace.json")
	for p, data := range map[string][]byte{callsPath: lines, tracePath: b} {
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ forkAt, want int }{{4, 1}, {6, 2}, {9, 3}} {
		if got, err := scriptPlayed(callsPath, tracePath, tc.forkAt); err != nil || got != tc.want {
			t.Errorf("fork at %d: %d lines played (%v), want %d", tc.forkAt, got, err, tc.want)
		}
	}
}
