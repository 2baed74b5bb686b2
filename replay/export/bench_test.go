package export_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trajlab/traj/replay/export"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/tracetest"
)

var (
	trajOnce sync.Once
	trajPath string
	trajErr  error
)

// trajBin is the traj executable: $TRAJ_BIN (make bench sets it), else one
// built for this run.
func trajBin(b *testing.B) string {
	b.Helper()
	trajOnce.Do(func() {
		if p := os.Getenv("TRAJ_BIN"); p != "" {
			trajPath = p
			return
		}
		dir, err := os.MkdirTemp("", "traj-export-bench-")
		if err != nil {
			trajErr = err
			return
		}
		trajPath = filepath.Join(dir, "traj")
		if out, err := exec.Command("go", "build", "-o", trajPath, "../../cmd/traj").CombinedOutput(); err != nil {
			trajErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if trajErr != nil {
		b.Fatal(trajErr)
	}
	return trajPath
}

// writeTrace writes a finished synthetic trace of turns×perTurn parts of
// about partSize bytes into dir/agent_trace.json (marshalled directly:
// the writer's per-part fsync is not what is measured here).
func writeTrace(tb testing.TB, dir, id string, turns, perTurn, partSize int) int64 {
	tb.Helper()
	spec := tracetest.Spec{TrajectoryID: id, PartSize: partSize, End: trace.EndPartLimit}
	for range turns {
		spec.Turns = append(spec.Turns, perTurn)
	}
	data, err := json.Marshal(tracetest.Build(spec))
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, store.TraceName), data, 0o644); err != nil {
		tb.Fatal(err)
	}
	return int64(len(data))
}

// BenchmarkExport runs `traj export` as a user would on a trajectory of
// 10,000 and 50,000 parts (about 4 KB a part: 40 and 200 MB of trace),
// Parquet and ATIF, and reports its wall time (traj-ms), throughput per
// CPU second (the number that holds on a loaded machine) and peak RSS
// (the export process's own, not the benchmark's). With
// TRAJ_BASELINE_BIN set (another traj binary, e.g. one built from an
// older commit) it runs that one too, alternating with traj on the same
// trace: baseline-ms, its peak RSS, and the speedup baseline/traj. load1
// is the machine's load average when the run ended: timings taken while
// other work loads the machine are noisy.
func BenchmarkExport(b *testing.B) {
	traj := trajBin(b)
	base := os.Getenv("TRAJ_BASELINE_BIN")
	for _, parts := range []int{10_000, 50_000} {
		dir := filepath.Join(b.TempDir(), "big")
		size := writeTrace(b, dir, "big", parts/100, 100, 4096)
		for _, format := range []string{export.FormatParquet, export.FormatATIF} {
			b.Run(fmt.Sprintf("parts=%d/%s", parts, format), func(b *testing.B) {
				var wall, baseWall, cpu time.Duration
				var peak, basePeak int64
				run := func(bin string) (time.Duration, time.Duration, int64) {
					out := filepath.Join(b.TempDir(), "out")
					ru, hwm, t := runMeasured(b, bin, "export", dir, "--format", format, "--out", out, "--log-level", "error")
					os.RemoveAll(out)
					return t, time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), hwm
				}
				for b.Loop() {
					if base != "" {
						t, _, hwm := run(base)
						baseWall, basePeak = baseWall+t, max(basePeak, hwm)
					}
					t, c, hwm := run(traj)
					wall, cpu, peak = wall+t, cpu+c, max(peak, hwm)
				}
				b.ReportMetric(wall.Seconds()*1000/float64(b.N), "traj-ms")
				b.ReportMetric(float64(parts*b.N)/cpu.Seconds(), "parts/cpu-s")
				b.ReportMetric(float64(peak)/(1<<20), "peak-rss-MB")
				b.ReportMetric(float64(size)/(1<<20), "trace-MB")
				if base != "" {
					b.ReportMetric(baseWall.Seconds()*1000/float64(b.N), "baseline-ms")
					b.ReportMetric(float64(baseWall)/float64(wall), "baseline/traj")
					b.ReportMetric(float64(basePeak)/(1<<20), "baseline-rss-MB")
				}
				b.ReportMetric(loadAverage(), "load1")
			})
		}
	}
}

// loadAverage is the machine's one-minute load average (0 if unknown).
func loadAverage() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(data))[0], 64)
	return f
}

// runMeasured runs a command and returns its CPU usage (wait4 on its
// pid), its peak RSS and its wall time. The peak is the child's VmHWM,
// polled while it runs: rusage's maxrss would include this process's own
// peak, which Linux carries into a child across vfork and exec.
func runMeasured(b *testing.B, name string, args ...string) (syscall.Rusage, int64, time.Duration) {
	b.Helper()
	log, err := os.CreateTemp(b.TempDir(), "log-*")
	if err != nil {
		b.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = log, log
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	done := make(chan struct{})
	var hwm int64
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for {
			if v := vmHWM(status); v > hwm {
				hwm = v
			}
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	var ws syscall.WaitStatus
	var ru syscall.Rusage
	// WNOWAIT-free wait4 reaps the child; the poller's last reads see a
	// zombie without VmHWM, which keeps the maximum it had.
	_, err = syscall.Wait4(cmd.Process.Pid, &ws, 0, &ru)
	wall := time.Since(start)
	close(done)
	<-polled
	if err != nil {
		b.Fatal(err)
	}
	if !ws.Exited() || ws.ExitStatus() != 0 {
		msg, _ := os.ReadFile(log.Name())
		b.Fatalf("%s %v: %v\n%s", name, args, ws, msg)
	}
	return ru, hwm, wall
}

// vmHWM reads a process's peak resident set size in bytes (0 if gone).
func vmHWM(status string) int64 {
	data, err := os.ReadFile(status)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// BenchmarkReexportStore1000 measures incremental export of a store of
// 1,000 trajectories (50 parts each): the first, full export, and an
// export again with nothing changed, which only stats and lists.
func BenchmarkReexportStore1000(b *testing.B) {
	st := b.TempDir()
	for i := range 1000 {
		id := fmt.Sprintf("t%04d", i)
		writeTrace(b, filepath.Join(st, store.TrajectoriesDir, id), id, 2, 25, 1024)
	}
	out := filepath.Join(b.TempDir(), "out")
	opts := export.Options{Format: export.FormatParquet, Out: out, StoreURL: st}
	ctx := context.Background()
	start := time.Now()
	sum, err := export.Run(ctx, []string{st}, opts)
	if err != nil || sum.Exported != 1000 {
		b.Fatalf("first export: %+v %v", sum, err)
	}
	full := time.Since(start)
	for b.Loop() {
		sum, err := export.Run(ctx, []string{st}, opts)
		if err != nil || sum.Unchanged != 1000 {
			b.Fatalf("re-export: %+v %v", sum, err)
		}
	}
	b.ReportMetric(full.Seconds(), "full-export-s")
}
