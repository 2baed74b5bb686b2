package view

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/tracetest"
)

// The viewer's targets (DESIGN.md): first paint of a 10,000-part
// trajectory under 1 s, jump to any part under 200 ms, server memory
// bounded as the trace grows. Each benchmark runs at 1,000, 10,000 and
// 50,000 parts of about 4 KB (a 50,000-part trace is about 200 MB), so the
// growth shows side by side.
var benchSizes = []int{1_000, 10_000, 50_000}

var (
	benchMu     sync.Mutex
	benchStores = map[int]string{}
)

// bigStore returns a store holding one finished trajectory "big" of n
// realistic parts in turns of 50, with a run_tests result every 25 parts,
// recorded with the real writer. Stores are made once per test binary.
func bigStore(b *testing.B, n int) string {
	b.Helper()
	benchMu.Lock()
	defer benchMu.Unlock()
	if dir, ok := benchStores[n]; ok {
		return dir
	}
	dir, err := os.MkdirTemp("", fmt.Sprintf("traj-view-bench-%d-*", n))
	if err != nil {
		b.Fatal(err)
	}
	turns := make([]int, 0, n/50+1)
	for left := n; left > 0; left -= 50 {
		turns = append(turns, min(50, left))
	}
	calls := map[int][]trace.EnvoiCall{}
	for p := 25; p <= n; p += 25 {
		passed := min(500, p*500/n+rand.IntN(20))
		calls[p] = []trace.EnvoiCall{tracetest.RunTests("basics", passed, 520-passed)}
	}
	tdir := filepath.Join(dir, store.TrajectoriesDir, "big")
	if err := os.MkdirAll(tdir, 0o755); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	tracetest.WriteDir(b, tdir, tracetest.Spec{TrajectoryID: "big", Turns: turns, PartSize: 4096, EnvoiCalls: calls, End: trace.EndPartLimit,
		Commit: func(p int) string { return tracetest.Commit(benchCommitStart(p)) }})
	b.Logf("wrote a %d-part trace in %v", n, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	data, err := replay.MarshalIndent(benchEvaluation(n))
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tdir, store.EvaluationName), data, 0o644); err != nil {
		b.Fatal(err)
	}
	b.Logf("wrote its %.1f MB evaluation in %v", float64(len(data))/1e6, time.Since(start).Round(time.Millisecond))
	benchStores[n] = dir
	return dir
}

// benchCommitEvery is how many parts share a commit in the bench
// trajectory. evaluation.json repeats every case of every suite per
// distinct commit (about 380 KB at 3,058 cases), so a commit every 100
// parts makes the 10,000-part report about 30 MB, the size measured on the
// synthetic 10,000-part trajectories of the viewer's issue; a commit every
// 4 parts at this suite would be about 1 GB.
const benchCommitEvery = 140

// benchCommitStart is the first part of part p's commit.
func benchCommitStart(p int) int { return (p-1)/benchCommitEvery*benchCommitEvery + 1 }

// benchSuites is the public suites' shape: 3,058 cases in four suites,
// named as the C-compiler environment names them.
var benchSuites = []struct {
	name  string
	cases int
	id    func(c int) string
}{
	{"basics", 68, func(c int) string { return fmt.Sprintf("basics/group_%d/case_%02d.c", c/10, c) }},
	{"c_testsuite", 220, func(c int) string { return fmt.Sprintf("c_testsuite/%05d.c", c+1) }},
	{"torture", 1470, func(c int) string { return fmt.Sprintf("torture/%d-1.c", 20000112+c*37) }},
	{"wacct", 1300, func(c int) string { return fmt.Sprintf("wacct/chapter_%d/valid/program_%04d.c", 1+c/65, c) }},
}

// benchEvaluation is the evaluate report of bigStore's trajectory as
// replay.Evaluate lays it out: each commit's result with every case, the
// parts' commits and counts, the test attribution of replay.Attribute.
// Cases pass as the trajectory progresses, each at its own part, and
// about one result in 200 flips a passing case to failing (a regression
// mark, then a fix).
func benchEvaluation(n int) *replay.Output {
	out := &replay.Output{TrajectoryID: "big", CommitEvaluations: map[string]*replay.CommitEvaluation{},
		PartToCommit: replay.PartMap[string]{}, PartEvaluations: replay.PartMap[*replay.PartEvaluation]{},
		Environment: replay.EnvironmentRef{Name: "ccompiler", Version: "bench"}}
	for _, s := range benchSuites {
		out.TestPaths = append(out.TestPaths, s.name)
	}
	results := map[int]replay.Result{}
	var starts []int
	for s := 1; s <= n; s += benchCommitEvery {
		starts = append(starts, s)
	}
	rng := rand.New(rand.NewPCG(uint64(n), 7))
	for i, start := range starts {
		progress := float64(i+1) / float64(len(starts))
		r := replay.Result{Suites: map[string]replay.SuiteResult{}}
		for si, s := range benchSuites {
			sr := replay.SuiteResult{Cases: make([]replay.CaseResult, s.cases)}
			for c := range s.cases {
				// Case c of suite si first passes at its own share of the run.
				at := float64((c*7919+si*104729)%s.cases) / float64(s.cases) * 0.98
				pass := at < progress && rng.IntN(200) != 0
				sr.Cases[c] = replay.CaseResult{Name: s.id(c), Passed: pass}
				if pass {
					sr.Passed++
				} else {
					sr.Failed++
				}
			}
			sr.Total = s.cases
			r.Suites[s.name] = sr
		}
		results[start] = r
		commit := tracetest.Commit(start)
		ce := &replay.CommitEvaluation{Tree: tracetest.Commit(-start), Suites: r.Suites, Source: replay.SourceEvaluated, DurationMs: 41_000}
		ce.Passed, ce.Failed, ce.Total = r.Totals()
		ce.PassRate = replay.PassRate(ce.Passed, ce.Total)
		pe := &replay.PartEvaluation{Commit: commit, Passed: ce.Passed, Failed: ce.Failed, Total: ce.Total, PassRate: ce.PassRate, Suites: map[string]replay.SuiteSummary{}}
		for name, s := range r.Suites {
			pe.Suites[name] = replay.SuiteSummary{Passed: s.Passed, Failed: s.Failed, Total: s.Total, PassRate: replay.PassRate(s.Passed, s.Total)}
		}
		for p := start; p < start+benchCommitEvery && p <= n; p++ {
			ce.Parts = append(ce.Parts, p)
			out.PartToCommit[p] = commit
			out.PartEvaluations[p] = pe
		}
		out.CommitEvaluations[commit] = ce
	}
	// A case's state changes only where a commit starts, so attributing
	// over the commits' first parts gives what every part would.
	out.TestAttribution = replay.Attribute(starts, func(p int) (replay.Result, bool) { r, ok := results[p]; return r, ok })
	out.CommitsEvaluated = len(starts)
	out.Stats = replay.Stats{Parts: n, UniqueCommits: len(starts), UniqueTrees: len(starts), TreesEvaluated: len(starts), Workers: 2, DurationMs: int64(len(starts)) * 20_500}
	return out
}

func removeBenchStores() {
	benchMu.Lock()
	defer benchMu.Unlock()
	for _, d := range benchStores {
		os.RemoveAll(d)
	}
}

// BenchmarkIndex measures building a trace's part index from nothing (a
// full read) and extending it by one appended part (a resumed read).
func BenchmarkIndex(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("parts=%d", n), func(b *testing.B) {
			path := filepath.Join(bigStore(b, n), store.TrajectoriesDir, "big", store.TraceName)
			fi, _ := os.Stat(path)
			b.SetBytes(fi.Size())
			b.ResetTimer()
			for range b.N {
				var ix Index
				if err := updateFromFile(&ix, path); err != nil {
					b.Fatal(err)
				}
				if len(ix.Parts) != n {
					b.Fatalf("indexed %d parts", len(ix.Parts))
				}
			}
		})
	}
}

// BenchmarkIndexAppend measures following a live trace: one part appended
// with the real writer, then the index brought up to date.
func BenchmarkIndexAppend(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("parts=%d", n), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), store.TraceName)
			w, err := trace.Create(path, tracetest.Header("live"), trace.WriterOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			if err := w.BeginTurn(trace.TurnStart{Timestamp: tracetest.Time(0), Prompt: "go", SessionID: "ses_root"}); err != nil {
				b.Fatal(err)
			}
			for p := 1; p <= n; p++ {
				if err := w.AppendPart(tracetest.RealisticPart(p, tracetest.Commit(p), 4096)); err != nil {
					b.Fatal(err)
				}
			}
			var ix Index
			if err := updateFromFile(&ix, path); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				p := n + i + 1
				if err := w.AppendPart(tracetest.RealisticPart(p, tracetest.Commit(p), 4096)); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if err := updateFromFile(&ix, path); err != nil {
					b.Fatal(err)
				}
			}
			if ix.FullScans != 1 {
				b.Fatalf("%d full scans: appends were not read incrementally", ix.FullScans)
			}
		})
	}
}

// evalAwait evaluates a promise-returning expression and waits for it.
func evalAwait[T any](expr string) chromedp.Action[T] {
	return chromedp.Evaluate[T](expr, func(p *runtime.EvaluateParams) { p.AwaitPromise = new(true) })
}

// BenchmarkFirstPaint runs `traj view` as its own process, opens the
// trajectory page in headless Chromium and reports the milliseconds from
// navigation until the first timeline rows are drawn (after the summary
// and the score curve) and until the summary and the curve show the
// evaluation's score: cold is a fresh server with an empty cache folder
// (the part index built from the trace, evaluation.json read), warm a
// second visit, restart a new server on the cache the first one left;
// server-cpu-ms-cold is the processor time the server used until the cold
// page showed the evaluation's score (the page's times stretch with the
// machine's load, this hardly).
// With TRAJ_BASELINE_BIN set (a traj binary built from an older commit)
// it measures that one too, side by side: baseline-ms-cold and the ratio
// cold/baseline-cold.
func BenchmarkFirstPaint(b *testing.B) {
	bins := benchBinaries(b)
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("parts=%d", n), func(b *testing.B) {
			dir := bigStore(b, n)
			ctx := browser(b, 1400, 900)
			// One visit untimed: the browser's own first load (its caches,
			// compiling the page's script) is no server's.
			v := startView(b, bins[0].path, dir, b.TempDir())
			run(b, ctx, "log in", chromedp.Navigate(v.base+"/static/app.css?token="+v.token))
			paintTimes(b, ctx, v.base, false)
			v.stop()
			sum := map[string]float64{}
			b.ResetTimer()
			for i := range b.N {
				for j := range bins {
					// Alternate which binary goes first.
					bin := bins[(i+j)%len(bins)]
					cache := b.TempDir()
					v := startView(b, bin.path, dir, cache)
					// The session cookie from a page that reads no trajectory.
					run(b, ctx, "log in", chromedp.Navigate(v.base+"/static/app.css?token="+v.token))
					for _, visit := range []string{"cold", "warm"} {
						rows, score := paintTimes(b, ctx, v.base, visit == "warm")
						sum[bin.prefix+"ms-"+visit] += rows
						sum[bin.prefix+"ms-score-"+visit] += score
						if visit == "cold" {
							sum[bin.prefix+"server-cpu-ms-cold"] += cpuMS(b, v.cmd.Process.Pid)
						}
					}
					v.stop()
					v = startView(b, bin.path, dir, cache)
					run(b, ctx, "log in again", chromedp.Navigate(v.base+"/static/app.css?token="+v.token))
					rows, score := paintTimes(b, ctx, v.base, false)
					sum[bin.prefix+"ms-restart"] += rows
					sum[bin.prefix+"ms-score-restart"] += score
					v.stop()
				}
			}
			for k, v := range sum {
				b.ReportMetric(v/float64(b.N), k)
			}
			if base := sum["baseline-ms-cold"]; base > 0 {
				b.ReportMetric(sum["ms-cold"]/base, "cold/baseline-cold")
			}
		})
	}
}

// cpuMS is the processor time pid has used so far (user and system, all
// threads): unlike the page's times it hardly depends on what else the
// machine runs.
func cpuMS(b *testing.B, pid int) float64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command name: state is the 3rd field of the line,
	// utime and stime the 14th and 15th, in clock ticks of 10 ms.
	_, rest, _ := strings.Cut(string(data), ") ")
	f := strings.Fields(rest)
	if len(f) < 13 {
		b.Fatalf("/proc/%d/stat: %q", pid, data)
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) * 10
}

// paintTimes opens the trajectory page and returns the milliseconds until
// its first timeline rows were drawn and until both the summary and the
// curve named the evaluation as the score's source.
func paintTimes(b *testing.B, ctx context.Context, base string, reload bool) (rows, score float64) {
	b.Helper()
	open := chromedp.Navigate(base + "/#/t/big")
	if reload {
		open = chromedp.Reload()
	}
	run(b, ctx, "open big", open, chromedp.WaitVisible(chromedp.CSS(`#timeline .row[data-part="1"] .title`)))
	rows = get(b, ctx, "first rows", chromedp.Evaluate[float64](`window.trajViewFirstRows`))
	score = get(b, ctx, "evaluation's score", evalAwait[float64](`new Promise((resolve) => {
		const done = () => document.querySelector('#score-source[data-source="evaluation"]') && document.getElementById("curve-source").textContent === "from evaluation";
		const look = () => done() ? resolve(performance.now()) : setTimeout(look, 5);
		look();
	})`))
	return rows, score
}

// BenchmarkJump jumps to random parts of an open trajectory page and
// reports the milliseconds until the part's detail and its timeline page
// are drawn.
func BenchmarkJump(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("parts=%d", n), func(b *testing.B) {
			dir := bigStore(b, n)
			srv, err := New(context.Background(), Options{StoreURL: dir, CacheDir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			hs := httptestServer(b, srv)
			ctx := browser(b, 1400, 900)
			run(b, ctx, "open big", chromedp.Navigate(hs+"/?token="+srv.Token()), chromedp.Navigate(hs+"/#/t/big"),
				chromedp.WaitVisible(chromedp.CSS(`#timeline .row[data-part="1"] .title`)))
			var total, worst float64
			b.ResetTimer()
			for range b.N {
				p := 1 + rand.IntN(n)
				ms := get(b, ctx, "jump", evalAwait[float64](fmt.Sprintf(
					`(async () => { const t = performance.now(); await window.trajView.jump(%d); return performance.now() - t; })()`, p)))
				total += ms
				worst = max(worst, ms)
			}
			b.ReportMetric(total/float64(b.N), "ms/jump")
			b.ReportMetric(worst, "ms-worst")
		})
	}
}

// BenchmarkServerRSS runs `traj view` as its own process on a store with
// one trajectory of n parts and its evaluation, asks for what a
// trajectory page and a few jumps ask for, and reports the server's peak
// resident memory: with TRAJ_BASELINE_BIN set, the baseline's too.
func BenchmarkServerRSS(b *testing.B) {
	bins := benchBinaries(b)
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("parts=%d", n), func(b *testing.B) {
			dir := bigStore(b, n)
			peak := map[string]float64{}
			for range b.N {
				for _, bin := range bins {
					peak[bin.prefix] = max(peak[bin.prefix], serverPeakMB(b, bin.path, dir, n))
				}
			}
			for prefix, mb := range peak {
				b.ReportMetric(mb, prefix+"MB-peak-RSS")
			}
			if base := peak["baseline-"]; base > 0 {
				b.ReportMetric(peak[""]/base, "RSS/baseline-RSS")
			}
		})
	}
}

// benchBinary is a traj binary a benchmark runs; prefix names its metrics.
type benchBinary struct{ prefix, path string }

// benchBinaries is this traj and, when TRAJ_BASELINE_BIN names one, the
// baseline.
func benchBinaries(b *testing.B) []benchBinary {
	bins := []benchBinary{{"", trajBinary(b)}}
	if p := os.Getenv("TRAJ_BASELINE_BIN"); p != "" {
		bins = append(bins, benchBinary{"baseline-", p})
	}
	return bins
}

// viewProcess is a running `traj view`.
type viewProcess struct {
	cmd         *exec.Cmd
	base, token string
}

// startView runs `traj view` on the store dir with cache folder cache and
// waits for the URL it prints.
func startView(b *testing.B, bin, dir, cache string) *viewProcess {
	b.Helper()
	cmd := exec.Command(bin, "view", "--store", dir, "--addr", "127.0.0.1:0", "--cache-dir", cache)
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	v := &viewProcess{cmd: cmd}
	b.Cleanup(v.stop)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatalf("traj view printed no URL: %v", err)
	}
	i := strings.Index(line, "http://")
	if i < 0 {
		b.Fatalf("traj view printed %q", line)
	}
	v.base, v.token, _ = strings.Cut(strings.TrimSpace(line[i:]), "/?token=")
	return v
}

func (v *viewProcess) stop() {
	if v.cmd.ProcessState == nil {
		v.cmd.Process.Kill()
		v.cmd.Wait()
	}
}

func serverPeakMB(b *testing.B, bin, dir string, n int) float64 {
	b.Helper()
	v := startView(b, bin, dir, b.TempDir())
	defer v.stop()
	c := &client{t: nil, base: v.base, token: v.token}
	for _, p := range []string{"/api/trajectories", "/api/t/big", "/api/t/big/curve", "/api/t/big/parts?from=1&n=200", "/api/t/big/tests"} {
		benchGet(b, c, p)
	}
	for range 20 {
		p := 1 + rand.IntN(n)
		benchGet(b, c, fmt.Sprintf("/api/t/big/parts?from=%d&n=200", max(1, p-100)))
		benchGet(b, c, fmt.Sprintf("/api/t/big/parts/%d", p))
	}
	return peakRSSMB(b, v.cmd.Process.Pid)
}

func benchGet(b *testing.B, c *client, path string) {
	b.Helper()
	req, _ := http.NewRequest("GET", c.base+path, nil)
	req.AddCookie(&http.Cookie{Name: cookieName, Value: c.token})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("GET %s: %d", path, resp.StatusCode)
	}
}

// peakRSSMB reads VmHWM (peak resident set) of pid.
func peakRSSMB(b *testing.B, pid int) float64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	b.Fatal("no VmHWM in /proc status")
	return 0
}

// trajBinary is TRAJ_BIN (make bench builds it), else a fresh build.
func trajBinary(b *testing.B) string {
	b.Helper()
	if p := os.Getenv("TRAJ_BIN"); p != "" {
		return p
	}
	out := filepath.Join(b.TempDir(), "traj")
	cmd := exec.Command("go", "build", "-o", out, "github.com/trajlab/traj/cmd/traj")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("build traj: %v", err)
	}
	return out
}

func httptestServer(b *testing.B, srv *Server) string {
	hs := httptest.NewServer(srv)
	b.Cleanup(hs.Close)
	return hs.URL
}
