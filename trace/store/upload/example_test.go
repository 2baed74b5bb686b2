package upload_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/chunk"
	"github.com/trajlab/traj/trace/store/location"
	"github.com/trajlab/traj/trace/store/upload"
)

// Example shows the wiring a run uses: every trace mutation goes to the
// store as a chunk, each checkpoint's incremental bundle as a history
// object, and the final trace and bundle once at the end.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "traj-example-")
	defer os.RemoveAll(dir)
	const id = "demo"

	st, err := location.Open(ctx, filepath.Join(dir, "runs"), location.Options{}) // or s3://bucket/prefix
	if err != nil {
		panic(err)
	}
	u := upload.New(ctx, st, upload.Options{PendingFile: filepath.Join(dir, "pending_uploads.json")})
	codec, _ := chunk.NewCodec()
	tracePath := filepath.Join(dir, store.TraceName)
	w, err := trace.Create(tracePath, trace.Header{TrajectoryID: id, StartedAt: "2026-11-21T10:00:00.000000Z"},
		trace.WriterOptions{OnChunk: codec.Forward(u, id, nil)})
	if err != nil {
		panic(err)
	}
	w.BeginTurn(trace.TurnStart{Timestamp: "2026-11-21T10:00:01.000000Z", Prompt: "Build a C compiler."})
	for n := 1; n <= 3; n++ {
		w.AppendPart(&trace.Part{Part: n, GitCommit: fmt.Sprintf("%040d", n)})
		// After a checkpoint that committed: the incremental bundle.
		u.Enqueue(store.HistoryBundleKey(id, n), store.Bytes("bundle bytes"))
	}
	w.Finish(trace.SessionEnd{Reason: trace.EndPartLimit}, map[string]string{
		trace.ArtifactTrace:  st.URI(store.TraceKey(id)),
		trace.ArtifactBundle: st.URI(store.BundleKey(id)),
	})
	w.Close()
	u.Enqueue(store.TraceKey(id), store.File(tracePath))
	u.Enqueue(store.BundleKey(id), store.Bytes("full bundle"))
	rep, err := u.Close(ctx)
	if err != nil || rep.Err() != nil {
		panic(fmt.Sprint(err, rep.Err()))
	}
	fmt.Println("objects uploaded:", rep.Stats.Objects, "failed:", len(rep.Failed))
	// Output: objects uploaded: 11 failed: 0
}
