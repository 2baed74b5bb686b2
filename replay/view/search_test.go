package view

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
)

// TestSearchFilters lists the recorded demo's parts by each filter alone
// and with a query (the demo's own part numbers), and finds the failed
// tool call of a trace whose bash call was made to fail.
func TestSearchFilters(t *testing.T) {
	root := sharedSample(t)
	// The OpenCode fixture with its bash call turned into a failure.
	data, err := os.ReadFile(filepath.Join("..", "..", "sandbox", "harness", "testdata", "opencode", store.TraceName))
	if err != nil {
		t.Fatal(err)
	}
	var tr trace.Trace
	if err := json.Unmarshal(data, &tr); err != nil {
		t.Fatal(err)
	}
	failed := 0
	for ti := range tr.Turns {
		for pi := range tr.Turns[ti].Parts {
			p := &tr.Turns[ti].Parts[pi]
			if p.Tool != "bash" {
				continue
			}
			var c map[string]any
			_ = json.Unmarshal(p.Content, &c)
			c["state"] = map[string]any{"status": "error", "input": map[string]any{"command": "ls"}, "error": "permission denied"}
			p.Content, _ = json.Marshal(c)
			failed = p.Part
		}
	}
	if failed == 0 {
		t.Fatal("the fixture has no bash part")
	}
	dir := filepath.Join(t.TempDir(), store.TrajectoriesDir, "failing")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(tr)
	write(t, filepath.Join(dir, store.TraceName), out)
	_, _, c := testServer(t, Options{StoreURL: root})
	_, _, cf := testServer(t, Options{StoreURL: filepath.Dir(filepath.Dir(dir))})

	var meta Meta
	c.mustGet("/api/t/demo-ground-truth", &meta)
	sub := ""
	for _, s := range meta.Sessions {
		if s.Depth > 0 {
			sub = s.ID
		}
	}
	if !reflect.DeepEqual(meta.Tools, []string{"bash", "edit", "read", "task", "tests_run_tests", "todowrite", "write"}) {
		t.Errorf("tools offered to filter by: %v", meta.Tools)
	}
	parts := func(c *client, id, query string) []int {
		t.Helper()
		var res SearchResult
		c.mustGet("/api/t/"+id+"/search?"+query, &res)
		got := []int{}
		for _, h := range res.Hits {
			got = append(got, h.Part)
		}
		if res.Total != len(got) {
			t.Errorf("%s: total %d, %d hits", query, res.Total, len(got))
		}
		return got
	}
	for _, tc := range []struct {
		query string
		want  []int
	}{
		{"tool=edit", []int{25, 33}},
		{"q=" + url.QueryEscape("switch|goto") + "&tool=edit", []int{25}},
		{"kind=patch", []int{6, 10, 19, 21, 26, 28, 34, 36, 43, 46}},
		{"run_tests=1", []int{11, 13, 22, 23, 29, 37, 38, 47}},
		{"kind=tool&committed=1&tool=bash", []int{9, 20, 27, 35}},
		{"error=1", []int{}},
		{"session=" + url.QueryEscape(sub) + "&kind=tool", []int{41, 42}},
		{"q=", []int{}},
	} {
		if got := parts(c, "demo-ground-truth", tc.query); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: parts %v, want %v", tc.query, got, tc.want)
		}
	}
	if got := parts(cf, "failing", "error=1"); !reflect.DeepEqual(got, []int{failed}) {
		t.Errorf("error=1 finds parts %v, want the failed bash call, part %d", got, failed)
	}
}
