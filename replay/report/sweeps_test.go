package report

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trajlab/traj/replay/sweepvalue"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/local"
	"github.com/trajlab/traj/trace/tracetest"
)

// TestSweepsInReport: a sweep stored beside its source is read back by
// CollectSweeps (a damaged one beside it is skipped) and shown by the
// text and HTML reports with its decisive part.
func TestSweepsInReport(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "trajectories", "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	tracetest.WriteDir(t, filepath.Join(dir, "trajectories", "src"), tracetest.Spec{TrajectoryID: "src", Turns: []int{4}})
	st, err := local.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	one, zero := 1.0, 0.0
	forks := []sweepvalue.Fork{
		{ID: "a", At: 2, ForkPart: 2, Value: &one, Solved: true, PrefixOK: true},
		{ID: "b", At: 4, ForkPart: 4, Value: &zero, PrefixOK: true},
	}
	res := &sweepvalue.Result{Version: sweepvalue.Version, Name: "s1", Source: "src", SourceParts: 4, Model: "scripted/demo", Repeats: 1, MaxParts: 9, Forks: forks}
	res.Rows, res.Decisive = sweepvalue.Summarize(forks)
	if err := sweepvalue.Save(ctx, st, res); err != nil {
		t.Fatal(err)
	}
	if err := st.Save(ctx, store.SweepKey("src", "damaged"), store.Bytes([]byte("{"))); err != nil {
		t.Fatal(err)
	}
	got, err := CollectSweeps(ctx, st, nil, nil)
	if err != nil || len(got) != 1 || got[0].Decisive == nil || got[0].Decisive.Part != 4 {
		t.Fatalf("CollectSweeps: %+v, %v; want s1 deciding part 4", got, err)
	}
	if got, _ := CollectSweeps(ctx, st, []string{"other"}, nil); len(got) != 0 {
		t.Errorf("CollectSweeps of other ids: %d results", len(got))
	}
	r := Report{Title: "t", Trajectories: []Trajectory{{ID: "src"}}, Sweeps: got}
	var text, page bytes.Buffer
	if err := WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "decisive part: 4 (the value falls by 100.0 points from part 2)") {
		t.Errorf("text report:\n%s", text.String())
	}
	if err := WriteHTML(&page, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), "Decisive part: <b>4</b>") || !strings.Contains(page.String(), "Fork sweep s1 of src") {
		t.Errorf("HTML report lacks the sweep")
	}
}
