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
			for _, r := range page.Rows {
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
				}
				if s := strings.TrimSpace(d.Input); s != "" && s != "null" && s != "{}" {
					inputs++
				}
				if strings.TrimSpace(d.Output) != "" {
					outputs++
				}
			}
			if text != tc.text || tools != tc.tools || inputs != tc.inputs || outputs != tc.outputs {
				t.Errorf("text %d, tools %d, inputs %d, outputs %d; want %d, %d, %d, %d",
					text, tools, inputs, outputs, tc.text, tc.tools, tc.inputs, tc.outputs)
			}
		})
	}
}
