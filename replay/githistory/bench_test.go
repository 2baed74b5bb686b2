package githistory_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trajlab/traj/replay/githistory"
	"github.com/trajlab/traj/replay/source"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/tracetest"
)

// The child side of the benchmarks: the test binary re-run with
// TRAJ_BENCH_CHECKOUT set opens the bundle and checks one commit out, so
// its peak RSS is that of a checkout alone; with TRAJ_BENCH_VERIFY set it
// does what `traj replay verify --trace T --bundle B` does.
func TestMain(m *testing.M) {
	if spec := os.Getenv("TRAJ_BENCH_VERIFY"); spec != "" {
		tracePath, bundle, _ := strings.Cut(spec, "|")
		if err := verify(context.Background(), tracePath, bundle); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if spec := os.Getenv("TRAJ_BENCH_CHECKOUT"); spec != "" {
		bundle, rest, _ := strings.Cut(spec, "|")
		commit, dest, _ := strings.Cut(rest, "|")
		ctx := context.Background()
		h, err := githistory.Open(ctx, bundle)
		if err == nil {
			err = h.Checkout(ctx, commit, dest)
			h.Close()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fastImport builds a repository of parts commits with the git CLI's
// fast-import: a 300-file workspace, each commit rewriting one file, like
// a trajectory whose every part edits a file. bigBlob > 0 adds one file of
// that many bytes (incompressible) in the first commit. It returns the
// repository, a bundle of it (`git bundle create --all`) and the last
// commit.
func fastImport(tb testing.TB, dir string, parts, bigBlob int) (repo, bundle, last string) {
	tb.Helper()
	repo = filepath.Join(dir, "repo")
	run(tb, dir, "git", "init", "-q", "-b", "main", repo)
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir = repo
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(in, 1<<20)
	const files = 300
	body := func(i, v int) string {
		return fmt.Sprintf("// file %d version %d\n%s", i, v, strings.Repeat(fmt.Sprintf("fn f%d() -> i32 { %d }\n", i, i), 60))
	}
	for p := 1; p <= parts; p++ {
		fmt.Fprintf(w, "commit refs/heads/main\ncommitter traj <traj@localhost> %d +0000\ndata <<EOM\npart %d checkpoint\nEOM\n", 1_700_000_000+p, p)
		if p == 1 {
			for i := 0; i < files; i++ {
				data := body(i, 0)
				fmt.Fprintf(w, "M 100644 inline src/m%02d/f%03d.rs\ndata %d\n%s\n", i%12, i, len(data), data)
			}
			if bigBlob > 0 {
				fmt.Fprintf(w, "M 100644 inline big.bin\ndata %d\n", bigBlob)
				rnd, err := os.Open("/dev/urandom")
				if err != nil {
					tb.Fatal(err)
				}
				if _, err := io.CopyN(w, rnd, int64(bigBlob)); err != nil {
					tb.Fatal(err)
				}
				rnd.Close()
				w.WriteString("\n")
			}
			continue
		}
		i := p % files
		data := body(i, p)
		fmt.Fprintf(w, "M 100644 inline src/m%02d/f%03d.rs\ndata %d\n%s\n", i%12, i, len(data), data)
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		tb.Fatalf("git fast-import: %v: %s", err, stderr.String())
	}
	bundle = filepath.Join(dir, "repo.bundle")
	run(tb, repo, "git", "bundle", "create", "-q", bundle, "--all")
	last = strings.TrimSpace(run(tb, repo, "git", "rev-parse", "main"))
	return repo, bundle, last
}

func run(tb testing.TB, dir, name string, args ...string) string {
	tb.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// measured runs cmd and returns its wall time and peak RSS.
func measured(tb testing.TB, cmd *exec.Cmd) (time.Duration, int64) {
	tb.Helper()
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		tb.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out.String())
	}
	rss := int64(0)
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss << 10
	}
	return time.Since(start), rss
}

// checkoutBoth checks commit of bundle out with traj (githistory, in a
// child process) and with the git CLI (clone --no-checkout + checkout),
// and returns each one's time and peak RSS (git: the larger of its two
// processes).
func checkoutBoth(b *testing.B, dir, bundle, commit string, i int) (trajT, gitT time.Duration, trajRSS, gitRSS int64) {
	b.Helper()
	dest := filepath.Join(dir, fmt.Sprintf("traj-%d", i))
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "TRAJ_BENCH_CHECKOUT="+bundle+"|"+commit+"|"+dest)
	trajT, trajRSS = measured(b, cmd)
	gdest := filepath.Join(dir, fmt.Sprintf("git-%d", i))
	t1, r1 := measured(b, exec.Command("git", "clone", "-q", "--no-checkout", bundle, gdest))
	co := exec.Command("git", "-C", gdest, "checkout", "-q", commit)
	t2, r2 := measured(b, co)
	os.RemoveAll(dest)
	os.RemoveAll(gdest)
	return trajT, t1 + t2, trajRSS, max(r1, r2)
}

// BenchmarkCheckoutPart compares checking out the last part of a
// trajectory of 1,000, 10,000 and 50,000 parts (one commit each, a
// 300-file workspace) with traj and with the git CLI on the same bundle:
// time, the ratio (target: within 3x) and peak RSS (target: under 150 MB).
func BenchmarkCheckoutPart(b *testing.B) {
	for _, parts := range []int{1_000, 10_000, 50_000} {
		b.Run("parts="+strconv.Itoa(parts), func(b *testing.B) {
			dir := b.TempDir()
			_, bundle, last := fastImport(b, dir, parts, 0)
			benchCheckout(b, dir, bundle, last)
		})
	}
}

// BenchmarkCheckoutLargeBlob checks out a tree holding a 200 MB file
// (target: peak RSS under 300 MB; the blob is streamed, never held).
func BenchmarkCheckoutLargeBlob(b *testing.B) {
	dir := b.TempDir()
	_, bundle, last := fastImport(b, dir, 10, 200<<20)
	benchCheckout(b, dir, bundle, last)
}

func benchCheckout(b *testing.B, dir, bundle, commit string) {
	var trajT, gitT time.Duration
	var trajRSS, gitRSS int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t1, t2, r1, r2 := checkoutBoth(b, dir, bundle, commit, i)
		trajT, gitT = trajT+t1, gitT+t2
		trajRSS, gitRSS = max(trajRSS, r1), max(gitRSS, r2)
	}
	n := float64(b.N)
	b.ReportMetric(trajT.Seconds()*1000/n, "traj-ms")
	b.ReportMetric(gitT.Seconds()*1000/n, "git-ms")
	b.ReportMetric(float64(trajT)/float64(gitT), "traj/git")
	b.ReportMetric(float64(trajRSS)/(1<<20), "traj-peak-rss-MB")
	b.ReportMetric(float64(gitRSS)/(1<<20), "git-peak-rss-MB")
}

// verify opens the trajectory as `traj replay verify` does and fails on
// any problem, so the benchmark measures a verify that passes.
func verify(ctx context.Context, tracePath, bundle string) error {
	t, err := source.Open(ctx, source.Request{TracePath: tracePath, BundlePath: bundle, StoreURL: filepath.Join(filepath.Dir(tracePath), "store"), Read: source.TraceHeader})
	if err != nil {
		return err
	}
	defer t.Close()
	probs, _, err := t.Verify(ctx)
	if err != nil {
		return err
	}
	if len(probs) > 0 {
		return fmt.Errorf("%d problems, the first: %s", len(probs), probs[0])
	}
	return nil
}

// writeTrace records a trace of one realistic part (~4 KB, as
// tracetest.RealisticPart) for every commit of repo's main, oldest first,
// ten parts a turn, each part's checkpoint going from the previous commit
// to its own: the trace a trajectory of that history would have.
func writeTrace(tb testing.TB, repo, path string) {
	writeTraceEvery(tb, repo, path, 1)
}

// writeTraceEvery is writeTrace with every parts per commit: the first
// of them checkpoints it, the others (text, reads, test runs) change
// nothing and keep its commit.
func writeTraceEvery(tb testing.TB, repo, path string, every int) {
	tb.Helper()
	var commits []string
	for _, c := range strings.Fields(run(tb, repo, "git", "rev-list", "--reverse", "main")) {
		for range every {
			commits = append(commits, c)
		}
	}
	w, err := trace.Create(path, tracetest.Header("traj-bench"), trace.WriterOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	defer w.Close()
	for i, c := range commits {
		n := i + 1
		if i%10 == 0 {
			if i > 0 {
				if err := w.EndTurn(trace.TurnEnd{EndedAt: tracetest.Time(n)}); err != nil {
					tb.Fatal(err)
				}
			}
			if err := w.BeginTurn(trace.TurnStart{Timestamp: tracetest.Time(n), Prompt: "continue", SessionID: "ses_root"}); err != nil {
				tb.Fatal(err)
			}
		}
		p := tracetest.RealisticPart(n, c, 0)
		if i == 0 || commits[i-1] == c {
			p.RepoCheckpoint = nil // the history's first commit, or a part that changed nothing
		} else {
			p.RepoCheckpoint.CommitBefore = commits[i-1]
		}
		if err := w.AppendPart(p); err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.EndTurn(trace.TurnEnd{EndedAt: tracetest.Time(len(commits))}); err != nil {
		tb.Fatal(err)
	}
	if err := w.Finish(trace.SessionEnd{Reason: "part_limit", EndedAt: tracetest.Time(len(commits) + 1)}, nil); err != nil {
		tb.Fatal(err)
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkVerify runs `replay verify` (trace and bundle opened as the
// command opens them, every commit and checkpoint checked) on the
// trajectories of BenchmarkCheckoutPart, with a realistic part (~4 KB) for
// every commit: time and peak RSS (target: under 150 MB at 50,000 parts).
func BenchmarkVerify(b *testing.B) {
	for _, parts := range []int{1_000, 10_000, 50_000} {
		b.Run("parts="+strconv.Itoa(parts), func(b *testing.B) {
			dir := b.TempDir()
			repo, bundle, _ := fastImport(b, dir, parts, 0)
			tracePath := filepath.Join(dir, "agent_trace.json")
			writeTrace(b, repo, tracePath)
			var total time.Duration
			var peak int64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), "TRAJ_BENCH_VERIFY="+tracePath+"|"+bundle)
				t, rss := measured(b, cmd)
				total, peak = total+t, max(peak, rss)
			}
			if fi, err := os.Stat(tracePath); err == nil {
				b.ReportMetric(float64(fi.Size())/(1<<20), "trace-MB")
			}
			b.ReportMetric(total.Seconds()*1000/float64(b.N), "traj-ms")
			b.ReportMetric(float64(peak)/(1<<20), "traj-peak-rss-MB")
		})
	}
}
