package export_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/trajlab/traj/replay/export"
	"github.com/trajlab/traj/trace/store"
)

// The reader fixtures: one trajectory per harness, recorded by today's
// writer with the real binary and the scripted model (cmd/traj's
// TestHarnessConformance re-records them with -update and fails when they
// drift from what the writer makes).
func harnessFixture(name string) string {
	return filepath.Join("..", "..", "sandbox", "harness", "testdata", name, store.TraceName)
}

// TestATIFEveryHarness exports each harness's fixture and checks what a
// reader of ATIF needs: the harness named and versioned, agent messages
// with text, tool calls with a name and arguments, observations with
// content, in the document and its sub-agents' trajectories; the counts
// are the fixtures' own (Codex's silent file writes have no output).
func TestATIFEveryHarness(t *testing.T) {
	for _, tc := range []struct {
		harness, version      string
		msgs, calls, observed int
	}{
		{harness: "opencode", version: "1.18.33", msgs: 3, calls: 4, observed: 4},
		{harness: "claude-code", version: "2.1.330", msgs: 6, calls: 16, observed: 16},
		{harness: "codex", version: "0.169.0", msgs: 3, calls: 16, observed: 6},
	} {
		t.Run(tc.harness, func(t *testing.T) {
			out := exportATIF(t, harnessFixture(tc.harness))
			files, _ := filepath.Glob(filepath.Join(out, "*", export.ATIFName))
			if len(files) != 1 {
				t.Fatalf("ATIF documents written: %v, want one", files)
			}
			data, err := os.ReadFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			checkATIF(t, data)
			var doc harnessATIF
			if err := json.Unmarshal(data, &doc); err != nil {
				t.Fatal(err)
			}
			if doc.Agent.Name != tc.harness || doc.Agent.Version != tc.version {
				t.Errorf("agent = %+v, want %s %s", doc.Agent, tc.harness, tc.version)
			}
			msgs, calls, observed := doc.count(t)
			if msgs != tc.msgs {
				t.Errorf("%d agent messages with text, want %d (a message joins the parts of one model response)", msgs, tc.msgs)
			}
			if calls != tc.calls || observed != tc.observed {
				t.Errorf("tool calls %d with %d observations, want %d with %d", calls, observed, tc.calls, tc.observed)
			}
		})
	}
}

// harnessATIF is what TestATIFEveryHarness reads of a document, its
// sub-agents' trajectories included.
type harnessATIF struct {
	Agent struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"agent"`
	Entries []struct {
		Source    string `json:"source"`
		Message   string `json:"message"`
		ToolCalls []struct {
			Name      string          `json:"function_name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"tool_calls"`
		Observation *struct {
			Results []struct {
				Content json.RawMessage `json:"content"`
			} `json:"results"`
		} `json:"observation"`
	} `json:"steps"`
	Subagents []harnessATIF `json:"subagent_trajectories"`
}

// count returns the agent messages with text, the tool calls (each must
// have a name and arguments) and the observations with content, in d and
// its sub-agents.
func (d *harnessATIF) count(t *testing.T) (msgs, calls, observed int) {
	t.Helper()
	for _, e := range d.Entries {
		if e.Source == "agent" && len(bytes.TrimSpace([]byte(e.Message))) > 0 {
			msgs++
		}
		for _, c := range e.ToolCalls {
			calls++
			args := string(bytes.TrimSpace(c.Arguments))
			if c.Name == "" || args == "" || args == "null" || args == "{}" || args == `{"input":null}` {
				t.Errorf("tool call without a name or arguments: %q %s", c.Name, args)
			}
		}
		if e.Observation != nil {
			for _, r := range e.Observation.Results {
				if s := string(bytes.TrimSpace(r.Content)); s != "" && s != `""` && s != "null" {
					observed++
				}
			}
		}
	}
	for i := range d.Subagents {
		m, c, o := d.Subagents[i].count(t)
		msgs, calls, observed = msgs+m, calls+c, observed+o
	}
	return msgs, calls, observed
}

// TestParquetEveryHarness exports each harness's reader fixture to
// Parquet and reads the parts table back with DuckDB: the parts with
// text, tool name, input and output are those the harness's reader finds
// (every tool part has a name and input; Codex's silent writes no output).
func TestParquetEveryHarness(t *testing.T) {
	for _, tc := range []struct {
		harness                             string
		parts, text, tools, inputs, outputs int
	}{
		{harness: "opencode", parts: 9, text: 4, tools: 4, inputs: 4, outputs: 4},
		{harness: "claude-code", parts: 25, text: 9, tools: 16, inputs: 16, outputs: 16},
		{harness: "codex", parts: 23, text: 7, tools: 16, inputs: 16, outputs: 6},
	} {
		t.Run(tc.harness, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "pq")
			if _, err := export.Run(t.Context(), []string{harnessFixture(tc.harness)}, export.Options{Format: export.FormatParquet, Out: out, StoreURL: t.TempDir(), Version: "test"}); err != nil {
				t.Fatalf("export: %v", err)
			}
			files, _ := filepath.Glob(filepath.Join(out, "parts", "*.parquet"))
			if len(files) != 1 {
				t.Fatalf("parts tables written: %v, want one", files)
			}
			res := duckdb(t, `SELECT count(*) AS parts,
				count(*) FILTER (WHERE coalesce(trim(text), '') <> '') AS text,
				count(*) FILTER (WHERE coalesce(tool, '') <> '') AS tools,
				count(*) FILTER (WHERE coalesce(tool_input, '') NOT IN ('', 'null', '{}')) AS inputs,
				count(*) FILTER (WHERE coalesce(tool_output, '') <> '') AS outputs
				FROM read_parquet(`+sqlPath(files[0])+`)`)
			row := res[0][0]
			for col, want := range map[string]int{"parts": tc.parts, "text": tc.text, "tools": tc.tools, "inputs": tc.inputs, "outputs": tc.outputs} {
				if got, _ := num(t, row[col]); int(got) != want {
					t.Errorf("%s = %v, want %d", col, row[col], want)
				}
			}
		})
	}
}
