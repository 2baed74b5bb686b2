package upload_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/chunk"
	"github.com/trajlab/traj/trace/store/local"
	"github.com/trajlab/traj/trace/store/upload"
	"github.com/trajlab/traj/trace/tracetest"
)

// wordyPart is a ~4 KB part whose tool output is random words, which
// compress far less than tracetest's repeated filler (about 2.5x, near
// what real agent transcripts give).
func wordyPart(rng *rand.Rand, vocab []string, n int) *trace.Part {
	p := tracetest.RealisticPart(n, tracetest.Commit(n/2), 1800)
	var sb strings.Builder
	for sb.Len() < 2300 {
		sb.WriteString(vocab[rng.IntN(len(vocab))])
		sb.WriteByte(' ')
	}
	out, _ := json.Marshal(map[string]any{"id": p.PartID, "type": "text", "text": sb.String()})
	p.OtherParts = append(p.OtherParts, out)
	return p
}

// TestUploadedBytesLinear simulates what the orchestrator uploads for a
// 2,000-part trajectory with ~4 KB parts: every trace mutation as a chunk
// (through the real trace.Writer), an incremental history bundle at every
// other part (a checkpoint), and at the end agent_trace.json and
// repo.bundle. Total bytes sent must stay within 2x the final artifacts;
// re-uploading the trace per part would be ~1000x.
func TestUploadedBytesLinear(t *testing.T) {
	ctx := context.Background()
	const parts, perTurn, id = 2000, 20, "traj-2000"
	dir := t.TempDir()
	st, err := local.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	u := upload.New(ctx, st, upload.Options{})
	codec, err := chunk.NewCodec()
	if err != nil {
		t.Fatal(err)
	}
	tracePath := filepath.Join(dir, store.TraceName)
	w, err := trace.Create(tracePath, tracetest.Header(id), trace.WriterOptions{
		OnChunk: codec.Forward(u, id, func(err error) { t.Errorf("forward: %v", err) }),
	})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	vocab := make([]string, 2000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("%x", rng.Uint64()>>uint(rng.IntN(48)))
	}
	var history int64
	for n := 1; n <= parts; n++ {
		if (n-1)%perTurn == 0 {
			if n > 1 {
				if err := w.EndTurn(trace.TurnEnd{EndedAt: tracetest.Time(n)}); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.BeginTurn(trace.TurnStart{Timestamp: tracetest.Time(n), Prompt: "Continue: make more tests pass."}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.AppendPart(wordyPart(rng, vocab, n)); err != nil {
			t.Fatal(err)
		}
		if n%2 == 0 { // a checkpoint: an incremental bundle (packs are incompressible)
			b := make([]byte, 1000+rng.IntN(1000))
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			history += int64(len(b))
			if err := u.Enqueue(store.HistoryBundleKey(id, n), store.Bytes(b)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Finish(trace.SessionEnd{Reason: trace.EndPartLimit, EndedAt: tracetest.Time(parts + 1)},
		map[string]string{trace.ArtifactTrace: st.URI(store.TraceKey(id)), trace.ArtifactBundle: st.URI(store.BundleKey(id))}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// The final bundle packs the same objects once; a full pack deltas
	// across all versions, so it is no bigger than the increments.
	bundle := make([]byte, history*9/10)
	for i := range bundle {
		bundle[i] = byte(rng.Uint32())
	}
	u.Enqueue(store.TraceKey(id), store.File(tracePath))
	u.Enqueue(store.BundleKey(id), store.Bytes(bundle))
	rep, err := u.Close(ctx)
	if err != nil || len(rep.Failed) != 0 {
		t.Fatalf("close: %v; failed %v", err, rep.Failed)
	}

	fi, err := os.Stat(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	final := fi.Size() + int64(len(bundle))
	ratio := float64(rep.Stats.AttemptBytes) / float64(final)
	t.Logf("%d parts: trace %d B, bundle %d B; uploaded %d B in %d objects (history %d B); ratio %.2f",
		parts, fi.Size(), len(bundle), rep.Stats.AttemptBytes, rep.Stats.Objects, history, ratio)
	if ratio > 2 {
		t.Fatalf("uploaded %d bytes for %d bytes of final artifacts: ratio %.2f > 2", rep.Stats.AttemptBytes, final, ratio)
	}
	if rep.Stats.Objects < parts {
		t.Fatalf("only %d objects uploaded: parts were not shipped one by one", rep.Stats.Objects)
	}

	// The chunks alone rebuild the trace byte for byte.
	got, crep, err := codec.RebuildBytes(ctx, st, store.TrajectoryPrefix(id))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(tracePath)
	if !bytes.Equal(got, want) || crep.Gap {
		t.Fatalf("rebuilt trace (%d B, gap %v) differs from the local one (%d B)", len(got), crep.Gap, len(want))
	}
}
