package harness_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/trajlab/traj/sandbox/agent"
	"github.com/trajlab/traj/sandbox/harness"
	"github.com/trajlab/traj/trace"
)

var update = flag.Bool("update", false, "rewrite the golden neutral records in testdata")

// neutral is a part's harness-neutral record as a golden file keeps it.
type neutral struct {
	Part      int             `json:"part"`
	Kind      agent.Kind      `json:"kind"`
	Text      string          `json:"text,omitempty"`
	Tool      string          `json:"tool,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Status    string          `json:"status,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	Output    string          `json:"output,omitempty"`
	Error     string          `json:"error,omitempty"`
	SubAgent  string          `json:"sub_agent,omitempty"`
	Files     []string        `json:"files,omitempty"`
	Action    *agent.Action   `json:"action,omitempty"`
	Title     string          `json:"title,omitempty"`
	Timed     bool            `json:"timed,omitempty"`
	ModelCall string          `json:"model_call,omitempty"`
	Sessions  []string        `json:"sessions,omitempty"`
}

// TestReadersOnRecordedTraces reads each harness's reader fixture — a
// trace the current writer recorded with the real harness and the
// scripted model (re-recorded by TestHarnessConformance -update in
// cmd/traj, which also fails when the writer's output drifts from it) —
// and compares every part's neutral record with the golden file.
func TestReadersOnRecordedTraces(t *testing.T) {
	for _, name := range harness.Names() {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", name, "agent_trace.json"))
			if err != nil {
				t.Fatal(err)
			}
			var tr trace.Trace
			if err := json.Unmarshal(b, &tr); err != nil {
				t.Fatal(err)
			}
			if trace.ParseAgent(tr.Agent).Name != name {
				t.Fatalf("fixture recorded by %q", tr.Agent)
			}
			r := harness.Reader(tr.Agent)
			var got []neutral
			for _, tu := range tr.Turns {
				for _, p := range tu.Parts {
					np, ok := r.Part(p.PartID, agent.Kind(p.PartType), p.Content)
					if !ok {
						t.Errorf("part %d: the %s reader does not read its content", p.Part, name)
					}
					if !bytes.Equal(np.Raw, p.Content) {
						t.Errorf("part %d: Raw is not the recorded content verbatim", p.Part)
					}
					if string(np.Kind) != p.PartType {
						t.Errorf("part %d: reader kind %q, recorded part_type %q", p.Part, np.Kind, p.PartType)
					}
					n := neutral{Part: p.Part, Kind: np.Kind, Text: np.Text, Files: np.Files, Title: np.Title, Timed: !np.Start.IsZero()}
					if tc := np.Tool; tc != nil {
						n.Tool, n.CallID, n.Status, n.Input, n.Output, n.Error, n.SubAgent = tc.Name, tc.CallID, string(tc.Status), tc.Input, tc.Output, tc.Error, tc.ChildSessionID
						n.Action = tc.Action
						if p.Tool != "" && tc.Name != p.Tool {
							t.Errorf("part %d: reader tool %q, recorded tool %q", p.Part, tc.Name, p.Tool)
						}
					}
					for _, m := range p.NewMessages {
						if mm, ok := r.Message(m); ok && mm.Call != nil && n.ModelCall == "" {
							n.ModelCall = mm.Call.Model
						}
					}
					for _, s := range p.Sessions {
						if ss, ok := r.Session(s); ok {
							n.Sessions = append(n.Sessions, fmt.Sprintf("%s parent=%s title=%s", ss.ID, ss.ParentID, ss.Title))
						}
					}
					got = append(got, n)
				}
			}
			out, err := json.MarshalIndent(got, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, '\n')
			golden := filepath.Join("testdata", name+".parts.golden.json")
			if *update {
				if err := os.WriteFile(golden, out, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -update writes it)", err)
			}
			if !bytes.Equal(out, want) {
				t.Errorf("neutral records differ from %s (go test -update rewrites it); got:\n%s", golden, out)
			}
		})
	}
}
