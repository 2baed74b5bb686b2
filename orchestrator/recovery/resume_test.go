package recovery

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/trajlab/traj/orchestrator"
	"github.com/trajlab/traj/orchestrator/folder"
	"github.com/trajlab/traj/orchestrator/launch"
	"github.com/trajlab/traj/trace"
)

// TestRecordedUsageIncludesSessionEnd: a trajectory's totals include the
// model calls reported after its last counted part (only session_end
// carries them), so a resumed run continues from session_end's totals,
// not from the sum of the parts, and its final totals are not
// under-reported.
func TestRecordedUsageIncludesSessionEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent_trace.json")
	w, err := trace.Create(path, trace.Header{TrajectoryID: "usage", SessionID: "ses", Agent: "opencode",
		AgentModel: "scripted/demo", StartedAt: "2026-11-22T10:00:00.000000Z"}, trace.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.BeginTurn(trace.TurnStart{Turn: 1, Timestamp: "2026-11-22T10:00:01.000000Z", Prompt: "go"}); err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 2; n++ {
		tok, cost := trace.Tokens{Input: 100, Output: 10}, 0.5
		gt := []trace.GroundTruth{{Part: n, Commit: "c1", Sampled: n == 1, Passed: int64(n), Suites: []trace.SuiteCount{}}}
		if err := w.AppendPart(&trace.Part{Part: n, Timestamp: "2026-11-22T10:00:02.000000Z", GitCommit: "c1",
			PartType: "text", Tokens: &tok, Cost: &cost, GroundTruth: gt}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.EndTurn(trace.TurnEnd{EndedAt: "2026-11-22T10:00:03.000000Z"}); err != nil {
		t.Fatal(err)
	}
	// The turn's last model call came after part 2: 300 more input tokens.
	endTok, endCost := trace.Tokens{Input: 500, Output: 30}, 1.5
	if err := w.Finish(trace.SessionEnd{Reason: trace.EndPartLimit, EndedAt: "2026-11-22T10:00:04.000000Z",
		FinalGitCommit: "c1", Tokens: &endTok, Cost: &endCost,
		GroundTruth: []trace.GroundTruth{{Part: 2, Commit: "c2", Passed: 3, Suites: []trace.SuiteCount{}}}}, map[string]string{}); err != nil {
		t.Fatal(err)
	}
	sum, err := scanTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := sum.usage.Tokens(); got == nil || *got != endTok {
		t.Errorf("resumed tokens %+v, want session_end's %+v", got, endTok)
	}
	if got := sum.usage.Cost(); got == nil || *got != endCost {
		t.Errorf("resumed cost %v, want session_end's %v", got, endCost)
	}
	if sum.parts != 2 || sum.turns != 1 || !sum.finished {
		t.Errorf("summary %+v", sum)
	}
	// The ground truth a resumed run carries on from (parts' and
	// session_end's, in order).
	var passed []int64
	for _, g := range sum.groundTruth {
		passed = append(passed, g.Passed)
	}
	if !reflect.DeepEqual(passed, []int64{1, 2, 3}) {
		t.Errorf("recorded ground truth passed %v, want [1 2 3]", passed)
	}
}

// TestResumeRemembersRunOptions: options not given to --resume are the
// ones run.json recorded; given ones win; the script of another model is
// not reused.
func TestResumeRemembersRunOptions(t *testing.T) {
	st := folder.RunState{Model: "scripted/demo", MaxParts: 40, TimeoutSec: 180, Script: "/s/demo.jsonl",
		BaseURL: "http://127.0.0.1:9/v1", APIKeyEnvs: []string{"KEY"}, HarnessBin: "/bin/opencode", TestsDir: "/fixtures",
		Sandbox: json.RawMessage(`{"provider":"bwrap","network":"gateways"}`)}
	bwrap := launch.SandboxOptions{Provider: "bwrap", Network: "gateways"}
	tests := []struct {
		name string
		in   orchestrator.Options
		want orchestrator.Options
	}{
		{"nothing given", orchestrator.Options{},
			orchestrator.Options{Model: "scripted/demo", MaxParts: 40, Timeout: 180 * time.Second, Script: "/s/demo.jsonl",
				BaseURL: "http://127.0.0.1:9/v1", APIKeyEnvs: []string{"KEY"}, AgentBin: "/bin/opencode", TestsDir: "/fixtures", Sandbox: bwrap}},
		{"given ones win", orchestrator.Options{MaxParts: 60, Script: "/s/other.jsonl", TestsDir: "/t", Sandbox: launch.SandboxOptions{Provider: "container"}},
			orchestrator.Options{Model: "scripted/demo", MaxParts: 60, Timeout: 180 * time.Second, Script: "/s/other.jsonl",
				BaseURL: "http://127.0.0.1:9/v1", APIKeyEnvs: []string{"KEY"}, AgentBin: "/bin/opencode", TestsDir: "/t",
				Sandbox: launch.SandboxOptions{Provider: "container", Network: "gateways"}}},
		{"another model", orchestrator.Options{Model: "myprov/m"},
			orchestrator.Options{Model: "myprov/m", MaxParts: 40, Timeout: 180 * time.Second,
				APIKeyEnvs: []string{"KEY"}, AgentBin: "/bin/opencode", TestsDir: "/fixtures", Sandbox: bwrap}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := remembered(tt.in, nil, st)
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v, %v\nwant %+v", got, err, tt.want)
			}
		})
	}
	// A run.json whose sandbox options do not decode is refused, not
	// resumed in another sandbox than the one it asked for.
	st.Sandbox = json.RawMessage(`{"provider":3}`)
	if _, err := remembered(orchestrator.Options{}, nil, st); err == nil || !strings.Contains(err.Error(), "sandbox options") {
		t.Errorf("undecodable sandbox options: %v", err)
	}
}
