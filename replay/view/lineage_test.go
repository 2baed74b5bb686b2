package view

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/trajlab/traj/replay/rerun"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/tracetest"
)

// forkPoint is where the synthetic fork branches from its source.
const forkPoint = 8

// evilSource is a fork's source id holding markup: it is no valid id, so
// it is never a link, and it shows as text.
const evilSource = `<img src=x onerror="window.__pwned=1">`

// lineageStore writes, with the trace writer, a store holding a source
// ("src", 20 parts, one basics case more every second part), a fork of it
// at part forkPoint ("fork", 14 parts: the source's rates up to the fork
// point, then faster), a rerun of it with its rerun.json ("re"), and forks
// of a source the store lacks ("orphan") and of a markup id ("evil-fork").
func lineageStore(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write := func(id string, lineage func(*trace.Header), parts int, passed func(p int) int64) {
		t.Helper()
		tdir := filepath.Join(dir, store.TrajectoriesDir, id)
		if err := os.MkdirAll(tdir, 0o755); err != nil {
			t.Fatal(err)
		}
		h := tracetest.Header(id)
		lineage(&h)
		w, err := trace.Create(filepath.Join(tdir, store.TraceName), h, trace.WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if err := w.BeginTurn(trace.TurnStart{Timestamp: tracetest.Time(0), Prompt: "go", SessionID: "ses_root"}); err != nil {
			t.Fatal(err)
		}
		for p := 1; p <= parts; p++ {
			part := tracetest.Part(p, tracetest.Commit(p))
			if p%2 == 0 {
				part.GroundTruth = []trace.GroundTruth{tracetest.GroundTruth(p, tracetest.Suite("basics", passed(p), 10))}
			}
			if err := w.AppendPart(part); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.EndTurn(trace.TurnEnd{EndedAt: tracetest.Time(parts)}); err != nil {
			t.Fatal(err)
		}
		if err := w.Finish(trace.SessionEnd{Reason: "part_limit", EndedAt: tracetest.Time(parts + 1)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	slow := func(p int) int64 { return int64(p / 2) }
	fast := func(p int) int64 {
		if p <= forkPoint {
			return slow(p)
		}
		return min(10, slow(forkPoint)+int64(p-forkPoint))
	}
	write("src", func(*trace.Header) {}, 20, slow)
	write("fork", func(h *trace.Header) { h.ForkedFrom = &trace.Lineage{TrajectoryID: "src", Part: forkPoint} }, 14, fast)
	write("re", func(h *trace.Header) { h.RerunOf = &trace.Lineage{TrajectoryID: "src", UntilPart: 6} }, 6, slow)
	write("orphan", func(h *trace.Header) { h.ForkedFrom = &trace.Lineage{TrajectoryID: "gone", Part: 3} }, 6, slow)
	write("evil-fork", func(h *trace.Header) { h.ForkedFrom = &trace.Lineage{TrajectoryID: evilSource, Part: 2} }, 4, slow)
	rep, err := json.Marshal(rerun.Report{Source: "src", Rerun: "re", SourceParts: 6, RerunParts: 6, Reproduced: 5,
		FirstPart: &rerun.PartDiff{Part: 6, Field: "input", Source: "bash ls", Rerun: "bash ls -la"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, store.TrajectoriesDir, "re", store.RerunName), rep, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestLineageAPI: the API says each trajectory's lineage, whether its
// source is in the store, a rerun's comparison line, and a compare of a
// fork alone brings its source along.
func TestLineageAPI(t *testing.T) {
	_, _, c := testServer(t, Options{StoreURL: lineageStore(t)})
	for _, tc := range []struct {
		id   string
		want Lineage
	}{
		{"fork", Lineage{Kind: "fork", Source: "src", Part: forkPoint, InStore: true}},
		{"re", Lineage{Kind: "rerun", Source: "src", InStore: true, Rerun: "reproduced 5/6 parts; first divergence at part 6 (input)"}},
		{"orphan", Lineage{Kind: "fork", Source: "gone", Part: 3}},
		{"evil-fork", Lineage{Kind: "fork", Source: evilSource, Part: 2}},
	} {
		var m Meta
		if code := c.get("/api/t/"+tc.id, &m); code != 200 || m.Lineage == nil || *m.Lineage != tc.want {
			t.Errorf("%s: %d, lineage %+v, want %+v", tc.id, code, m.Lineage, tc.want)
		}
	}
	var m Meta
	if c.get("/api/t/src", &m); m.Lineage != nil {
		t.Errorf("the source has a lineage: %+v", m.Lineage)
	}
	var list struct{ Trajectories []Summary }
	c.get("/api/trajectories", &list)
	in := map[string]bool{}
	for _, s := range list.Trajectories {
		if s.Lineage != nil {
			in[s.ID] = s.Lineage.InStore
		}
	}
	if !in["fork"] || !in["re"] || in["orphan"] || in["evil-fork"] || len(in) != 4 {
		t.Errorf("store rows' sources in store: %v", in)
	}
	var cmp struct{ Trajectories []Compared }
	if code := c.get("/api/compare?ids=fork", &cmp); code != 200 || len(cmp.Trajectories) != 2 ||
		cmp.Trajectories[1].Summary.ID != "src" || cmp.Trajectories[1].SourceOf != "fork" {
		t.Fatalf("compare of the fork alone: %d, %+v", code, cmp.Trajectories)
	}
	if code := c.get("/api/compare?ids=orphan,evil-fork", &cmp); code != 200 || len(cmp.Trajectories) != 2 {
		t.Errorf("compare of forks whose source is missing: %d, %d trajectories", code, len(cmp.Trajectories))
	}
}

// pathXs are the x coordinates an SVG path's M and H commands visit.
var pathXs = regexp.MustCompile(`[MH]\s*(-?[0-9.]+)`)

// TestBrowserLineage: the store row and the trajectory page say where a
// fork and a rerun came from, with the source as a link; the compare page
// draws the source whole and the fork from the fork point on, with a mark
// there, names both in the legend and the hover readout, and fits 1,400 px.
func TestBrowserLineage(t *testing.T) {
	srv, base, _ := testServer(t, Options{StoreURL: lineageStore(t)})
	ctx := browser(t, 1400, 1000)
	run(t, ctx, "open the store page",
		chromedp.Navigate(base+"/?token="+srv.Token()),
		chromedp.WaitVisible(chromedp.CSS(`#trajectories tr[data-id="fork"] .lineage`)),
		chromedp.WaitVisible(chromedp.CSS(`#trajectories tr[data-id="evil-fork"] .lineage`)))
	if row := text(t, ctx, `#trajectories tr[data-id="fork"] .lineage`); row != "forked from src at part 8" {
		t.Errorf("fork's row says %q", row)
	}
	if href := js[string](t, ctx, `document.querySelector('#trajectories tr[data-id="fork"] a.lineage-source').getAttribute("href")`); href != "#/t/src" {
		t.Errorf("fork's row links its source to %q", href)
	}
	if row := text(t, ctx, `#trajectories tr[data-id="re"] .lineage`); row != "rerun of src: reproduced 5/6 parts; first divergence at part 6 (input)" {
		t.Errorf("rerun's row says %q", row)
	}
	if n := js[int](t, ctx, `document.querySelectorAll('#trajectories tr[data-id="orphan"] a.lineage-source, #trajectories tr[data-id="evil-fork"] a.lineage-source').length`); n != 0 {
		t.Errorf("%d links to sources the store lacks", n)
	}
	if row := text(t, ctx, `#trajectories tr[data-id="evil-fork"] .lineage`); !strings.Contains(row, evilSource) {
		t.Errorf("a markup source id does not show as text: %q", row)
	}
	if pwned := js[string](t, ctx, `String(window.__pwned) + document.querySelectorAll("#app img").length`); pwned != "undefined0" {
		t.Errorf("a source id ran or made an element: %s", pwned)
	}
	noOverflow(t, ctx, "store page")

	run(t, ctx, "open the fork",
		chromedp.Navigate(base+"/#/t/fork"),
		chromedp.WaitVisible(chromedp.CSS(`#lineage a.lineage-source`)),
		chromedp.WaitVisible(chromedp.CSS(`#curve .fork-mark`)))
	if l := text(t, ctx, `#lineage`); !strings.HasPrefix(l, "forked from src at part 8") {
		t.Errorf("the fork's page says %q", l)
	}
	if p := js[string](t, ctx, `document.querySelector("#curve .fork-mark").dataset.part`); p != "8" {
		t.Errorf("the fork's curve marks part %s, want 8", p)
	}
	noOverflow(t, ctx, "fork's page")
	run(t, ctx, "compare the fork with its source",
		chromedp.Click(chromedp.CSS(`#lineage a.lineage-compare`)),
		chromedp.WaitVisible(chromedp.CSS(`#compare-summary`)),
		chromedp.WaitVisible(chromedp.CSS(`#compare-curve .fork-mark`)))
	compareChecks(t, ctx, "fork and source", "fork", "src", forkPoint)

	run(t, ctx, "compare the fork alone",
		chromedp.Navigate(base+"/#/t/src"),
		chromedp.WaitVisible(chromedp.CSS(`#curve svg path.line`)),
		chromedp.Navigate(base+"/#/compare?ids=fork"),
		chromedp.WaitVisible(chromedp.CSS(`#compare-summary`)),
		chromedp.WaitVisible(chromedp.CSS(`#compare-curve .fork-mark`)))
	compareChecks(t, ctx, "fork alone", "fork", "src", forkPoint)
	if s := text(t, ctx, `#compare-summary`); !strings.Contains(s, "shown as the source of fork") {
		t.Errorf("the compare page does not say why src is shown:\n%s", s)
	}

	run(t, ctx, "the rerun's page",
		chromedp.Navigate(base+"/#/t/re"),
		chromedp.WaitVisible(chromedp.CSS(`#lineage .rerun-summary`)))
	if l := text(t, ctx, `#lineage`); l != "rerun of src: reproduced 5/6 parts; first divergence at part 6 (input)" {
		t.Errorf("the rerun's page says %q", l)
	}
}

// compareChecks reads the compare page's SVG: two lines (the source's and
// the fork's), the fork's starting at the fork mark and never left of it,
// the source's from part 1, and the readout naming both.
func compareChecks(t *testing.T, ctx context.Context, what, forkID, srcID string, at int) {
	t.Helper()
	got := js[map[string]any](t, ctx, fmt.Sprintf(`((forkID, srcID) => {
		const c = document.querySelector("#compare-curve");
		const p = (id) => { const e = c.querySelector('path.line[data-id="' + id + '"]'); return e ? e.getAttribute("d") : ""; };
		const m = c.querySelector(".fork-mark");
		return {lines: c.querySelectorAll("path.line").length, marks: c.querySelectorAll(".fork-mark").length, fork: p(forkID), src: p(srcID),
			srcDash: (c.querySelector('path.line[data-id="' + srcID + '"]') || {getAttribute: () => ""}).getAttribute("stroke-dasharray"),
			part: m.dataset.part, markX: parseFloat(m.querySelector("line").getAttribute("x1")),
			legend: c.querySelector(".legend").textContent};
	})(%q, %q)`, forkID, srcID))
	if got["lines"].(float64) != 2 || got["marks"].(float64) != 1 || got["part"] != fmt.Sprint(at) {
		t.Fatalf("%s: %v lines, %v fork marks at part %v; want 2 lines, 1 mark at %d", what, got["lines"], got["marks"], got["part"], at)
	}
	xs := func(d string) []float64 {
		var out []float64
		for _, m := range pathXs.FindAllStringSubmatch(d, -1) {
			x, _ := strconv.ParseFloat(m[1], 64)
			out = append(out, x)
		}
		return out
	}
	fork, src, markX := xs(got["fork"].(string)), xs(got["src"].(string)), got["markX"].(float64)
	if len(fork) < 2 || len(src) < 2 {
		t.Fatalf("%s: fork path %q, source path %q", what, got["fork"], got["src"])
	}
	if d := fork[0] - markX; d < -0.5 || d > 0.5 {
		t.Errorf("%s: the fork's curve starts at x %.1f, the fork mark is at %.1f", what, fork[0], markX)
	}
	for _, x := range fork {
		if x < markX-0.5 {
			t.Errorf("%s: the fork's curve is drawn at x %.1f, before its fork point (%.1f): %s", what, x, markX, got["fork"])
			break
		}
	}
	if src[0] >= markX {
		t.Errorf("%s: the source's curve starts at x %.1f, not before the fork point (%.1f)", what, src[0], markX)
	}
	if got["srcDash"] == "none" || got["srcDash"] == "" {
		t.Errorf("%s: the source's line is not dashed (%v)", what, got["srcDash"])
	}
	legend := got["legend"].(string)
	forkName, srcName := fmt.Sprintf("%s (fork of %s at part %d)", forkID, srcID, at), srcID+" (source)"
	for _, want := range []string{forkName, srcName} {
		if !strings.Contains(legend, want) {
			t.Errorf("%s: the legend lacks %q: %s", what, want, legend)
		}
	}
	hover := `(() => { const c = document.querySelector("#compare-curve"), s = c.querySelector(".surface"), r = s.getBoundingClientRect();
		s.dispatchEvent(new MouseEvent("mousemove", {bubbles: true, clientX: r.left + r.width * 0.9, clientY: r.top + r.height / 2}));
		return c.querySelector(".readout").textContent; })()`
	if ro := js[string](t, ctx, hover); !strings.Contains(ro, forkName+" ") || !strings.Contains(ro, srcName+" ") || !strings.Contains(ro, "%") {
		t.Errorf("%s: hover readout %q", what, ro)
	}
	noOverflow(t, ctx, "compare page ("+what+")")
}
