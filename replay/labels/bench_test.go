package labels_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/trajlab/traj/replay/labels"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/tracetest"
)

// BenchmarkLabels measures labelling a 5,000-part trace (about 4 KB a
// part, ground truth every 10 parts) side by side with the trace.Scan
// that decodes its parts: the labels' own cost is the difference.
func BenchmarkLabels(b *testing.B) {
	gt := map[int][]trace.GroundTruth{}
	for n := 10; n <= 5000; n += 10 {
		gt[n] = []trace.GroundTruth{tracetest.GroundTruth(n, tracetest.Suite("basics", int64(n/100), 60))}
	}
	path := tracetest.WriteDir(b, b.TempDir(), tracetest.Spec{Turns: []int{2500, 2500}, GroundTruth: gt, PartSize: 4096, End: trace.EndPartLimit})
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			if err := trace.Scan(f, trace.Visitor{OnPart: func(int, *trace.Part) error { return nil }}); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
	b.Run("labels", func(b *testing.B) {
		for b.Loop() {
			if _, err := labels.ComputeFile(filepath.Clean(path), nil, labels.Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
