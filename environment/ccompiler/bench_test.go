package ccompiler

import (
	"context"
	"fmt"
	"testing"

	"github.com/trajlab/traj/environment"
)

// BenchmarkRun measures cases per second over the basics suite with the gcc
// wrapper as the compiler (compile + run + compare per case).
func BenchmarkRun(b *testing.B) {
	needGCC(b)
	e, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	ws := workspace(b, gccBuild)
	built := e.Build(context.Background(), ws, nil)
	if !built.OK {
		b.Fatalf("build: %+v", built)
	}
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			cases := 0
			for b.Loop() {
				r, err := e.Run(context.Background(), ws, "basics", environment.RunOptions{Workers: workers, Prebuilt: &built})
				if err != nil {
					b.Fatal(err)
				}
				if r.Failed != 0 {
					b.Fatalf("%d cases failed", r.Failed)
				}
				cases += r.Total
			}
			b.ReportMetric(float64(cases)/b.Elapsed().Seconds(), "cases/s")
		})
	}
}
