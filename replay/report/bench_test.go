package report

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/local"
	"github.com/trajlab/traj/trace/tracetest"
)

// benchStore makes a local store of n finished trajectories, each a trace
// of 400 parts of about 1 KB with a run_tests call every 20 parts (about
// 0.5 MB, like a short real trajectory).
func benchStore(b *testing.B, n int) store.Store {
	return benchStoreOf(b, n, 100, 1000)
}

// benchStoreOf is benchStore with 4 turns of perTurn parts of partSize
// bytes a trajectory.
func benchStoreOf(b *testing.B, n, perTurn, partSize int) store.Store {
	b.Helper()
	dir := b.TempDir()
	calls := map[int][]trace.EnvoiCall{}
	for p := 20; p <= 4*perTurn; p += 20 {
		calls[p] = []trace.EnvoiCall{tracetest.RunTests("basics", p/10, 40-p/10)}
	}
	proto := tracetest.Write(b, filepath.Join(dir, "proto.json"), tracetest.Spec{
		TrajectoryID: "bench-000000", Turns: []int{perTurn, perTurn, perTurn, perTurn}, PartSize: partSize, EnvoiCalls: calls, End: trace.EndPartLimit})
	data, err := os.ReadFile(proto)
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		id := fmt.Sprintf("bench-%06d", i)
		p := filepath.Join(dir, filepath.FromSlash(store.TraceKey(id)))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, bytes.ReplaceAll(data, []byte("bench-000000"), []byte(id)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	st, err := local.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	return st
}

// tracesOnly hides summary files and cannot save, so a report reads
// every trace: the behaviour before summaries, measured side by side.
type tracesOnly struct{ st store.Store }

func (t tracesOnly) List(ctx context.Context, prefix string, fn func(store.FileInfo) error) error {
	return t.st.List(ctx, prefix, func(fi store.FileInfo) error {
		if strings.HasSuffix(fi.Key, "/"+store.SummaryName) {
			return nil
		}
		return fn(fi)
	})
}

func (t tracesOnly) Load(ctx context.Context, key string, fn func(io.Reader) error) error {
	return t.st.Load(ctx, key, fn)
}

// BenchmarkReport500 is the experiment-scale target: a report over 500
// trajectories under 5 s with flat memory, by reading each trajectory's
// summary.json instead of its trace. "traces" is the same report reading
// every trace; the ratio is the gain. peak-heap-MB is the largest live
// heap seen after each trajectory (flat: it does not grow with traces).
func BenchmarkReport500(b *testing.B) {
	const n = 500
	st := benchStore(b, n)
	ctx := context.Background()
	// Summaries are written once (as traj run does when a trajectory ends).
	if _, err := Collect(ctx, st, nil); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		st   Store
	}{{"summaries", st}, {"traces", tracesOnly{st}}} {
		b.Run(tc.name, func(b *testing.B) {
			var peak uint64
			for b.Loop() {
				rows, err := Collect(ctx, tc.st, nil)
				if err != nil || len(rows) != n {
					b.Fatalf("%d rows, %v", len(rows), err)
				}
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/report")
			b.ReportMetric(float64(peak)/(1<<20), "heap-MB")
		})
	}
}

// BenchmarkReport10000 is the row: a report over 10,000
// trajectories (100 parts each; their summaries written once, as runs
// leave them) under 5 s.
func BenchmarkReport10000(b *testing.B) {
	const n = 10_000
	st := benchStoreOf(b, n, 25, 400)
	ctx := context.Background()
	if _, err := Collect(ctx, st, nil); err != nil {
		b.Fatal(err)
	}
	var peak uint64
	for b.Loop() {
		rows, err := Collect(ctx, st, nil)
		if err != nil || len(rows) != n {
			b.Fatalf("%d rows, %v", len(rows), err)
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/report")
	b.ReportMetric(float64(peak)/(1<<20), "heap-MB")
}
