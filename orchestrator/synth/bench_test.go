package synth

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trajlab/traj/environment/ccompiler"
	"github.com/trajlab/traj/environment/evaluation"
	"github.com/trajlab/traj/orchestrator/folder"
	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/source"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/local"
	"github.com/trajlab/traj/trace/tracetest"
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
	// TRAJ_SYNTH_DIR keeps the stores between runs (a 100,000-part one
	// takes minutes to write): DIR/<parts> is reused when it holds the
	// trajectory.
	if keep := os.Getenv("TRAJ_SYNTH_DIR"); keep != "" {
		dir := filepath.Join(keep, strconv.Itoa(parts))
		res := Result{ID: id, Dir: filepath.Join(dir, "trajectories", id), Parts: parts}
		if _, err := os.Stat(filepath.Join(res.Dir, "repo.bundle")); err == nil {
			return dir, res
		}
		os.RemoveAll(dir)
		var err error
		if res, err = Write(context.Background(), dir, Options{Parts: parts, Seed: 1}); err != nil {
			b.Fatal(err)
		}
		return dir, res
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

// run runs cmd and returns its wall time, CPU time and peak RSS. The
// peak is the child's VmHWM, polled while it runs: rusage's maxrss would
// carry this process's own peak into the child across vfork and exec.
func run(b *testing.B, cmd *exec.Cmd) (wall, cpu time.Duration, rss int64) {
	b.Helper()
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
		for {
			rss = max(rss, vmHWM(status))
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	err := cmd.Wait()
	wall = time.Since(start)
	close(done)
	<-polled
	if err != nil {
		b.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out.String())
	}
	cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return wall, cpu, rss
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

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// scaleSizes are BenchmarkScale's sizes: TRAJ_SCALE_PARTS (comma-separated;
// make stress: 1000000), else 10,000 and 100,000.
func scaleSizes(b *testing.B) []int {
	v := os.Getenv("TRAJ_SCALE_PARTS")
	if v == "" {
		return []int{10_000, 100_000}
	}
	var sizes []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 100 {
			b.Fatalf("TRAJ_SCALE_PARTS=%q: want sizes >= 100", v)
		}
		sizes = append(sizes, n)
	}
	return sizes
}

// BenchmarkScale is the table at 10,000 and 100,000 parts
// (TRAJ_SCALE_PARTS for others): the traj binary (make bench sets
// TRAJ_BIN) on a synthetic trajectory (traj trace synth), each path side
// by side with its yardstick, interleaved, at least three rounds, and
// reports the medians:
//   - append: ms a part appended to a trace of N parts vs of 100
//     (in-process, the real writer; goal <= 1.1);
//   - `traj replay checkout-part` of the last part vs `git clone
//     --no-checkout` + `git checkout` of the trajectory's repo.bundle
//     (goal <= 1.0);
//   - cached `traj replay evaluate` (every tree in the store's evaluation
//     cache; goal < 0.1 s at 10,000);
//   - `traj trace show` and `traj replay verify`: time and peak RSS;
//   - the viewer (`traj view`): first rows cold (process start to the
//     first 200 rows of the timeline, empty cache folder) and a part
//     jump (the rows around a random part and its detail, on the open
//     server);
//   - `traj export --format parquet` vs `traj trace show` (goal <= 2.5)
//     and its peak RSS (goal <= 300 MB);
//   - upload bytes per turn end: what the call records' publisher sends
//     at a turn end after N parts, vs the records' size (O(new records)).
//
// Measured: the package doc (before the export read the packs itself, at
// 100,000 parts it took 22x trace show and 375 MB).
func BenchmarkScale(b *testing.B) {
	bin := os.Getenv("TRAJ_BIN")
	if bin == "" {
		b.Skip("TRAJ_BIN is not set (make bench sets it)")
	}
	sizes := scaleSizes(b)
	table := map[string][]string{} // row -> a cell per size
	cell := func(row string, i int, format string, args ...any) {
		if table[row] == nil {
			table[row] = make([]string, len(sizes))
		}
		table[row][i] = fmt.Sprintf(format, args...)
	}
	for i, parts := range sizes {
		b.Run("parts="+strconv.Itoa(parts), func(b *testing.B) {
			st, res := synthStore(b, parts)
			bundle := filepath.Join(res.Dir, "repo.bundle")
			head, err := exec.Command("git", "bundle", "list-heads", bundle).Output()
			if err != nil {
				b.Fatal(err)
			}
			last := strings.Fields(string(head))[0]
			work := b.TempDir()
			evalOut := fillEvalCache(b, bin, st, res.ID, bundle, work)
			rounds := max(3, b.N)
			m := map[string][]time.Duration{}
			peak := map[string]int64{}
			add := func(name string) func(w, c time.Duration, r int64) {
				return func(w, c time.Duration, r int64) {
					m[name], m[name+"-cpu"], peak[name] = append(m[name], w), append(m[name+"-cpu"], c), max(peak[name], r)
				}
			}
			var upload, record int64
			b.ResetTimer()
			for i := 0; i < rounds; i++ {
				at, base := appendCost(b, parts), appendCost(b, 100)
				m["append"], m["append-100"] = append(m["append"], at), append(m["append-100"], base)

				dest := filepath.Join(work, fmt.Sprintf("traj-%d", i))
				add("checkout")(run(b, exec.Command(bin, "replay", "checkout-part", "--store", st, res.ID, "--part", strconv.Itoa(parts), "--checkout-dest", dest)))
				gdest := filepath.Join(work, fmt.Sprintf("git-%d", i))
				w1, c1, _ := run(b, exec.Command("git", "clone", "-q", "--no-checkout", bundle, gdest))
				w2, c2, _ := run(b, exec.Command("git", "-C", gdest, "checkout", "-q", last))
				add("git")(w1+w2, c1+c2, 0)
				os.RemoveAll(dest)
				os.RemoveAll(gdest)

				add("evaluate")(run(b, exec.Command(bin, "replay", "evaluate", "--store", st, res.ID, "--sandbox", "local", "--tests", "basics/smoke", "--output", evalOut)))

				out := filepath.Join(work, fmt.Sprintf("export-%d", i))
				add("export")(run(b, exec.Command(bin, "export", "--store", st, res.ID, "--format", "parquet", "--out", out)))
				os.RemoveAll(out)
				add("show")(run(b, exec.Command(bin, "trace", "show", "--store", st, res.ID)))
				add("verify")(run(b, exec.Command(bin, "replay", "verify", "--store", st, res.ID)))

				cold, jump := viewer(b, bin, st, res.ID, parts, filepath.Join(work, fmt.Sprintf("view-%d", i)))
				m["view-cold"], m["view-jump"] = append(m["view-cold"], cold), append(m["view-jump"], jump)

				upload, record = turnEndUpload(b, res.Dir)
			}
			b.StopTimer()
			ms := func(name string) float64 { return float64(median(m[name])) / 1e6 }
			ratio := func(a, c string) float64 { return float64(median(m[a])) / float64(median(m[c])) }
			mb := func(name string) float64 { return float64(peak[name]) / (1 << 20) }
			b.ReportMetric(float64(rounds), "rounds")
			b.ReportMetric(ms("append")*1000, "append-us/part")
			b.ReportMetric(ratio("append", "append-100"), "append/append@100")
			b.ReportMetric(ms("checkout"), "checkout-ms")
			b.ReportMetric(ms("git"), "git-clone-checkout-ms")
			b.ReportMetric(ratio("checkout", "git"), "checkout/git")
			b.ReportMetric(ratio("checkout-cpu", "git-cpu"), "checkout/git-cpu")
			b.ReportMetric(ms("evaluate"), "cached-evaluate-ms")
			b.ReportMetric(ms("show"), "show-ms")
			b.ReportMetric(mb("show"), "show-peak-MB")
			b.ReportMetric(ms("verify"), "verify-ms")
			b.ReportMetric(mb("verify"), "verify-peak-MB")
			b.ReportMetric(ms("view-cold"), "view-first-rows-cold-ms")
			b.ReportMetric(ms("view-jump"), "view-jump-ms")
			b.ReportMetric(ms("export"), "parquet-ms")
			b.ReportMetric(ratio("export", "show"), "parquet/show")
			b.ReportMetric(ratio("export-cpu", "show-cpu"), "parquet/show-cpu")
			b.ReportMetric(mb("export"), "parquet-peak-MB")
			b.ReportMetric(float64(upload), "upload-B/turn-end")
			b.ReportMetric(float64(record), "call-records-B")

			cell("append at N vs 100 parts", i, "%.1f vs %.1f µs = %.2fx", ms("append")*1000, ms("append-100")*1000, ratio("append", "append-100"))
			cell("checkout-part vs git clone + checkout", i, "%.0f vs %.0f ms = %.2fx (CPU %.2fx)", ms("checkout"), ms("git"), ratio("checkout", "git"), ratio("checkout-cpu", "git-cpu"))
			cell("cached evaluate", i, "%.0f ms (CPU %.0f ms)", ms("evaluate"), ms("evaluate-cpu"))
			cell("trace show / verify peak memory", i, "%.0f / %.0f MB (%.0f / %.0f ms)", mb("show"), mb("verify"), ms("show"), ms("verify"))
			cell("viewer first rows cold / part jump", i, "%.0f / %.1f ms", ms("view-cold"), ms("view-jump"))
			cell("Parquet export vs trace show, peak memory", i, "%.0f vs %.0f ms = %.2fx (CPU %.2fx), %.0f MB", ms("export"), ms("show"), ratio("export", "show"), ratio("export-cpu", "show-cpu"), mb("export"))
			cell("upload bytes per turn end", i, "%d B of %d B of records", upload, record)
		})
	}
	// The table, side by side (medians of the interleaved rounds; the
	// report over 10,000 trajectories is replay/report's
	// BenchmarkReport10000).
	var out strings.Builder
	fmt.Fprintf(&out, "\n| path | goal |")
	for _, n := range sizes {
		fmt.Fprintf(&out, " %d parts |", n)
	}
	out.WriteString("\n|---|---|" + strings.Repeat("---|", len(sizes)) + "\n")
	for _, r := range []struct{ row, goal string }{
		{"append at N vs 100 parts", "<= 1.1x"},
		{"checkout-part vs git clone + checkout", "<= 1.0x"},
		{"cached evaluate", "< 0.1 s at 10k, < 0.3 s at 1M"},
		{"trace show / verify peak memory", "<= 100 MB at 1M"},
		{"viewer first rows cold / part jump", "< 1 s / < 100 ms at 1M"},
		{"Parquet export vs trace show, peak memory", "<= 2.5x, <= 300 MB at 1M"},
		{"upload bytes per turn end", "O(new records)"},
	} {
		fmt.Fprintf(&out, "| %s | %s |", r.row, r.goal)
		for _, c := range table[r.row] {
			fmt.Fprintf(&out, " %s |", c)
		}
		out.WriteString("\n")
	}
	fmt.Fprintf(&out, "load average at the end: %.1f\n", loadAverage())
	b.Log(out.String())
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

// appendCost is the time one ~4 KB part takes to append (the real
// writer, no fsync) to a trace that holds parts parts: the median of 200.
func appendCost(b *testing.B, parts int) time.Duration {
	b.Helper()
	path := filepath.Join(b.TempDir(), store.TraceName)
	w, err := trace.Create(path, tracetest.Header("append"), trace.WriterOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	if err := w.BeginTurn(trace.TurnStart{Prompt: "go"}); err != nil {
		b.Fatal(err)
	}
	small := tracetest.RealisticPart(1, tracetest.Commit(1), 400)
	for i := 1; i <= parts; i++ {
		small.Part = i
		if err := w.AppendPart(small); err != nil {
			b.Fatal(err)
		}
	}
	p := tracetest.RealisticPart(parts+1, tracetest.Commit(parts+1), 4096)
	var ds []time.Duration
	for i := range 200 {
		p.Part = parts + 1 + i
		start := time.Now()
		if err := w.AppendPart(p); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(start))
	}
	return median(ds)
}

// fillEvalCache puts a result for every tree of the bundle into the
// store's evaluation cache, as an earlier evaluate would have, runs the
// first evaluate (it writes the report) and returns the report's path.
func fillEvalCache(b *testing.B, bin, st, id, bundle, work string) string {
	b.Helper()
	ctx := context.Background()
	env, err := ccompiler.New(ccompiler.Config{TestsDir: os.Getenv("TRAJ_TESTS_DIR")})
	if err != nil {
		b.Fatal(err)
	}
	bare := filepath.Join(work, "trees.git")
	if out, err := exec.Command("git", "clone", "-q", "--bare", bundle, bare).CombinedOutput(); err != nil {
		b.Fatalf("git clone: %v\n%s", err, out)
	}
	out, err := exec.Command("git", "-C", bare, "log", "--all", "--format=%T").Output()
	if err != nil {
		b.Fatal(err)
	}
	os.RemoveAll(bare)
	lst, err := local.Open(st)
	if err != nil {
		b.Fatal(err)
	}
	// The version the cache keys carry: the environment's, what the run
	// marked on it (evaluation.Version) and the sandbox provider.
	var recorded evaluation.Settings
	f, err := os.Open(filepath.Join(st, filepath.FromSlash(store.TraceKey(id))))
	if err != nil {
		b.Fatal(err)
	}
	errStop := errors.New("stop")
	err = trace.Scan(f, trace.Visitor{OnHeader: func(h *trace.Header) error {
		if h.Environment != nil {
			recorded = evaluation.Recorded(h.Environment)
		}
		return errStop
	}})
	f.Close()
	if !errors.Is(err, errStop) {
		b.Fatalf("read the trace's header: %v", err)
	}
	version := evaluation.Version(env.Version(), recorded) + evaluation.SandboxMark + "local"
	cache := source.Cache(lst)
	paths := []string{"basics/smoke"}
	trees := strings.Fields(string(out))
	for _, tree := range trees {
		e := replay.CacheEntry{Tree: tree, EnvVersion: version, TestPaths: paths, Result: replay.Result{Suites: map[string]replay.SuiteResult{
			"basics": {Passed: 3, Failed: 1, Total: 4}}}, DurationMs: 900}
		if err := cache.Put(ctx, evaluation.CacheKey(tree, version, paths), e); err != nil {
			b.Fatal(err)
		}
	}
	// The first evaluate writes the report; it must have found every tree
	// in the cache (a key spelled otherwise would evaluate them all).
	report := filepath.Join(work, "evaluation.json")
	first := exec.Command(bin, "replay", "evaluate", "--store", st, id, "--sandbox", "local", "--tests", "basics/smoke", "--output", report)
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
		case <-time.After(10 * time.Minute):
			first.Process.Kill()
		}
	}()
	run(b, first)
	close(done)
	data, err := os.ReadFile(report)
	if err != nil {
		b.Fatal(err)
	}
	var rep struct {
		Stats struct {
			UniqueTrees    int `json:"unique_trees"`
			TreesEvaluated int `json:"trees_evaluated"`
		} `json:"stats"`
	}
	if err := json.Unmarshal(data, &rep); err != nil || rep.Stats.UniqueTrees == 0 || rep.Stats.TreesEvaluated != 0 {
		b.Fatalf("the first evaluate built trees (%+v, %v): they were not all in the cache", rep.Stats, err)
	}
	return report
}

// viewer starts `traj view` on the store with an empty cache folder and
// returns the time from its start to the first 200 rows of the
// trajectory's timeline, and the median time of 20 part jumps (the rows
// around a random part and its detail).
func viewer(b *testing.B, bin, st, id string, parts int, cacheDir string) (cold, jump time.Duration) {
	b.Helper()
	start := time.Now()
	cmd := exec.Command(bin, "view", "--store", st, "--addr", "127.0.0.1:0", "--cache-dir", cacheDir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
		os.RemoveAll(cacheDir)
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	i := strings.Index(line, "http://")
	if err != nil || i < 0 {
		b.Fatalf("traj view printed %q (%v)", line, err)
	}
	base, token, _ := strings.Cut(strings.TrimSpace(line[i:]), "/?token=")
	get := func(path string) {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.AddCookie(&http.Cookie{Name: "traj_view", Value: token})
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
	}
	get("/api/t/" + id + "/parts?from=1&n=200")
	cold = time.Since(start)
	rng := rand.New(rand.NewPCG(uint64(parts), 1))
	var ds []time.Duration
	for range 20 {
		p := 1 + rng.IntN(parts)
		t := time.Now()
		get(fmt.Sprintf("/api/t/%s/parts?from=%d&n=200", id, max(1, p-100)))
		get(fmt.Sprintf("/api/t/%s/parts/%d", id, p))
		ds = append(ds, time.Since(t))
	}
	return cold, median(ds)
}

// countingUploader counts the bytes enqueued.
type countingUploader struct{ bytes int64 }

func (u *countingUploader) Enqueue(_ string, src store.Source) error {
	rc, n, err := src.Open()
	if err != nil {
		return err
	}
	rc.Close()
	u.bytes += n
	return nil
}

// turnEndUpload is what the call records' publisher uploads at a turn end
// after the trajectory's parts: its records are copied into a folder, a
// first turn end sends them, one turn's worth of calls (the last 1 %
// of the lines again) is appended, and the next turn end's bytes are
// returned beside the records' size.
func turnEndUpload(b *testing.B, trajDir string) (turnEnd, records int64) {
	b.Helper()
	dir := b.TempDir()
	var tail [][]byte
	for _, name := range []string{store.ModelCallsName, store.ToolCallsName} {
		data, err := os.ReadFile(filepath.Join(trajDir, name))
		if err != nil {
			b.Fatal(err)
		}
		records += int64(len(data))
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			b.Fatal(err)
		}
		lines := bytes.SplitAfter(data, []byte("\n"))
		tail = append(tail, bytes.Join(lines[len(lines)-len(lines)/100-1:], nil))
	}
	up := &countingUploader{}
	pub := folder.NewHistoryPublisher("upload", dir, nil, up, "", nil)
	pub.TurnEnded()
	up.bytes = 0
	for i, name := range []string{store.ModelCallsName, store.ToolCallsName} {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			b.Fatal(err)
		}
		f.Write(tail[i])
		f.Close()
	}
	pub.TurnEnded()
	return up.bytes, records
}
