package report_test

import (
	"bytes"
	"context"
	"flag"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/report"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/local"
	s3store "github.com/trajlab/traj/trace/store/s3"
	"github.com/trajlab/traj/trace/store/s3test"
	"github.com/trajlab/traj/trace/tracetest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func f(v float64) *float64 { return &v }

// sample is a fixed report: two evaluated trajectories and one with rates
// from its run_tests calls only.
func sample() report.Report {
	return report.Report{Title: "sample <report>", Source: "./runs", Trajectories: []report.Trajectory{
		{ID: "traj-a", Agent: "opencode@1.18.33", Harness: "opencode", HarnessVersion: "1.18.33", Model: "scripted/a", Task: "c-compiler", Parts: 12, Turns: 3, EndReason: "solved",
			StartedAt: "2026-11-21T10:00:00.000000Z", DurationSeconds: f(3725), Tokens: &trace.Tokens{Input: 120000, Output: 8000}, Cost: f(0.42),
			Suites:   []report.SuiteRate{{Suite: "basics", Passed: 70, Total: 70, Rate: 1, Part: 12}},
			PassRate: f(1), RateSource: report.FromEvaluation,
			ByPart: []report.Point{{1, 0}, {3, 0.2}, {6, 0.5}, {9, 0.4}, {12, 1}},
			SuiteByPart: map[string][]report.Point{
				"basics": {{1, 0}, {3, 0.2}, {6, 0.5}, {9, 0.4}, {12, 1}},
			},
			Regressions: []replay.Regression{{Test: "basics/smoke/hello.c", BrokenAt: 9, FixedAt: 12}},
		},
		{ID: "traj-b", Agent: "claude-code@2.0.14", Harness: "claude-code", HarnessVersion: "2.0.14", Model: "scripted/b", Parts: 30, Turns: 6, EndReason: "part_limit",
			StartedAt: "2026-11-21T11:00:00.000000Z", DurationSeconds: f(600),
			Suites:   []report.SuiteRate{{Suite: "basics", Passed: 35, Total: 70, Rate: 0.5, Part: 30}, {Suite: "wacct/chapter_1", Passed: 3, Total: 24, Rate: 0.125, Part: 28}},
			PassRate: f(38.0 / 94), RateSource: report.FromRunTests,
			ByPart: []report.Point{{5, 0.1}, {15, 0.3}, {28, 0.4}},
		},
		{ID: "traj-c", Agent: "opencode@1.18.30", Harness: "opencode", HarnessVersion: "1.18.30", Model: "scripted/c", Parts: 2, Turns: 1, EndReason: "agent_error", Suites: []report.SuiteRate{}, ByPart: []report.Point{}},
	}}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from the golden file; run go test ./replay/report -update and review the diff", name)
	}
}

func TestWritersGolden(t *testing.T) {
	r := sample()
	var h, c, j bytes.Buffer
	if err := report.WriteHTML(&h, r); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteCSV(&c, r); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteJSON(&j, r); err != nil {
		t.Fatal(err)
	}
	golden(t, "sample.html", h.Bytes())
	golden(t, "sample.csv", c.Bytes())
	golden(t, "sample.json", j.Bytes())
}

func TestHTMLIsSelfContained(t *testing.T) {
	var b bytes.Buffer
	if err := report.WriteHTML(&b, sample()); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, bad := range []string{"<script", "<link", "@import", "src=", "url("} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q: it must not load anything", bad)
		}
	}
	// The only URL is the SVG namespace, which is never fetched.
	for _, u := range regexp.MustCompile(`https?://[^"' ]+`).FindAllString(page, -1) {
		if u != "http://www.w3.org/2000/svg" {
			t.Errorf("page references %s", u)
		}
	}
	if n := strings.Count(page, "<svg"); n != 5 { // overall + 3 per trajectory + end reasons
		t.Errorf("%d charts, want 5", n)
	}
	for _, want := range []string{"sample &lt;report&gt;", "traj-b", "wacct/chapter_1 3/24", "part_limit", "1:02:05", "$0.4200", "128k"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func TestSummarizeOriginalTrace(t *testing.T) {
	tr, err := trace.Read(bytes.NewReader(tracetest.OriginalTrace()))
	if err != nil {
		t.Fatal(err)
	}
	s := report.Summarize(tr, nil)
	if s.Parts != 5 || s.Turns != 2 || s.EndReason != "part_limit" || s.RateSource != report.FromRunTests || s.Tokens != nil {
		t.Fatalf("summary %+v", s)
	}
	if len(s.Suites) != 2 || s.Suites[0] != (report.SuiteRate{Suite: "basics", Passed: 9, Total: 10, Rate: 0.9, Part: 5}) ||
		s.Suites[1].Suite != "wacct/chapter_1" || s.Suites[1].Passed != 18 {
		t.Fatalf("suites %+v", s.Suites)
	}
	if s.PassRate == nil || *s.PassRate != 27.0/34 {
		t.Fatalf("pass rate %v", s.PassRate)
	}
	if len(s.ByPart) != 2 || s.ByPart[0] != (report.Point{Part: 3, Rate: 0.4}) || s.ByPart[1].Part != 5 {
		t.Fatalf("by part %+v", s.ByPart)
	}
	if s.DurationSeconds == nil || *s.DurationSeconds <= 0 {
		t.Fatalf("duration %v", s.DurationSeconds)
	}
}

func TestCollectFromStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := local.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	// One original trace, one traj trace with an evaluation, one damaged.
	orig := tracetest.OriginalTrace()
	save(t, st, store.TraceKey("traj-orig"), orig)
	save(t, st, store.TraceKey("traj-broken"), []byte(`{"trajectory_id": "x", "turns": [`))
	tmp := t.TempDir()
	tracetest.WriteDir(t, tmp, tracetest.Spec{TrajectoryID: "traj-new", Turns: []int{2, 2}, End: trace.EndSolved})
	data, _ := os.ReadFile(filepath.Join(tmp, "agent_trace.json"))
	save(t, st, store.TraceKey("traj-new"), data)
	// A second folder holding the same trace poses as traj-new.
	save(t, st, store.TraceKey("traj-copy"), data)
	ev := &replay.Output{TrajectoryID: "traj-new", PartEvaluations: replay.PartMap[*replay.PartEvaluation]{
		1: {Passed: 1, Total: 4, PassRate: 0.25, Suites: map[string]replay.SuiteSummary{"basics": {Passed: 1, Total: 4, PassRate: 0.25}}},
		4: {Passed: 4, Total: 4, PassRate: 1, Suites: map[string]replay.SuiteSummary{"basics": {Passed: 4, Total: 4, PassRate: 1}}},
	}}
	evData, _ := replay.MarshalIndent(ev)
	save(t, st, store.EvaluationKey("traj-new"), evData)

	trajs, err := report.Collect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Rows are named by their folder; a trace that names another
	// trajectory keeps that name in TraceID (issue 11 item 6).
	if len(trajs) != 3 || trajs[0].ID != "traj-copy" || trajs[1].ID != "traj-new" || trajs[2].ID != "traj-orig" {
		t.Fatalf("collected %d trajectories: %+v", len(trajs), trajs)
	}
	if c := trajs[0]; c.TraceID != "traj-new" || c.Folder != "trajectories/traj-copy/" {
		t.Fatalf("traj-copy %+v", c)
	}
	if n := trajs[1]; n.RateSource != report.FromEvaluation || *n.PassRate != 1 || len(n.ByPart) != 2 || n.EndReason != "solved" || n.TraceID != "" {
		t.Fatalf("traj-new %+v", n)
	}
	if o := trajs[2]; o.RateSource != report.FromRunTests || o.TraceID != "a3f1c2d4-0b5e-4c7a-9e21-5d6f7a8b9c01" {
		t.Fatalf("traj-orig %+v", o)
	}
	var text bytes.Buffer
	if err := report.WriteText(&text, report.Report{Trajectories: trajs}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), `traj-copy (trace says "traj-new")`) {
		t.Fatalf("the table does not name the disagreement:\n%s", text.String())
	}
}

func save(t *testing.T, st store.Store, key string, data []byte) {
	t.Helper()
	if err := st.Save(context.Background(), key, store.Bytes(data)); err != nil {
		t.Fatal(err)
	}
}

// The page renders in headless Chromium when it is installed (make
// report-png installs it); the screenshot must be a real image.
func TestRenderWithChromium(t *testing.T) {
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium not installed (make report-png installs it)")
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	var b bytes.Buffer
	if err := report.WriteHTML(&b, sample()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	png := filepath.Join(dir, "report.png")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, report.ChromiumArgs(filepath.Join(dir, "profile"), png, page)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	img, err := os.ReadFile(png)
	if err != nil {
		t.Fatal(err)
	}
	if len(img) < 10_000 || !bytes.HasPrefix(img, []byte("\x89PNG")) {
		t.Fatalf("screenshot is %d bytes, not a rendered page", len(img))
	}
}

func TestCollectFolders(t *testing.T) {
	root := t.TempDir()
	tracetest.WriteDir(t, mkdir(t, filepath.Join(root, "a")), tracetest.Spec{TrajectoryID: "traj-a", Turns: []int{3}, End: trace.EndPartLimit,
		EnvoiCalls: map[int][]trace.EnvoiCall{2: {tracetest.RunTests("basics", 3, 7)}}})
	tracetest.WriteDir(t, mkdir(t, filepath.Join(root, "nested", "b")), tracetest.Spec{TrajectoryID: "traj-b", Turns: []int{1, 1}, End: trace.EndSolved})
	if err := os.WriteFile(filepath.Join(root, "nested", "b", "evaluation.json"), []byte(`{"part_evaluations": {"2": {"pass_rate": 1, "passed": 5, "total": 5, "suites": {"basics": {"passed": 5, "total": 5, "pass_rate": 1}}}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(mkdir(t, filepath.Join(root, "junk")), "agent_trace.json"), []byte("not json"), 0o644)
	trajs, err := report.CollectFolders(context.Background(), root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(trajs) != 2 || trajs[0].ID != "traj-a" || trajs[1].ID != "traj-b" {
		t.Fatalf("collected %+v", trajs)
	}
	if a := trajs[0]; a.RateSource != report.FromRunTests || a.Suites[0].Passed != 3 || a.Suites[0].Total != 10 {
		t.Fatalf("traj-a %+v", a)
	}
	if b := trajs[1]; b.RateSource != report.FromEvaluation || *b.PassRate != 1 || b.Suites[0].Part != 2 {
		t.Fatalf("traj-b %+v", b)
	}
}

func mkdir(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The same collection from a real S3 server (versitygw on 127.0.0.1).
func TestCollectFromS3(t *testing.T) {
	srv := s3test.Start(t)
	ctx := context.Background()
	st, err := s3store.Open(ctx, srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	save(t, st, store.TraceKey("traj-orig"), tracetest.OriginalTrace())
	save(t, st, store.BundleKey("traj-orig"), []byte("not read by reports"))
	trajs, err := report.Collect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(trajs) != 1 || trajs[0].Parts != 5 || trajs[0].RateSource != report.FromRunTests {
		t.Fatalf("collected %+v", trajs)
	}
}

// Rows group by harness name, whatever version recorded them: the raw
// agent field ("opencode@1.18.33") would split one harness into as many
// groups as it has versions.
func TestByHarness(t *testing.T) {
	rate := func(v float64) *float64 { return &v }
	tr := func(agent string, pass *float64, solved int) report.Trajectory {
		r := report.Summarize(&trace.Trace{Agent: agent}, nil)
		r.PassRate, r.SolvedAt = pass, solved
		return r
	}
	tests := []struct {
		name string
		rows []report.Trajectory
		want []report.HarnessRow
	}{
		{"versions merge", []report.Trajectory{tr("opencode@1.18.33", rate(0.5), 0), tr("opencode@1.18.30", rate(1), 4)},
			[]report.HarnessRow{{Harness: "opencode", Versions: []string{"1.18.30", "1.18.33"}, Trajectories: 2, Scored: 2, MeanPassRate: rate(0.75), Solved: 1}}},
		{"harnesses apart, most first", []report.Trajectory{tr("codex@0.63.0", nil, 0), tr("claude-code@2.0.14", rate(0.2), 0), tr("claude-code", rate(0.4), 0)},
			[]report.HarnessRow{
				{Harness: "claude-code", Versions: []string{"2.0.14"}, Trajectories: 2, Scored: 2, MeanPassRate: rate(0.3)},
				{Harness: "codex", Versions: []string{"0.63.0"}, Trajectories: 1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := report.Report{Trajectories: tc.rows}.ByHarness()
			if len(got) != len(tc.want) {
				t.Fatalf("got %d rows, want %d: %+v", len(got), len(tc.want), got)
			}
			for i, w := range tc.want {
				g := got[i]
				if g.Harness != w.Harness || strings.Join(g.Versions, ",") != strings.Join(w.Versions, ",") || g.Trajectories != w.Trajectories ||
					g.Scored != w.Scored || g.Solved != w.Solved || (g.MeanPassRate == nil) != (w.MeanPassRate == nil) ||
					(g.MeanPassRate != nil && math.Abs(*g.MeanPassRate-*w.MeanPassRate) > 1e-9) {
					t.Fatalf("row %d = %+v, want %+v", i, g, w)
				}
			}
		})
	}
}
