package trace_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/tracetest"
)

// benchSync is the Sync setting of the persistence benchmarks:
// TRAJ_BENCH_SYNC=1 fdatasyncs every write (both benchmarks alike).
func benchSync() bool { return os.Getenv("TRAJ_BENCH_SYNC") == "1" }

// BenchmarkAppendPart is the cost of appending one ~4 KB part (text plus a
// tool part with output) to a trace that already holds parts=N parts.
func BenchmarkAppendPart(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		b.Run("parts="+itoa(n), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "agent_trace.json")
			w, err := trace.Create(path, tracetest.Header("bench"), trace.WriterOptions{})
			if err != nil {
				b.Fatal(err)
			}
			if err := w.BeginTurn(trace.TurnStart{Prompt: "bench"}); err != nil {
				b.Fatal(err)
			}
			for i := 1; i <= n; i++ {
				if err := w.AppendPart(tracetest.RealisticPart(i, tracetest.Commit(i), 4096)); err != nil {
					b.Fatal(err)
				}
			}
			w.Close()
			// Reopen with the measured Sync setting.
			w, err = trace.OpenForAppend(path, trace.WriterOptions{Sync: benchSync()})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			p := tracetest.RealisticPart(n+1, tracetest.Commit(n+1), 4096)
			enc, _ := json.Marshal(p)
			b.SetBytes(int64(len(enc)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				p.Part = n + 1 + i
				if err := w.AppendPart(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRewriteWhole is the naive alternative: marshal the whole trace
// and replace the file (temp file + rename) for every part.
func BenchmarkRewriteWhole(b *testing.B) {
	for _, n := range []int{10_000} {
		b.Run("parts="+itoa(n), func(b *testing.B) {
			dir := b.TempDir()
			path := filepath.Join(dir, "agent_trace.json")
			tr := tracetest.Build(tracetest.Spec{Turns: []int{n}, PartSize: 4096})
			p := tracetest.RealisticPart(n+1, tracetest.Commit(n+1), 4096)
			turn := &tr.Turns[0]
			var buf bytes.Buffer
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				q := *p
				q.Part = n + 1 + i
				turn.Parts = append(turn.Parts[:n], q) // the trace stays at n+1 parts
				buf.Reset()
				if err := json.NewEncoder(&buf).Encode(tr); err != nil {
					b.Fatal(err)
				}
				tmp := path + ".tmp"
				f, err := os.Create(tmp)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := f.Write(buf.Bytes()); err != nil {
					b.Fatal(err)
				}
				if benchSync() {
					if err := f.Sync(); err != nil {
						b.Fatal(err)
					}
				}
				f.Close()
				if err := os.Rename(tmp, path); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
