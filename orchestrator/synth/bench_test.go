package synth

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stores holds the synthetic stores the benchmarks made, by parts: a
// benchmark function runs more than once and the 100,000-part one takes
// minutes to write.
var stores = map[int]string{}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, dir := range stores {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

func synthStore(b *testing.B, parts int) (dir string, res Result) {
	b.Helper()
	id := fmt.Sprintf("synth-%d-1", parts)
	if dir, ok := stores[parts]; ok {
		return dir, Result{ID: id, Dir: filepath.Join(dir, "trajectories", id), Parts: parts}
	}
	dir, err := os.MkdirTemp("", "traj-synth-bench-")
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if res, err = Write(context.Background(), dir, Options{Parts: parts, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	b.Logf("synth: %d parts, %d commits in %s", parts, res.Commits, time.Since(start).Round(time.Millisecond))
	stores[parts] = dir
	return dir, res
}

// run runs cmd and returns its wall time, CPU time and peak RSS.
func run(b *testing.B, cmd *exec.Cmd) (wall, cpu time.Duration, rss int64) {
	b.Helper()
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out.String())
	}
	wall = time.Since(start)
	cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss << 10
	}
	return wall, cpu, rss
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkScale runs the traj binary (make bench sets TRAJ_BIN) on a
// synthetic trajectory (traj trace synth) of 10,000 and 100,000 parts,
// each path side by side with its yardstick, interleaved, at least three
// rounds, and reports the medians and their ratios:
//   - `traj replay checkout-part` of the last part vs `git clone
//     --no-checkout` + `git checkout` of the trajectory's repo.bundle
//     (goal <= 1.0);
//   - `traj export --format parquet` vs `traj trace show` (goal <= 2.5),
//     with each one's peak RSS.
//
// Measured (2 shared cores, load 8-20; medians of 3 interleaved rounds):
//
//	parts    checkout/git (wall, CPU)   parquet/show (wall, CPU)   parquet, show peak RSS
//	10,000   1,340/1,375 ms 0.97, 1.37  6,798/2,687 ms 2.53, 3.34  121 MB, 71 MB
//	100,000  5,601/8,769 ms 0.64, 0.89  132.5/6.0 s   22.1, 14.9   375 MB, 325 MB
//
// The export's cost at 100,000 parts is its line counts: githistory.Diff
// diffs the trees of every checkpoint (18,735 here), which decodes the
// changed folder whole each time, and the synthetic workspace keeps
// growing (565 files at 10,000 parts, about 5,000 at 100,000), so the
// work is checkpoints × folder width (60 % of the export's CPU at 10,000
// parts already). Peak RSS counts the trace's mapped pages (show and
// checkout-part map it).
func BenchmarkScale(b *testing.B) {
	bin := os.Getenv("TRAJ_BIN")
	if bin == "" {
		b.Skip("TRAJ_BIN is not set (make bench sets it)")
	}
	for _, parts := range []int{10_000, 100_000} {
		b.Run("parts="+strconv.Itoa(parts), func(b *testing.B) {
			st, res := synthStore(b, parts)
			bundle := filepath.Join(res.Dir, "repo.bundle")
			head, err := exec.Command("git", "bundle", "list-heads", bundle).Output()
			if err != nil {
				b.Fatal(err)
			}
			last := strings.Fields(string(head))[0]
			work := b.TempDir()
			rounds := max(3, b.N)
			var co, gitCo, exp, show, coCPU, gitCPU, expCPU, showCPU []time.Duration
			var expRSS, showRSS, coRSS int64
			b.ResetTimer()
			for i := 0; i < rounds; i++ {
				dest := filepath.Join(work, fmt.Sprintf("traj-%d", i))
				w, c, r := run(b, exec.Command(bin, "replay", "checkout-part", "--store", st, res.ID, "--part", strconv.Itoa(parts), "--checkout-dest", dest))
				co, coCPU, coRSS = append(co, w), append(coCPU, c), max(coRSS, r)
				gdest := filepath.Join(work, fmt.Sprintf("git-%d", i))
				w1, c1, _ := run(b, exec.Command("git", "clone", "-q", "--no-checkout", bundle, gdest))
				w2, c2, _ := run(b, exec.Command("git", "-C", gdest, "checkout", "-q", last))
				gitCo, gitCPU = append(gitCo, w1+w2), append(gitCPU, c1+c2)
				os.RemoveAll(dest)
				os.RemoveAll(gdest)

				out := filepath.Join(work, fmt.Sprintf("export-%d", i))
				w, c, r = run(b, exec.Command(bin, "export", "--store", st, res.ID, "--format", "parquet", "--out", out))
				exp, expCPU, expRSS = append(exp, w), append(expCPU, c), max(expRSS, r)
				os.RemoveAll(out)
				w, c, r = run(b, exec.Command(bin, "trace", "show", "--store", st, res.ID))
				show, showCPU, showRSS = append(show, w), append(showCPU, c), max(showRSS, r)
			}
			b.StopTimer()
			ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
			b.ReportMetric(float64(rounds), "rounds")
			b.ReportMetric(ms(median(co)), "checkout-ms")
			b.ReportMetric(ms(median(gitCo)), "git-clone-checkout-ms")
			b.ReportMetric(float64(median(co))/float64(median(gitCo)), "checkout/git")
			b.ReportMetric(float64(median(coCPU))/float64(median(gitCPU)), "checkout/git-cpu")
			b.ReportMetric(float64(coRSS)/(1<<20), "checkout-peak-MB")
			b.ReportMetric(ms(median(exp)), "parquet-ms")
			b.ReportMetric(ms(median(show)), "show-ms")
			b.ReportMetric(float64(median(exp))/float64(median(show)), "parquet/show")
			b.ReportMetric(float64(median(expCPU))/float64(median(showCPU)), "parquet/show-cpu")
			b.ReportMetric(float64(expRSS)/(1<<20), "parquet-peak-MB")
			b.ReportMetric(float64(showRSS)/(1<<20), "show-peak-MB")
		})
	}
}
