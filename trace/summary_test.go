package trace_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/tracetest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// ShowGoldenTraces are the traces behind testdata/show_*.golden; the
// cmd/traj tests check `traj trace show` against the same files.
func showGoldenTraces(t *testing.T) map[string][]byte {
	dir := t.TempDir()
	written := tracetest.WriteDir(t, dir, tracetest.Spec{
		TrajectoryID: "traj-golden", Turns: []int{2, 0, 3}, End: trace.EndSolved, PartSize: 2000,
		EnvoiCalls: map[int][]trace.EnvoiCall{
			2: {tracetest.RunTests("basics", 3, 7)},
			4: {tracetest.RunTests("basics", 10, 0), tracetest.RunTests("wacct/chapter_1", 5, 19)},
			5: {tracetest.RunTests("basics", 9, 1)},
		},
		Artifacts: map[string]string{trace.ArtifactTrace: "file:///runs/trajectories/traj-golden/agent_trace.json"},
	})
	b, err := os.ReadFile(written)
	if err != nil {
		t.Fatal(err)
	}
	running := tracetest.WriteDir(t, t.TempDir(), tracetest.Spec{TrajectoryID: "traj-running", Turns: []int{1}})
	rb, _ := os.ReadFile(running)
	return map[string][]byte{"original": tracetest.OriginalTrace(), "traj": b, "running": rb}
}

func TestSummaryGolden(t *testing.T) {
	for name, doc := range showGoldenTraces(t) {
		t.Run(name, func(t *testing.T) {
			s, err := trace.Summarize(bytes.NewReader(doc))
			if err != nil {
				t.Fatal(err)
			}
			js, _ := json.MarshalIndent(s, "", "  ")
			for file, got := range map[string][]byte{
				"show_" + name + ".golden":      []byte(s.String()),
				"show_" + name + ".json.golden": append(js, '\n'),
			} {
				path := filepath.Join("testdata", file)
				if *update {
					if err := os.WriteFile(path, got, 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run go test -update)", err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("%s differs:\n%s\n--- want\n%s", file, got, want)
				}
			}
		})
	}
}

// TestGoldenTracesOnDisk keeps testdata/trace_*.json (the inputs of the
// cmd/traj golden tests) in sync with showGoldenTraces.
func TestGoldenTracesOnDisk(t *testing.T) {
	for name, doc := range showGoldenTraces(t) {
		path := filepath.Join("testdata", "trace_"+name+".json")
		if *update {
			if err := os.WriteFile(path, doc, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(doc, want) {
			t.Fatalf("%s is stale (run go test -update): %v", path, err)
		}
	}
}
