package view

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/chunk"
	"github.com/trajlab/traj/trace/store/location"
	"github.com/trajlab/traj/trace/store/s3test"
	"github.com/trajlab/traj/trace/tracetest"
)

var (
	sampleOnce sync.Once
	sampleDir  string
)

// sharedSample builds the sample store once per test binary.
func sharedSample(t *testing.T) string {
	t.Helper()
	sampleOnce.Do(func() {
		dir, err := os.MkdirTemp("", "traj-view-sample-*")
		if err != nil {
			t.Fatal(err)
		}
		sampleStore(t, dir)
		sampleDir = dir
	})
	if sampleDir == "" {
		t.Fatal("sample store could not be built")
	}
	return sampleDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if sampleDir != "" {
		os.RemoveAll(sampleDir)
	}
	removeBenchStores()
	os.Exit(code)
}

// testServer serves opts on 127.0.0.1 and returns a client holding the
// session cookie.
func testServer(t *testing.T, opts Options) (*Server, string, *client) {
	t.Helper()
	if opts.CacheDir == "" {
		opts.CacheDir = t.TempDir()
	}
	opts.Poll = -1
	srv, err := New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return srv, hs.URL, &client{t: t, base: hs.URL, token: srv.Token()}
}

type client struct {
	t     *testing.T
	base  string
	token string
}

func (c *client) get(path string, v any) int {
	c.t.Helper()
	req, _ := http.NewRequest("GET", c.base+path, nil)
	req.AddCookie(&http.Cookie{Name: cookieName, Value: c.token})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if v != nil && resp.StatusCode == 200 {
		if err := json.Unmarshal(body, v); err != nil {
			c.t.Fatalf("GET %s: %v\n%s", path, err, body)
		}
	}
	return resp.StatusCode
}

func (c *client) mustGet(path string, v any) {
	c.t.Helper()
	if code := c.get(path, v); code != 200 {
		c.t.Fatalf("GET %s: status %d", path, code)
	}
}

func TestGuard(t *testing.T) {
	srv, base, _ := testServer(t, Options{StoreURL: sharedSample(t)})
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(host, path string, cookie string) *http.Response {
		req, _ := http.NewRequest("GET", base+path, nil)
		if host != "" {
			req.Host = host
		}
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: cookieName, Value: cookie})
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	port := strings.TrimPrefix(base, "http://127.0.0.1:")
	for _, tc := range []struct {
		name, host, path, cookie string
		want                     int
	}{
		{"no secret", "", "/api/trajectories", "", 401},
		{"wrong secret", "", "/api/trajectories", "nope", 401},
		{"wrong token", "", "/?token=nope", "", 403},
		{"token sets the cookie", "", "/?token=" + srv.Token(), "", 303},
		{"cookie", "", "/api/trajectories", srv.Token(), 200},
		{"localhost", "localhost:" + port, "/api/trajectories", srv.Token(), 200},
		{"ipv6 loopback", "[::1]:" + port, "/api/trajectories", srv.Token(), 200},
		{"dns rebinding", "evil.example:" + port, "/api/trajectories", srv.Token(), 421},
		{"rebinding with token", "attacker.test", "/?token=" + srv.Token(), "", 421},
		{"bad id", "", "/api/t/..%2f..%2fetc", srv.Token(), 400},
		{"unknown id", "", "/api/t/nobody", srv.Token(), 404},
		{"no such part", "", "/api/t/alpha/parts/999", srv.Token(), 404},
		{"part not a number", "", "/api/t/alpha/parts/x", srv.Token(), 400},
		{"path escape", "", "/api/t/alpha/file/3?path=../../../../etc/passwd", srv.Token(), 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := do(tc.host, tc.path, tc.cookie)
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.want)
			}
			csp := resp.Header.Get("Content-Security-Policy")
			if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
				t.Errorf("CSP = %q", csp)
			}
			if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Error("no nosniff header")
			}
			if tc.want == 303 {
				loc := resp.Header.Get("Location")
				c := resp.Cookies()
				if strings.Contains(loc, "token") || len(c) != 1 || c[0].Value != srv.Token() || !c[0].HttpOnly || c[0].SameSite != http.SameSiteStrictMode {
					t.Errorf("redirect to %q with cookies %+v", loc, c)
				}
			}
		})
	}
}

// TestAPI reads the sample store the way the pages do.
func TestAPI(t *testing.T) {
	_, _, c := testServer(t, Options{StoreURL: sharedSample(t)})
	var list struct {
		Trajectories []Summary `json:"trajectories"`
	}
	c.mustGet("/api/trajectories", &list)
	if len(list.Trajectories) != 5 {
		t.Fatalf("trajectories: %+v", list.Trajectories)
	}
	alpha := list.Trajectories[0]
	if alpha.ID != "alpha" || alpha.Parts != 8 || alpha.Source != fromEvaluation || alpha.Score == nil || *alpha.Score != 1 || alpha.Cost == nil || alpha.Duration == nil {
		t.Errorf("alpha = %+v", alpha)
	}
	var curve Curve
	c.mustGet("/api/t/alpha/curve", &curve)
	var regress, first bool
	for _, m := range curve.Marks {
		regress = regress || m.Kind == "regression" && m.Part == 7
		first = first || m.Kind == "first_pass"
	}
	if len(curve.Points) != 8 || !regress || !first || curve.Milestones["1"] == 0 {
		t.Errorf("curve = %+v", curve)
	}
	var page struct {
		Total int   `json:"total"`
		Rows  []Row `json:"rows"`
	}
	c.mustGet("/api/t/alpha/parts?from=3&n=2", &page)
	if page.Total != 8 || len(page.Rows) != 2 || page.Rows[0].Part != 3 || page.Rows[0].Depth != 1 || page.Rows[0].Tool != "write" || !page.Rows[0].Committed {
		t.Errorf("page = %+v", page)
	}
	var d Detail
	c.mustGet("/api/t/alpha/parts/3", &d)
	if d.Parent != "ses_alpha" || len(d.ModelCalls) != 1 || d.ModelCalls[0].Model != "tiny" || len(d.Calls) != 1 || !strings.Contains(d.Output, "wrote src/lexer.c") {
		t.Errorf("part 3 = %+v", d)
	}
	if len(d.GatewayCalls) != 1 || d.GatewayCalls[0].Seq != 3 || d.GatewayCalls[0].ResponseID != d.MessageID {
		t.Errorf("part 3's gateway calls = %+v", d.GatewayCalls)
	}
	var calls struct {
		Recorded bool      `json:"recorded"`
		Total    int       `json:"total"`
		Rows     []CallRow `json:"rows"`
	}
	c.mustGet("/api/t/alpha/calls?from=2&n=3", &calls)
	if !calls.Recorded || calls.Total != 8 || len(calls.Rows) != 3 || calls.Rows[0].Seq != 3 {
		t.Errorf("calls page = %+v", calls)
	}
	var call CallDetail
	c.mustGet("/api/t/alpha/calls/5", &call)
	if call.Seq != 5 || !strings.Contains(call.Response, "working on the lexer (5)") {
		t.Errorf("call 5 = %+v", call)
	}
	if code := c.get("/api/t/alpha/calls/99", nil); code != 404 {
		t.Errorf("call 99: status %d", code)
	}
	var diff Diff
	c.mustGet("/api/t/alpha/diff/3", &diff)
	if len(diff.Files) != 2 || !strings.Contains(diff.Patch, "+int lex(void) { return 0; }") {
		t.Errorf("diff = %+v", diff)
	}
	var none map[string]any
	c.mustGet("/api/t/alpha/diff/2", &none)
	if none["none"] == nil {
		t.Errorf("diff of a part without changes = %v", none)
	}
	var tree struct {
		Entries []TreeEntry `json:"entries"`
	}
	c.mustGet("/api/t/alpha/tree/3?path=src", &tree)
	if len(tree.Entries) != 1 || tree.Entries[0].Name != "lexer.c" {
		t.Errorf("tree at part 3 = %+v", tree)
	}
	var file struct {
		File File `json:"file"`
	}
	c.mustGet("/api/t/alpha/file/8?path=src/lexer.c", &file)
	if file.File.Text != "int lex(void) { return 1; }\n" {
		t.Errorf("file at part 8 = %+v", file)
	}
	var tests TestsView
	c.mustGet("/api/t/alpha/tests", &tests)
	found := false
	for _, tr := range tests.Tests {
		if tr.Test == "basics/add" {
			found = len(tr.BrokenAt) == 1 && tr.BrokenAt[0] == 7 && tr.PassingAtEnd
		}
	}
	if tests.Source != fromEvaluation || !found || len(tests.Paths) != 2 {
		t.Errorf("tests = %+v", tests)
	}
	var cmp struct {
		Trajectories []Compared `json:"trajectories"`
	}
	c.mustGet("/api/compare?ids=alpha,beta", &cmp)
	if len(cmp.Trajectories) != 2 || cmp.Trajectories[1].Summary.ID != "beta" || len(cmp.Trajectories[1].Curve.Latest) != 2 {
		t.Errorf("compare = %+v", cmp)
	}
}

// TestLiveTrajectory: a trajectory being recorded shows up, and its part
// count follows the writer; growth is read incrementally.
func TestLiveTrajectory(t *testing.T) {
	dir := t.TempDir()
	srv, _, c := testServer(t, Options{StoreURL: dir})
	tdir := filepath.Join(dir, store.TrajectoriesDir, "live")
	os.MkdirAll(tdir, 0o755)
	w, err := trace.Create(filepath.Join(tdir, store.TraceName), tracetest.Header("live"), trace.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.BeginTurn(trace.TurnStart{Timestamp: tracetest.Time(0), Prompt: "go", SessionID: "ses_root"}); err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 30; n++ {
		p := tracetest.RealisticPart(n, tracetest.Commit(n), 2000)
		if n%10 == 0 {
			p.EnvoiCalls = []trace.EnvoiCall{tracetest.RunTests("basics", n, 30-n)}
		}
		if err := w.AppendPart(p); err != nil {
			t.Fatal(err)
		}
		var m Meta
		c.mustGet("/api/t/live", &m)
		if m.Parts != n || !m.Running {
			t.Fatalf("after part %d the viewer shows %d parts (running %v)", n, m.Parts, m.Running)
		}
	}
	var curve Curve
	c.mustGet("/api/t/live/curve", &curve)
	if len(curve.Points) != 3 || curve.Source != fromRunTests {
		t.Errorf("live curve = %+v", curve)
	}
	if err := w.EndTurn(trace.TurnEnd{EndedAt: tracetest.Time(30)}); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(trace.SessionEnd{Reason: trace.EndPartLimit, EndedAt: tracetest.Time(31)}, nil); err != nil {
		t.Fatal(err)
	}
	var m Meta
	c.mustGet("/api/t/live", &m)
	if m.Running || m.EndReason != trace.EndPartLimit {
		t.Errorf("finished trajectory shows %+v", m.Summary)
	}
	tj, _ := srv.cat.get("live")
	if ix := tj.snap.ix; ix.FullScans != 1 || ix.ResumedScans < 30 {
		t.Errorf("full scans %d, resumed %d: the growing trace was read again from the start", ix.FullScans, ix.ResumedScans)
	}
}

// TestS3Store views the sample store uploaded to a real S3 server
// (versitygw): listing, parts, diffs and code all read from S3.
func TestS3Store(t *testing.T) {
	ctx := context.Background()
	srv := s3test.Start(t)
	srv.SetEnv(t)
	url := srv.URL("team")
	st, err := location.Open(ctx, url, location.Options{})
	if err != nil {
		t.Fatal(err)
	}
	root := sharedSample(t)
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		return st.Save(ctx, filepath.ToSlash(rel), store.File(p))
	})
	if err != nil {
		t.Fatal(err)
	}
	_, _, c := testServer(t, Options{StoreURL: url})
	var list struct {
		Store        string    `json:"store"`
		Trajectories []Summary `json:"trajectories"`
	}
	c.mustGet("/api/trajectories", &list)
	if len(list.Trajectories) != 5 || list.Trajectories[1].ID != "beta" || list.Trajectories[1].Source != fromEvaluation || !strings.HasPrefix(list.Store, "s3://") {
		t.Fatalf("S3 listing = %+v", list)
	}
	var d Detail
	c.mustGet("/api/t/beta/parts/6", &d)
	if d.Part != 6 || d.Tool != "bash" {
		t.Errorf("part 6 from S3 = %+v", d.Row)
	}
	var diff Diff
	c.mustGet("/api/t/beta/diff/6", &diff)
	if !strings.Contains(diff.Patch, "+int parse(void) { return 1; }") {
		t.Errorf("diff from S3 = %+v", diff)
	}
	var file struct {
		File File `json:"file"`
	}
	c.mustGet("/api/t/beta/file/6?path=README.md", &file)
	if file.File.Text != "# tiny compiler\n" {
		t.Errorf("file from S3 = %+v", file)
	}
}

// TestIndexKeptAcrossStarts: a second server with the same cache folder
// reads the part index from the cache instead of the trace.
func TestIndexKeptAcrossStarts(t *testing.T) {
	cache := t.TempDir()
	dir := sharedSample(t)
	for i, wantCached := range []bool{false, true} {
		srv, _, c := testServer(t, Options{StoreURL: dir, CacheDir: cache})
		var m Meta
		c.mustGet("/api/t/alpha", &m)
		tj, _ := srv.cat.get("alpha")
		if ix := tj.snap.ix; ix.FromCache != wantCached || ix.FullScans != 1 || len(ix.Parts) != 8 {
			t.Errorf("start %d: from cache %v, full scans %d, %d parts", i+1, ix.FromCache, ix.FullScans, len(ix.Parts))
		}
	}
}

// TestRecordedDemo views a trajectory recorded by the real OpenCode: every
// part gets a title, the task tool's sub-agent parts sit one level deeper,
// and a file-changing part has a diff.
func TestRecordedDemo(t *testing.T) {
	_, _, c := testServer(t, Options{StoreURL: sharedSample(t)})
	var page struct {
		Total int   `json:"total"`
		Rows  []Row `json:"rows"`
	}
	c.mustGet("/api/t/demo/parts?from=1&n=500", &page)
	if page.Total != 50 || len(page.Rows) != 50 {
		t.Fatalf("demo: %d of %d rows", len(page.Rows), page.Total)
	}
	sub, committed := 0, 0
	for _, r := range page.Rows {
		if r.Title == "" {
			t.Errorf("part %d (%s %s) has no title", r.Part, r.Kind, r.Tool)
		}
		if r.Depth > 0 {
			sub++
		}
		if r.Committed && committed == 0 {
			committed = r.Part
		}
	}
	if sub == 0 || committed == 0 {
		t.Fatalf("demo: %d sub-agent parts, first committed part %d", sub, committed)
	}
	var diff Diff
	c.mustGet(fmt.Sprintf("/api/t/demo/diff/%d", committed), &diff)
	if len(diff.Files) == 0 || !strings.Contains(diff.Patch, "+") {
		t.Errorf("diff of part %d = %+v", committed, diff)
	}
	// The task part ran a sub-agent whose parts come before it (the tool
	// part completes when the sub-agent ends): each side links the other.
	task := 0
	for _, r := range page.Rows {
		if r.Tool == "task" {
			task = r.Part
		}
	}
	var td Detail
	c.mustGet(fmt.Sprintf("/api/t/demo/parts/%d", task), &td)
	if td.SubAgent == nil || td.SubAgent.First == 0 || td.SubAgent.Last >= task {
		t.Fatalf("task part %d: sub-agent %+v", task, td.SubAgent)
	}
	var sd Detail
	c.mustGet(fmt.Sprintf("/api/t/demo/parts/%d", td.SubAgent.First), &sd)
	if sd.Depth != 1 || sd.SpawnedBy != task {
		t.Errorf("sub-agent part %d: depth %d, spawned by %d, want part %d", td.SubAgent.First, sd.Depth, sd.SpawnedBy, task)
	}
	var m Meta
	c.mustGet("/api/t/demo", &m)
	if m.Source != fromEvaluation || m.Score == nil || len(m.Sessions) < 2 {
		t.Errorf("demo summary = %+v, sessions %+v", m.Summary, m.Sessions)
	}
}

// TestGroundTruthScore: the recorded demo without evaluation.json is
// scored by the trace's ground truth (the latest evaluated checkpoint),
// not by the agent's run_tests calls, which stay a separate series.
func TestGroundTruthScore(t *testing.T) {
	_, _, c := testServer(t, Options{StoreURL: sharedSample(t)})
	f, err := os.Open(filepath.Join(groundTruthDemoDir, store.TraceName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ts, err := trace.Summarize(f)
	if err != nil || ts.GroundTruth == nil {
		t.Fatalf("the fixture has no ground truth: %v", err)
	}
	want := float64(ts.GroundTruth.Passed) / float64(ts.GroundTruth.Total)
	var m Meta
	c.mustGet("/api/t/demo-ground-truth", &m)
	if m.Source != fromGroundTruth || m.Score == nil || *m.Score != want {
		t.Fatalf("score %v from %q, want %v from ground truth", deref(m.Score), m.Source, want)
	}
	var curve Curve
	c.mustGet("/api/t/demo-ground-truth/curve", &curve)
	if curve.Source != fromGroundTruth || len(curve.Agent) == 0 || curve.Latest[0].Suite == "basics/smoke" {
		t.Errorf("curve from %q, agent series %d points, suites %+v", curve.Source, len(curve.Agent), curve.Latest)
	}
	for _, mk := range curve.Marks {
		if mk.Kind == "regression" {
			t.Errorf("ground truth never fell in this run, yet the curve marks a regression at part %d: %v", mk.Part, mk.Tests)
		}
	}
	var tv TestsView
	c.mustGet("/api/t/demo-ground-truth/tests", &tv)
	if tv.Source != fromGroundTruth || len(tv.Suites) != len(ts.GroundTruth.Suites) || len(tv.Paths) == 0 {
		t.Errorf("tests tab: %+v", tv)
	}
}

// TestStorePagePending: the store page does not wait for a big trajectory
// being indexed; it lists it as pending and has it on a later request.
func TestStorePagePending(t *testing.T) {
	dir := t.TempDir()
	tdir := filepath.Join(dir, store.TrajectoriesDir, "big")
	os.MkdirAll(tdir, 0o755)
	tracetest.WriteDir(t, tdir, tracetest.Spec{TrajectoryID: "big", Turns: []int{3000, 3000}, PartSize: 3000, End: trace.EndSolved})
	_, _, c := testServer(t, Options{StoreURL: dir, SummaryWait: time.Millisecond})
	var list struct {
		Pending      int       `json:"pending"`
		Trajectories []Summary `json:"trajectories"`
	}
	c.mustGet("/api/trajectories", &list)
	if list.Pending != 1 || !list.Trajectories[0].Pending {
		t.Fatalf("first answer = %+v", list)
	}
	deadline := time.Now().Add(time.Minute)
	for list.Pending > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		list.Trajectories = nil
		c.mustGet("/api/trajectories", &list)
	}
	if s := list.Trajectories[0]; s.Pending || s.Parts != 6000 {
		t.Fatalf("after indexing: %+v", s)
	}
}

// saveNow uploads each chunk at once (the uploader's Enqueue, synchronous).
type saveNow struct{ st store.Store }

func (s saveNow) Enqueue(key string, src store.Source) error {
	return s.st.Save(context.Background(), key, src)
}

// TestS3LiveTrajectory: a trajectory being recorded into S3 has no
// agent_trace.json yet, only chunks; the viewer shows it rebuilt from them
// and follows it as chunks arrive.
func TestS3LiveTrajectory(t *testing.T) {
	ctx := context.Background()
	srv := s3test.Start(t)
	srv.SetEnv(t)
	url := srv.URL("live")
	st, err := location.Open(ctx, url, location.Options{})
	if err != nil {
		t.Fatal(err)
	}
	codec, err := chunk.NewCodec()
	if err != nil {
		t.Fatal(err)
	}
	w, err := trace.Create(filepath.Join(t.TempDir(), store.TraceName), tracetest.Header("rec"),
		trace.WriterOptions{OnChunk: codec.Forward(saveNow{st}, "rec", func(err error) { t.Error(err) })})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.BeginTurn(trace.TurnStart{Timestamp: tracetest.Time(0), Prompt: "go", SessionID: "ses_root"}); err != nil {
		t.Fatal(err)
	}
	add := func(from, to int) {
		for n := from; n <= to; n++ {
			if err := w.AppendPart(tracetest.RealisticPart(n, tracetest.Commit(n), 1200)); err != nil {
				t.Fatal(err)
			}
		}
	}
	add(1, 4)
	_, _, c := testServer(t, Options{StoreURL: url})
	var m Meta
	c.mustGet("/api/t/rec", &m)
	if m.Parts != 4 || !m.Running || !strings.Contains(m.Warning, "chunks") {
		t.Fatalf("live S3 trajectory = %+v", m.Summary)
	}
	add(5, 9)
	m = Meta{}
	c.mustGet("/api/t/rec", &m)
	if m.Parts != 9 {
		t.Fatalf("after 5 more parts the viewer shows %d", m.Parts)
	}
	var d Detail
	c.mustGet("/api/t/rec/parts/9", &d)
	if d.Part != 9 || d.Tool != "bash" {
		t.Errorf("part 9 = %+v", d.Row)
	}
}

// TestCloneReplacedWhenHistoryGrows: a trajectory whose bundles change
// (history bundles of a running trajectory) is cloned again for a commit
// the old clone lacks, and the old clone is removed from the cache.
func TestCloneReplacedWhenHistoryGrows(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(sharedSample(t), store.TrajectoriesDir, "beta")
	dst := filepath.Join(dir, store.TrajectoriesDir, "beta")
	os.MkdirAll(dst, 0o755)
	for _, name := range []string{store.TraceName, store.BundleName} {
		data, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(dst, name), data)
	}
	cache := t.TempDir()
	srv, _, c := testServer(t, Options{StoreURL: dir, CacheDir: cache})
	var diff Diff
	c.mustGet("/api/t/beta/diff/3", &diff)
	clones := func() []string {
		m, _ := filepath.Glob(filepath.Join(cache, "git", "*", "*"))
		return m
	}
	first := clones()
	if len(first) != 1 {
		t.Fatalf("clones after the first diff: %v", first)
	}
	// The bundle changes (same history, new file time) and a commit the
	// clone does not have is asked for: the clone is made again.
	later := time.Now().Add(time.Minute)
	os.Chtimes(filepath.Join(dst, store.BundleName), later, later)
	tj, _ := srv.cat.get("beta")
	tj.git.made = time.Time{}
	if _, err := tj.repo(context.Background(), strings.Repeat("ab", 20)); err != nil {
		t.Fatal(err)
	}
	second := clones()
	if len(second) != 1 || second[0] == first[0] {
		t.Fatalf("clones after the bundles changed: %v (before %v)", second, first)
	}
	c.mustGet("/api/t/beta/diff/6", &diff)
	if !strings.Contains(diff.Patch, "parse") {
		t.Errorf("diff from the new clone: %+v", diff)
	}
}
