package view

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/tracetest"
)

// chromium finds Debian's Chromium (TRAJ_CHROMIUM overrides). A missing
// browser fails the test: `make setup` installs it. Only
// TRAJ_SKIP_BROWSER_TESTS=1 (never set by make or CI) turns that into a
// skip.
func chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("TRAJ_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("TRAJ_SKIP_BROWSER_TESTS") == "1" {
		t.Skip("no Chromium and TRAJ_SKIP_BROWSER_TESTS=1")
	}
	t.Fatal("Chromium not found (run `make setup`, or apt-get install chromium)")
	return ""
}

// browser starts a headless Chromium with a fresh profile and returns a
// tab context. The flags are the ones that work as root, offline.
func browser(t testing.TB, width, height int) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return ctx
}

// run runs actions with a deadline and fails the test with what was being
// done.
func run(t testing.TB, ctx context.Context, what string, acts ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(tctx, acts...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// get runs one action that returns a value.
func get[T any](t testing.TB, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(tctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

func js[T any](t testing.TB, ctx context.Context, expr string) T {
	t.Helper()
	return get(t, ctx, "evaluate "+expr, chromedp.Evaluate[T](expr))
}

func text(t testing.TB, ctx context.Context, sel string) string {
	t.Helper()
	return get(t, ctx, "text of "+sel, chromedp.Text(chromedp.CSS(sel)))
}

// TestBrowser drives the viewer in a real headless Chromium: store page,
// filter, a trajectory, jump to a part, its diff, the code tab, the tests
// tab, and the compare page.
func TestBrowser(t *testing.T) {
	srv, base, _ := testServer(t, Options{StoreURL: sharedSample(t)})
	ctx := browser(t, 1400, 1000)

	run(t, ctx, "open the store page",
		chromedp.Navigate(base+"/?token="+srv.Token()),
		chromedp.WaitVisible(chromedp.CSS(`#trajectories tr[data-id="beta"]`)))
	if n := js[int](t, ctx, `document.querySelectorAll("#trajectories tbody tr").length`); n != 5 {
		t.Fatalf("store page lists %d trajectories, want 5", n)
	}
	run(t, ctx, "filter the store page", chromedp.SendKeys(chromedp.CSS(`#filter`), "other"))
	if n := js[int](t, ctx, `document.querySelectorAll("#trajectories tbody tr").length`); n != 1 {
		t.Fatalf("filter 'other' leaves %d rows, want 1 (beta)", n)
	}
	run(t, ctx, "open a trajectory",
		chromedp.Navigate(base+"/#/"),
		chromedp.WaitVisible(chromedp.CSS(`#trajectories tr[data-id="alpha"] a.traj-link`)),
		chromedp.Click(chromedp.CSS(`#trajectories tr[data-id="alpha"] a.traj-link`)),
		chromedp.WaitVisible(chromedp.CSS(`#timeline .row[data-part="8"] .title`)),
		chromedp.WaitVisible(chromedp.CSS(`#curve svg path`)))
	if n := js[int](t, ctx, `document.querySelectorAll("#curve .mark").length`); n < 2 {
		t.Errorf("the curve shows %d regression/first-pass marks, want at least 2", n)
	}
	run(t, ctx, "jump to part 3",
		chromedp.SendKeys(chromedp.CSS(`#jump`), "3"),
		chromedp.Click(chromedp.CSS(`#go`)),
		chromedp.WaitVisible(chromedp.CSS(`#detail[data-part="3"][data-tab="part"] .tool-output`)))
	run(t, ctx, "part 3 says what it did to the score", chromedp.WaitVisible(chromedp.CSS(`#effect .after`)))
	if fx := text(t, ctx, `#effect`); !strings.Contains(fx, "→") || !strings.Contains(fx, "evaluation") {
		t.Errorf("part 3's effect: %q", fx)
	}
	curveChecks(t, ctx)
	detail := text(t, ctx, `#detail`)
	for _, want := range []string{"Part 3", "sub-agent of ses_alpha", "wrote src/lexer.c", "Model calls", "scripted/tiny"} {
		if !strings.Contains(detail, want) {
			t.Errorf("part 3's detail lacks %q:\n%s", want, detail)
		}
	}
	run(t, ctx, "open its diff",
		chromedp.Click(chromedp.CSS(`#open-diff`)),
		chromedp.WaitVisible(chromedp.CSS(`#detail[data-tab="diff"] #patch`)))
	if patch := text(t, ctx, `#patch`); !strings.Contains(patch, "+int lex(void) { return 0; }") {
		t.Errorf("diff of part 3:\n%s", patch)
	}
	run(t, ctx, "code at part 3",
		chromedp.Click(chromedp.CSS(`#tab-code`)),
		chromedp.WaitVisible(chromedp.CSS(`#detail[data-tab="code"] #tree`)))
	if tree := text(t, ctx, `#tree`); !strings.Contains(tree, "build.sh") || !strings.Contains(tree, "src/") {
		t.Errorf("code tree at part 3:\n%s", tree)
	}
	run(t, ctx, "tests view",
		chromedp.Click(chromedp.CSS(`#tab-tests`)),
		chromedp.WaitVisible(chromedp.CSS(`#tests`)))
	if tests := text(t, ctx, `#tests`); !strings.Contains(tests, "basics/add") {
		t.Errorf("tests view:\n%s", tests)
	}
	// The tab is anchored to the selected part: basics/add first passed
	// at part 3, so it passes there and fails at part 2.
	if at := text(t, ctx, `#tests tr[data-test="basics/add"] td.at-part`); at != "passing" {
		t.Errorf("basics/add at part 3: %q, want passing", at)
	}
	js[bool](t, ctx, `window.trajView.jump(2) && true`)
	run(t, ctx, "tests at part 2", chromedp.WaitVisible(chromedp.CSS(`#detail[data-part="2"][data-tab="tests"] #tests th[data-key="at"]`)))
	if at := text(t, ctx, `#tests tr[data-test="basics/add"] td.at-part`); at != "failing" {
		t.Errorf("basics/add at part 2: %q, want failing", at)
	}
	run(t, ctx, "sort tests by first pass", chromedp.Click(chromedp.CSS(`#tests th[data-key="first"]`)))
	firsts := js[[]string](t, ctx, `[...document.querySelectorAll("#tests tr[data-test]")].map((r) => r.children[1].textContent)`)
	for i := 1; i < len(firsts); i++ {
		a, _ := strconv.Atoi(firsts[i-1])
		b, err := strconv.Atoi(firsts[i])
		if firsts[i-1] == "never" || err == nil && a > b {
			t.Errorf("tests sorted by first pass: %v", firsts)
			break
		}
	}
	run(t, ctx, "model calls tab",
		chromedp.Click(chromedp.CSS(`#tab-calls`)),
		chromedp.WaitVisible(chromedp.CSS(`#detail[data-tab="calls"] .gateway-calls`)),
		chromedp.Click(chromedp.CSS(`.gateway-calls tr:nth-child(3) .open-call`)),
		chromedp.WaitVisible(chromedp.CSS(`.call-reply .reply-text`)))
	if resp := text(t, ctx, `.call-reply .reply-text`); !strings.Contains(resp, "working on the lexer (2)") {
		t.Errorf("response of model call 2:\n%s", resp)
	}
	js[bool](t, ctx, `document.querySelector('#curve .mark[data-part="7"]').dispatchEvent(new MouseEvent("click", {bubbles: true}))`)
	run(t, ctx, "a mark on the curve opens its part", chromedp.WaitVisible(chromedp.CSS(`#timeline .row.sel[data-part="7"]`)))
	run(t, ctx, "compare two trajectories",
		chromedp.Navigate(base+"/#/compare?ids=alpha,beta"),
		chromedp.WaitVisible(chromedp.CSS(`#compare-summary`)))
	n := js[int](t, ctx, `document.querySelectorAll("#compare-curve svg path.line").length`)
	if suites := text(t, ctx, `#compare-suites`); n != 2 || !strings.Contains(suites, "extra") || !strings.Contains(suites, "basics") {
		t.Errorf("compare page: %d curves, suites:\n%s", n, suites)
	}
	if rows := text(t, ctx, `#compare-summary`); !strings.Contains(rows, "part ") {
		t.Errorf("compare page names no part to milestone:\n%s", rows)
	}
}

// curveChecks attacks the curve's controls: the cursor follows the
// selected part, a drag zooms (and the button resets), a legend entry
// hides its line, and hovering reads the lines out.
func curveChecks(t *testing.T, ctx context.Context) {
	t.Helper()
	if n := js[int](t, ctx, `document.querySelectorAll("#curve line.cursor").length`); n != 1 {
		t.Errorf("%d cursor lines at the selected part, want 1", n)
	}
	lines := js[int](t, ctx, `document.querySelectorAll("#curve path.line").length`)
	js[bool](t, ctx, `document.querySelector("#curve .legend button.series").click() || true`)
	if n := js[int](t, ctx, `document.querySelectorAll("#curve path.line").length`); n != lines-1 {
		t.Errorf("hiding a series leaves %d of %d lines", n, lines)
	}
	js[bool](t, ctx, `document.querySelector("#curve .legend button.series").click() || true`)
	drag := `(() => { const s = document.querySelector("#curve .surface"), r = s.getBoundingClientRect(), y = r.top + r.height / 2;
		const ev = (t, x) => new MouseEvent(t, {bubbles: true, clientX: x, clientY: y});
		s.dispatchEvent(ev("mousedown", r.left + r.width * 0.1)); s.dispatchEvent(ev("mousemove", r.left + r.width * 0.5));
		const ro = document.querySelector("#curve .readout").textContent;
		window.dispatchEvent(ev("mouseup", r.left + r.width * 0.5)); return ro; })()`
	if ro := js[string](t, ctx, drag); !strings.Contains(ro, "part ") || !strings.Contains(ro, "overall") || !strings.Contains(ro, "%") {
		t.Errorf("hover readout %q", ro)
	}
	if n := js[int](t, ctx, `document.querySelectorAll("#curve .zoom-reset").length`); n != 1 {
		t.Fatalf("no reset button after a drag: the curve did not zoom")
	}
	js[bool](t, ctx, `document.querySelector("#curve .zoom-reset").click() || true`)
	if n := js[int](t, ctx, `document.querySelectorAll("#curve .zoom-reset").length`); n != 0 {
		t.Errorf("reset zoom left the curve zoomed")
	}
}

// TestBrowserGroundTruth opens the recorded demo without evaluation.json at
// 1,400 px: the page says its score comes from ground truth and shows the
// trace's value; the tests tab says the same; neither page overflows.
func TestBrowserGroundTruth(t *testing.T) {
	srv, base, _ := testServer(t, Options{StoreURL: sharedSample(t)})
	f, err := os.Open(filepath.Join(groundTruthDemoDir, store.TraceName))
	if err != nil {
		t.Fatal(err)
	}
	ts, err := trace.Summarize(f)
	f.Close()
	if err != nil || ts.GroundTruth == nil {
		t.Fatalf("the fixture has no ground truth: %v", err)
	}
	want := fmt.Sprintf("%.1f%%", 100*float64(ts.GroundTruth.Passed)/float64(ts.GroundTruth.Total))
	ctx := browser(t, 1400, 1000)
	run(t, ctx, "open the demo without evaluation",
		chromedp.Navigate(base+"/?token="+srv.Token()+"#/t/demo-ground-truth"),
		chromedp.WaitVisible(chromedp.CSS(`#score-source`)),
		chromedp.WaitVisible(chromedp.CSS(`#curve svg path.line`)))
	if src := js[string](t, ctx, `document.querySelector("#score-source").dataset.source`); src != "ground_truth" {
		t.Errorf("score source %q, want ground_truth", src)
	}
	if got := text(t, ctx, `#score b`); got != want {
		t.Errorf("score shows %q, the trace's ground truth is %s", got, want)
	}
	if cs := text(t, ctx, `#curve-source`); !strings.Contains(cs, "ground truth") {
		t.Errorf("curve source %q", cs)
	}
	noOverflow(t, ctx, "trajectory page")
	// "drwxr-xr-x" is only in the output of the agent's `ls -la` (part 7).
	run(t, ctx, "search a word from a tool output",
		chromedp.SendKeys(chromedp.CSS(`#search`), "DRWXR-XR-X\r"),
		chromedp.WaitVisible(chromedp.CSS(`#hits .hit[data-part="7"]`)),
		chromedp.Click(chromedp.CSS(`#hits .hit[data-part="7"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#detail[data-part="7"][data-tab="part"] .tool-output`)))
	if out := text(t, ctx, `#detail .tool-output`); !strings.Contains(out, "drwxr-xr-x") {
		t.Errorf("the hit opened a part whose output is %q", out)
	}
	js[bool](t, ctx, `document.activeElement.blur() || true`)
	run(t, ctx, "j opens the next part",
		chromedp.KeyEvent("j"),
		chromedp.WaitVisible(chromedp.CSS(`#detail[data-part="8"]`)))
	run(t, ctx, "n opens the next checkpoint", chromedp.KeyEvent("n"))
	run(t, ctx, "] opens the next score change", chromedp.WaitVisible(chromedp.CSS(`#effect .after`)), chromedp.KeyEvent("]"))
	if sel := js[int](t, ctx, `window.trajView.state.sel`); sel <= 8 {
		t.Errorf("after n and ] the selected part is %d, want one after 8", sel)
	}
	js[bool](t, ctx, `window.trajView.jump(9) && true`)
	run(t, ctx, "open the C file part 9 wrote",
		chromedp.WaitVisible(chromedp.CSS(`#detail[data-part="9"][data-tab="part"] ul.files`)))
	js[bool](t, ctx, `[...document.querySelectorAll("ul.files a")].find((a) => a.textContent === "scratch/ret.c").click() || true`)
	run(t, ctx, "the C file shows", chromedp.WaitVisible(chromedp.CSS(`#file.hl .ln`)))
	code := js[map[string]any](t, ctx, `(() => { const f = document.querySelector("#file");
		return {lines: f.querySelectorAll(".line").length, numbers: [...f.querySelectorAll(".ln")].map((e) => e.textContent).join(","),
			keywords: [...f.querySelectorAll(".t-kt, .t-k")].map((e) => e.textContent).join(" "), inline: f.querySelectorAll("[style]").length}; })()`)
	if code["lines"].(float64) < 1 || !strings.HasPrefix(code["numbers"].(string), "1") || !strings.Contains(code["keywords"].(string), "int") || code["inline"].(float64) != 0 {
		t.Errorf("scratch/ret.c is not highlighted with line numbers: %v", code)
	}
	run(t, ctx, "tests tab",
		chromedp.Click(chromedp.CSS(`#tab-tests`)),
		chromedp.WaitVisible(chromedp.CSS(`#tests-source`)))
	if src := js[string](t, ctx, `document.querySelector("#tests-source").dataset.source`); src != "ground_truth" {
		t.Errorf("tests tab source %q, want ground_truth", src)
	}
	noOverflow(t, ctx, "tests tab")
}

// noOverflow fails when the page or any element scrolls sideways.
func noOverflow(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	over := js[[]string](t, ctx, `(() => { const out = [];
		if (document.documentElement.scrollWidth > window.innerWidth) out.push("page " + document.documentElement.scrollWidth);
		for (const e of document.querySelectorAll("main *")) {
			const cs = getComputedStyle(e);
			if (e.scrollWidth > e.clientWidth + 1 && (cs.overflowX === "auto" || cs.overflowX === "scroll")) out.push(e.tagName + "#" + e.id + "." + e.className + " " + e.scrollWidth + ">" + e.clientWidth);
		}
		return out; })()`)
	if len(over) > 0 {
		t.Errorf("%s overflows at 1,400 px: %v", page, over)
	}
}

// TestBrowserRunsNoAgentScript opens every page of a trajectory whose
// agent text, model name, task and session title hold script injections:
// nothing runs, no element is made from them, and the text shows as text.
func TestBrowserRunsNoAgentScript(t *testing.T) {
	srv, base, _ := testServer(t, Options{StoreURL: sharedSample(t)})
	ctx := browser(t, 1200, 900)
	check := func(where string) {
		t.Helper()
		pwned := js[string](t, ctx, `String(window.__pwned)`)
		made := js[int](t, ctx, `document.querySelectorAll("#app img, #app script, #app svg[onload], #app [onerror]").length`)
		if pwned != "undefined" || made != 0 {
			t.Fatalf("%s: window.__pwned = %s, %d elements made from agent text", where, pwned, made)
		}
	}
	run(t, ctx, "store page",
		chromedp.Navigate(base+"/?token="+srv.Token()),
		chromedp.WaitVisible(chromedp.CSS(`#trajectories tr[data-id="evil"]`)))
	if row := text(t, ctx, `#trajectories tr[data-id="evil"]`); !strings.Contains(row, "<img src=x onerror=") {
		t.Errorf("the store page does not show the model name as text: %s", row)
	}
	check("store page")
	for _, n := range []int{1, 2, 3} {
		run(t, ctx, fmt.Sprintf("part %d", n),
			chromedp.Navigate(fmt.Sprintf("%s/#/t/evil/%d", base, n)),
			chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#detail[data-part="%d"]`, n))),
			chromedp.Sleep(100*time.Millisecond))
		if d := text(t, ctx, `#detail`); !strings.Contains(d, `<script>window.__pwned = "script"</script>`) {
			t.Errorf("part %d does not show the agent's text as text:\n%s", n, d)
		}
		if n == 1 {
			if c := text(t, ctx, `#action-command`); !strings.Contains(c, `<script>window.__pwned = "script"</script>`) {
				t.Errorf("part 1's command does not show the injection as text:\n%s", c)
			}
		}
		if n == 3 {
			// A written file and a command holding the injection are
			// drawn from the neutral record as text too.
			if f := text(t, ctx, `#action-file`); !strings.Contains(f, `<script>window.__pwned = "script"</script>`) {
				t.Errorf("part 3's written file does not show the injection as text:\n%s", f)
			}
		}
		check(fmt.Sprintf("part %d", n))
	}
	run(t, ctx, "a model call's response",
		chromedp.Navigate(base+"/#/t/evil/2?tab=calls"),
		chromedp.WaitVisible(chromedp.CSS(`#detail[data-tab="calls"] .gateway-calls`)),
		chromedp.Click(chromedp.CSS(`.gateway-calls tr:nth-child(2) .open-call`)),
		chromedp.WaitVisible(chromedp.CSS(`.call-reply .reply-text`)),
		chromedp.Sleep(100*time.Millisecond))
	if resp := text(t, ctx, `.call-reply .reply-text`); !strings.Contains(resp, "<script>") {
		t.Errorf("the model call's response is not shown as text:\n%s", resp)
	}
	check("model call response")
	run(t, ctx, "compare page",
		chromedp.Navigate(base+"/#/compare?ids=evil,alpha"),
		chromedp.WaitVisible(chromedp.CSS(`#compare-summary`)))
	check("compare page")
}

// discard runs a and drops its value, to sit among Void actions.
func discard[T any](a chromedp.Action[T]) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := a(ctx, t)
		return chromedp.Void{}, err
	}
}

// TestViewScreenshots writes screenshots of each page to
// TRAJ_VIEW_PNG_DIR (make view-png); without it, it does nothing.
func TestViewScreenshots(t *testing.T) {
	out := os.Getenv("TRAJ_VIEW_PNG_DIR")
	if out == "" {
		t.Skip("set TRAJ_VIEW_PNG_DIR (make view-png)")
	}
	srv, base, _ := testServer(t, Options{StoreURL: sharedSample(t)})
	ctx := browser(t, 1400, 950)
	shot := func(name string, acts ...chromedp.Action[chromedp.Void]) {
		acts = append(acts, chromedp.Sleep(300*time.Millisecond))
		run(t, ctx, name, acts...)
		png := get(t, ctx, "screenshot "+name, chromedp.CaptureScreenshot())
		if err := os.WriteFile(filepath.Join(out, "view-"+name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	shot("store", chromedp.Navigate(base+"/?token="+srv.Token()), chromedp.WaitVisible(chromedp.CSS(`#trajectories tr[data-id="beta"]`)))
	shot("demo", chromedp.Navigate(base+"/#/t/demo/20"), chromedp.WaitVisible(chromedp.CSS(`#detail[data-part="20"]`)))
	shot("ground-truth", chromedp.Navigate(base+"/#/t/demo-ground-truth/27"), chromedp.WaitVisible(chromedp.CSS(`#effect .after`)))
	shot("subagent", chromedp.Navigate(base+"/#/t/demo/41"), chromedp.WaitVisible(chromedp.CSS(`#detail[data-part="41"]`)))
	shot("trajectory", chromedp.Navigate(base+"/#/t/alpha/3"), chromedp.WaitVisible(chromedp.CSS(`#detail[data-part="3"] .tool-output`)))
	shot("diff", chromedp.Navigate(base+"/#/t/alpha/6?tab=diff"), chromedp.WaitVisible(chromedp.CSS(`#detail[data-part="6"] #patch`)))
	shot("code", chromedp.Navigate(base+"/#/t/alpha/8?tab=code"), chromedp.WaitVisible(chromedp.CSS(`#detail[data-part="8"] #tree`)),
		chromedp.Click(chromedp.CSS(`#tree li:last-child a`)), chromedp.WaitVisible(chromedp.CSS(`#file`)))
	shot("tests", chromedp.Navigate(base+"/#/t/alpha/7?tab=tests"), chromedp.WaitVisible(chromedp.CSS(`#tests`)))
	shot("calls", chromedp.Navigate(base+"/#/t/alpha/4?tab=calls"), chromedp.WaitVisible(chromedp.CSS(`#detail[data-tab="calls"] .gateway-calls`)),
		chromedp.Click(chromedp.CSS(`.gateway-calls tr:nth-child(5) .open-call`)), chromedp.WaitVisible(chromedp.CSS(`.call-reply`)))
	shot("compare", chromedp.Navigate(base+"/#/compare?ids=alpha,beta"), chromedp.WaitVisible(chromedp.CSS(`#compare-summary`)))
	shot("xss", chromedp.Navigate(base+"/#/t/evil/1"), chromedp.WaitVisible(chromedp.CSS(`#detail[data-part="1"]`)))
	// Tools drawn as what they did, on the recorded demo without evaluation.
	shot("edit", chromedp.Navigate(base+"/#/t/demo-ground-truth/25"), chromedp.WaitVisible(chromedp.CSS(`#detail[data-part="25"] #action-diff`)))
	shot("run-tests", chromedp.Navigate(base+"/#/t/demo-ground-truth/13"), chromedp.WaitVisible(chromedp.CSS(`#detail[data-part="13"] table.cases`)),
		chromedp.ScrollIntoView(chromedp.CSS(`#detail .run-tests h2`)))
	shot("code-added", chromedp.Navigate(base+"/#/t/demo-ground-truth/25"), chromedp.WaitVisible(chromedp.CSS(`#detail[data-part="25"] ul.files a`)),
		chromedp.Click(chromedp.CSS(`#detail ul.files a`)), chromedp.WaitVisible(chromedp.CSS(`#file .line.added`)))
	shot("filter", chromedp.Navigate(base+"/#/t/demo-ground-truth/7"), chromedp.WaitVisible(chromedp.CSS(`#detail[data-part="7"] #action-command`)),
		discard(chromedp.Evaluate[bool](`(() => { const s = document.querySelector("#filter-tool"); s.value = "bash"; s.dispatchEvent(new Event("change")); return true; })()`)),
		chromedp.WaitVisible(chromedp.CSS(`#hits .hit`)))

	// A 10,000-part trajectory without evaluation (ground truth every 10
	// parts) and a 120-run store from an experiment.
	big := t.TempDir()
	manyRunsStore(t, big, 1, 10000)
	bsrv, bbase, _ := testServer(t, Options{StoreURL: big, SummaryWait: time.Minute})
	shot("big", chromedp.Navigate(bbase+"/?token="+bsrv.Token()+"#/t/run-000/9000"), chromedp.WaitVisible(chromedp.CSS(`#detail[data-part="9000"] #effect .after`)),
		chromedp.WaitVisible(chromedp.CSS(`#curve svg path.line`)))
	many := t.TempDir()
	manyRunsStore(t, many, 120, 300)
	msrv, mbase, _ := testServer(t, Options{StoreURL: many, SummaryWait: 5 * time.Minute})
	shot("store-120", chromedp.Navigate(mbase+"/?token="+msrv.Token()), chromedp.WaitVisible(chromedp.CSS(`#trajectories tr[data-id="run-119"]`)),
		discard(chromedp.Evaluate[bool](`(() => { const s = document.querySelector("#group-by"); s.value = "model"; s.dispatchEvent(new Event("change")); return true; })()`)),
		chromedp.WaitVisible(chromedp.CSS(`#groups tr.group`)))
	var ids []string
	for i := range 6 {
		ids = append(ids, fmt.Sprintf("run-%03d", i), fmt.Sprintf("run-%03d", i+12))
	}
	shot("compare-12", chromedp.Navigate(mbase+"/#/compare?ids="+strings.Join(ids, ",")), chromedp.WaitVisible(chromedp.CSS(`#compare-summary`)))
	shot("compare-12-cost", chromedp.Click(chromedp.CSS(`#x-cost`)), chromedp.WaitVisible(chromedp.CSS(`#compare-curve svg`)))
}

// TestBrowserFollowsLiveTrajectory: a trajectory page left open while the
// recorder appends parts shows the new parts without a reload.
func TestBrowserFollowsLiveTrajectory(t *testing.T) {
	dir := t.TempDir()
	tdir := filepath.Join(dir, store.TrajectoriesDir, "live")
	if err := os.MkdirAll(tdir, 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := trace.Create(filepath.Join(tdir, store.TraceName), tracetest.Header("live"), trace.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.BeginTurn(trace.TurnStart{Timestamp: tracetest.Time(0), Prompt: "go", SessionID: "ses_root"}); err != nil {
		t.Fatal(err)
	}
	appendParts := func(from, to int) {
		for n := from; n <= to; n++ {
			if err := w.AppendPart(tracetest.RealisticPart(n, tracetest.Commit(n), 1500)); err != nil {
				t.Fatal(err)
			}
		}
	}
	appendParts(1, 5)
	srv, base, _ := testServer(t, Options{StoreURL: dir})
	ctx := browser(t, 1200, 900)
	run(t, ctx, "open the live trajectory",
		chromedp.Navigate(base+"/?token="+srv.Token()),
		chromedp.Navigate(base+"/#/t/live"),
		chromedp.WaitVisible(chromedp.CSS(`#timeline .row[data-part="5"] .title`)))
	if s := text(t, ctx, `#status`); !strings.Contains(s, "recording") {
		t.Errorf("status line of a live trajectory: %q", s)
	}
	appendParts(6, 12)
	run(t, ctx, "new parts appear", chromedp.WaitVisible(chromedp.CSS(`#timeline .row[data-part="12"] .title`)))
	if n := text(t, ctx, `#parts-count`); n != "12" {
		t.Errorf("part count shows %q, want 12", n)
	}
}
