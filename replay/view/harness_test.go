package view

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trajlab/traj/trace/store"
)

// TestEveryHarnessParts serves each harness's reader fixture (OpenCode,
// Claude Code, Codex, recorded by today's writer) and reads every part
// through the API: each has a title, and text, tool input and output
// are filled where the harness's reader finds them, never raw JSON
// only; the counts are the fixtures' own (as in replay/export's tests).
// Every tool part has a harness-neutral tool kind, in its row and its
// detail; a shell call shows its exit code; no input keeps a \u003c-style
// escape (Codex's recorded arguments carry them).
func TestEveryHarnessParts(t *testing.T) {
	for _, tc := range []struct {
		harness                             string
		parts, text, tools, inputs, outputs int
	}{
		{harness: "opencode", parts: 9, text: 4, tools: 4, inputs: 4, outputs: 4},
		{harness: "claude-code", parts: 25, text: 9, tools: 16, inputs: 16, outputs: 16},
		{harness: "codex", parts: 23, text: 7, tools: 16, inputs: 16, outputs: 6},
	} {
		t.Run(tc.harness, func(t *testing.T) {
			root := t.TempDir()
			id := "conformance-" + tc.harness
			data, err := os.ReadFile(filepath.Join("..", "..", "sandbox", "harness", "testdata", tc.harness, store.TraceName))
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(root, "trajectories", id)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, store.TraceName), data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, _, c := testServer(t, Options{StoreURL: root})
			var page struct {
				Total int   `json:"total"`
				Rows  []Row `json:"rows"`
			}
			c.mustGet("/api/t/"+id+"/parts?from=1&n=500", &page)
			if page.Total != tc.parts || len(page.Rows) != tc.parts {
				t.Fatalf("%d of %d rows, want %d", len(page.Rows), page.Total, tc.parts)
			}
			text, tools, inputs, outputs := 0, 0, 0, 0
			kinds := map[string]int{}
			for _, r := range page.Rows {
				if r.ToolKind != "" {
					kinds[r.ToolKind]++
				}
				if r.Title == "" {
					t.Errorf("part %d (%s %s) has no title", r.Part, r.Kind, r.Tool)
				}
				var d Detail
				c.mustGet(fmt.Sprintf("/api/t/%s/parts/%d", id, r.Part), &d)
				if strings.TrimSpace(d.Text) != "" {
					text++
				}
				if d.Tool != "" {
					tools++
					if r.ToolKind == "" || d.ToolKind != r.ToolKind {
						t.Errorf("part %d (%s): tool kind %q in the row, %q in the detail", r.Part, r.Tool, r.ToolKind, d.ToolKind)
					}
					if r.ToolKind == "shell" && (d.Action == nil || d.Action.ExitCode == nil) {
						t.Errorf("part %d (%s): a shell call without its exit code: %+v", r.Part, r.Tool, d.Action)
					}
				}
				if strings.Contains(d.Input, `\u003`) || strings.Contains(d.Input, `\u0026`) {
					t.Errorf("part %d: input keeps an HTML escape: %s", r.Part, d.Input)
				}
				if s := strings.TrimSpace(d.Input); s != "" && s != "null" && s != "{}" {
					inputs++
				}
				if strings.TrimSpace(d.Output) != "" {
					outputs++
				}
			}
			// The tool-kind filter finds exactly the rows of that kind.
			if kinds["shell"] == 0 || kinds["run_tests"] == 0 {
				t.Errorf("tool kinds %v: want shell and run_tests parts", kinds)
			}
			for k, n := range kinds {
				var res SearchResult
				c.mustGet("/api/t/"+id+"/search?tool_kind="+k, &res)
				if res.Total != n {
					t.Errorf("search tool_kind=%s: %d parts, the rows say %d", k, res.Total, n)
				}
			}
			if text != tc.text || tools != tc.tools || inputs != tc.inputs || outputs != tc.outputs {
				t.Errorf("text %d, tools %d, inputs %d, outputs %d; want %d, %d, %d, %d",
					text, tools, inputs, outputs, tc.text, tc.tools, tc.inputs, tc.outputs)
			}
		})
	}
}
