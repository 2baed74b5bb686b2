package report_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/trajlab/traj/replay/report"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/chunk"
	"github.com/trajlab/traj/trace/store/local"
	"github.com/trajlab/traj/trace/tracetest"
)

type saveNow struct{ st store.Store }

func (s saveNow) Enqueue(key string, src store.Source) error {
	return s.st.Save(context.Background(), key, src)
}

// TestCollectChunksOnly: a trajectory whose store copy has only its
// chunks (a run still going, or one cut off before its final upload) is a
// row of the report, read from the trace its chunks rebuild, like every
// other reader of the store sees it (ref.List's one rule).
func TestCollectChunksOnly(t *testing.T) {
	ctx := context.Background()
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // the rebuilt trace goes there
	root := t.TempDir()
	st, err := local.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	done := filepath.Join(root, "trajectories", "done")
	if err := os.MkdirAll(done, 0o755); err != nil {
		t.Fatal(err)
	}
	tracetest.WriteDir(t, done, tracetest.Spec{TrajectoryID: "done", Turns: []int{2}, End: trace.EndSolved})
	codec, err := chunk.NewCodec()
	if err != nil {
		t.Fatal(err)
	}
	w, err := trace.Create(filepath.Join(t.TempDir(), store.TraceName), tracetest.Header("live"),
		trace.WriterOptions{OnChunk: codec.Forward(saveNow{st}, "live", func(err error) { t.Error(err) })})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.BeginTurn(trace.TurnStart{Timestamp: tracetest.Time(0), Prompt: "go"})
	for n := 1; n <= 3; n++ {
		if err := w.AppendPart(tracetest.Part(n, tracetest.Commit(n))); err != nil {
			t.Fatal(err)
		}
	}
	trajs, err := report.Collect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(trajs) != 2 || trajs[0].ID != "done" || trajs[1].ID != "live" {
		t.Fatalf("collected %+v, want done and live", trajs)
	}
	if l := trajs[1]; l.EndReason != "running" || l.Parts != 3 {
		t.Errorf("live: end %q, %d parts; want running with 3", l.EndReason, l.Parts)
	}
	// Nothing is saved for it: a summary names the trace it was made from.
	if _, err := st.Stat(ctx, store.SummaryKey("live")); err == nil {
		t.Error("a summary was saved for a trajectory read from its chunks")
	}
}
