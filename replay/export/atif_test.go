package export_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trajlab/traj/replay/export"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/tracetest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func exportATIF(t *testing.T, refs ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "atif")
	sum, err := export.Run(context.Background(), refs, export.Options{Format: export.FormatATIF, Out: out, StoreURL: t.TempDir(), Version: "test"})
	if err != nil {
		t.Fatalf("export: %v", err)
	}
	if sum.Exported != len(refs) {
		t.Fatalf("summary %+v", sum)
	}
	return out
}

func checkATIF(t *testing.T, data []byte) {
	t.Helper()
	probs, err := export.CheckATIF(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probs {
		t.Errorf("ATIF rule broken: %s", p)
	}
}

// atifDoc is the part of an ATIF document the tests read.
type atifDoc struct {
	TrajectoryID string `json:"trajectory_id"`
	Entries      []struct {
		Source    string `json:"source"`
		ToolCalls []struct {
			Name string `json:"function_name"`
		} `json:"tool_calls"`
		Observation *struct {
			Results []struct {
				Refs []struct {
					TrajectoryID string `json:"trajectory_id"`
				} `json:"subagent_trajectory_ref"`
			} `json:"results"`
		} `json:"observation"`
		Metrics *struct {
			Extra struct {
				Tokens trace.Tokens `json:"traj_tokens"`
			} `json:"extra"`
			Cost float64 `json:"cost_usd"`
		} `json:"metrics"`
		Extra struct {
			Traj struct {
				Parts []struct {
					Part int `json:"part"`
				} `json:"parts"`
			} `json:"traj"`
		} `json:"extra"`
	} `json:"steps"`
	Final struct {
		TotalEntries int `json:"total_steps"`
		Extra        struct {
			Tokens trace.Tokens `json:"traj_tokens"`
		} `json:"extra"`
		Cost float64 `json:"total_cost_usd"`
	} `json:"final_metrics"`
	Subagents []atifDoc `json:"subagent_trajectories"`
}

// TestATIFDemo exports the demo trajectory (real OpenCode, scripted demo
// model, a sub-agent) and checks it against ATIF's rules, against the
// trace, and against the golden file (go test -update rewrites it).
func TestATIFDemo(t *testing.T) {
	out := exportATIF(t, filepath.Join("testdata", "demo"))
	data, err := os.ReadFile(filepath.Join(out, "demo", export.ATIFName))
	if err != nil {
		t.Fatal(err)
	}
	checkATIF(t, data)

	var doc atifDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join("testdata", "demo", store.TraceName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := trace.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	var u trace.Usage
	toolParts, parts := 0, 0
	for _, turn := range tr.Turns {
		for i := range turn.Parts {
			u.AddPart(&turn.Parts[i])
			parts++
			if turn.Parts[i].PartType == "tool" {
				toolParts++
			}
		}
	}
	u.End(tr.SessionEnd)

	// Every part is in exactly one entry; every tool part is a tool call;
	// the entries' usage adds up to the trajectory's totals.
	seen := map[int]int{}
	calls, users := 0, 0
	var sum trace.Tokens
	var cost float64
	var walk func(d *atifDoc, root bool)
	walk = func(d *atifDoc, root bool) {
		for _, e := range d.Entries {
			for _, p := range e.Extra.Traj.Parts {
				seen[p.Part]++
			}
			calls += len(e.ToolCalls)
			if root && e.Source == "user" {
				users++
			}
			if e.Metrics != nil {
				sum.Add(e.Metrics.Extra.Tokens)
				cost += e.Metrics.Cost
			}
		}
		for i := range d.Subagents {
			walk(&d.Subagents[i], false)
		}
	}
	walk(&doc, true)
	for p := 1; p <= parts; p++ {
		if seen[p] != 1 {
			t.Errorf("part %d is in %d entries, want 1", p, seen[p])
		}
	}
	if len(seen) != parts {
		t.Errorf("%d parts in the document, %d in the trace", len(seen), parts)
	}
	if calls != toolParts {
		t.Errorf("%d tool calls, %d tool parts in the trace", calls, toolParts)
	}
	if users != len(tr.Turns) {
		t.Errorf("%d user entries, %d turns", users, len(tr.Turns))
	}
	if want := *u.Tokens(); sum != want || doc.Final.Extra.Tokens != want {
		t.Errorf("entries' tokens %+v, final_metrics %+v, trace totals %+v", sum, doc.Final.Extra.Tokens, want)
	}
	if want := *u.Cost(); abs(cost-want) > 1e-9 || abs(doc.Final.Cost-want) > 1e-9 {
		t.Errorf("entries' cost %v, final_metrics %v, trace total %v", cost, doc.Final.Cost, want)
	}
	if doc.Final.TotalEntries != len(doc.Entries) {
		t.Errorf("total_steps %d, entries %d", doc.Final.TotalEntries, len(doc.Entries))
	}
	// The demo's one sub-agent (the task that writes README.md) is
	// embedded and referenced from the root's task call.
	if len(doc.Subagents) != 1 {
		t.Fatalf("%d sub-agent trajectories, want 1", len(doc.Subagents))
	}
	refs := 0
	for _, e := range doc.Entries {
		if e.Observation == nil {
			continue
		}
		for _, r := range e.Observation.Results {
			for _, ref := range r.Refs {
				if ref.TrajectoryID == doc.Subagents[0].TrajectoryID {
					refs++
				}
			}
		}
	}
	if refs != 1 {
		t.Errorf("the sub-agent is referenced %d times, want 1", refs)
	}

	golden := filepath.Join("testdata", "demo.atif.json")
	if *update {
		if err := os.WriteFile(golden, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./replay/export -run TestATIFDemo -update)", err)
	}
	if !bytes.Equal(data, want) {
		t.Errorf("ATIF export of the demo differs from %s (if intended: go test ./replay/export -run TestATIFDemo -update)", golden)
	}
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

// TestATIFOtherTraces: synthetic traces, an unfinished one and one in the
// original recorder's shape (no part content) also give valid documents.
func TestATIFOtherTraces(t *testing.T) {
	dir := t.TempDir()
	synth := filepath.Join(dir, "synth")
	if err := os.MkdirAll(synth, 0o755); err != nil {
		t.Fatal(err)
	}
	tracetest.WriteDir(t, synth, tracetest.Spec{TrajectoryID: "synth", Turns: []int{2, 0, 3}, PartSize: 2000, End: trace.EndSolved})
	open := filepath.Join(dir, "open")
	if err := os.MkdirAll(open, 0o755); err != nil {
		t.Fatal(err)
	}
	tracetest.WriteDir(t, open, tracetest.Spec{TrajectoryID: "open", Turns: []int{3}})
	orig := filepath.Join(dir, "orig")
	if err := os.MkdirAll(orig, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(orig, store.TraceName), tracetest.OriginalTrace(), 0o644); err != nil {
		t.Fatal(err)
	}
	out := exportATIF(t, synth, open, orig)
	for _, id := range []string{"synth", "open", "orig"} {
		data, err := os.ReadFile(filepath.Join(out, id, export.ATIFName))
		if err != nil {
			t.Fatal(err)
		}
		checkATIF(t, data)
		var doc atifDoc
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.Entries) < 2 || doc.Entries[0].Source != "user" {
			t.Errorf("%s: %d entries, first %q", id, len(doc.Entries), doc.Entries[0].Source)
		}
	}
}

// TestCheckATIFCatches: each broken rule is reported.
func TestCheckATIFCatches(t *testing.T) {
	valid := `{"schema_version":"ATIF-v1.7","agent":{"name":"opencode","version":"1"},"steps":[
		{"step_id":1,"source":"user","message":"hi","timestamp":"2026-11-22T10:00:00Z"},
		{"step_id":2,"source":"agent","message":"","tool_calls":[{"tool_call_id":"c1","function_name":"task","arguments":{}}],
		 "observation":{"results":[{"source_call_id":"c1","content":"ok","subagent_trajectory_ref":[{"trajectory_id":"s1"}]}]},
		 "metrics":{"prompt_tokens":1}}],
		"final_metrics":{"total_steps":2},
		"subagent_trajectories":[{"schema_version":"ATIF-v1.7","trajectory_id":"s1","agent":{"name":"opencode","version":"1"},
		 "steps":[{"step_id":1,"source":"agent","message":"done"}]}]}`
	if probs, err := export.CheckATIF(strings.NewReader(valid)); err != nil || len(probs) > 0 {
		t.Fatalf("valid document: %v %v", probs, err)
	}
	for _, tt := range []struct{ name, from, to, want string }{
		{"version", `"ATIF-v1.7","agent"`, `"ATIF-v1.6","agent"`, "schema_version"},
		{"ids not sequential", `"step_id":2`, `"step_id":3`, "sequential"},
		{"bad source", `"source":"user"`, `"source":"human"`, "source"},
		{"timestamp", `2026-11-22T10:00:00Z`, `22/11/2026 10:00`, "ISO 8601"},
		{"agent-only on user", `"message":"hi",`, `"message":"hi","reasoning_content":"x",`, "only allowed on agent"},
		{"observation of another call", `"source_call_id":"c1"`, `"source_call_id":"c9"`, "not a tool call of this entry"},
		{"dangling sub-agent ref", `"subagent_trajectory_ref":[{"trajectory_id":"s1"}]`, `"subagent_trajectory_ref":[{"trajectory_id":"s2"}]`, "names no embedded"},
		{"embedded without id", `"trajectory_id":"s1","agent"`, `"agent"`, "required on an embedded"},
		{"total_steps", `"total_steps":2`, `"total_steps":5`, "total_steps"},
		{"duplicate call id", `"arguments":{}}]`, `"arguments":{}},{"tool_call_id":"c1","function_name":"x","arguments":{}}]`, "repeated"},
		{"no agent version", `"version":"1"},"steps"`, `"version":""},"steps"`, "agent"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc := strings.Replace(valid, tt.from, tt.to, 1)
			if doc == valid {
				t.Fatalf("mutation %q not applied", tt.from)
			}
			probs, err := export.CheckATIF(strings.NewReader(doc))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(probs, "\n"), tt.want) {
				t.Errorf("problems %q do not mention %q", probs, tt.want)
			}
		})
	}
}
