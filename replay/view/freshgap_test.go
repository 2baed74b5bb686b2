package view

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/tracetest"
)

// TestFreshGapShown: the public − fresh gap (replay.FreshGap) beside the
// score: the latest on the trajectory page's summary and the store page's
// row, one point per checkpoint whose result has both sides in the curve;
// absent for a trajectory without a fresh suite.
func TestFreshGapShown(t *testing.T) {
	dir := freshGapStore(t)
	_, _, c := testServer(t, Options{StoreURL: dir})
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

	var m Meta
	c.mustGet("/api/t/fits", &m)
	if m.FreshGap == nil || !near(*m.FreshGap, 1-0.25) || m.FreshGapPart != 4 {
		t.Errorf("summary gap %v at part %d, want 0.75 at part 4", deref(m.FreshGap), m.FreshGapPart)
	}
	var curve Curve
	c.mustGet("/api/t/fits/curve", &curve)
	want := [][2]float64{{3, 0.9 - 0.25}, {4, 0.75}}
	if len(curve.FreshGap) != len(want) {
		t.Fatalf("curve gap %v, want parts and gaps %v", curve.FreshGap, want)
	}
	for i, p := range curve.FreshGap {
		if p[0] != want[i][0] || !near(p[2], want[i][1]) || p[1] == 0 {
			t.Errorf("curve gap point %v, want part %v gap %v with a time", p, want[i][0], want[i][1])
		}
	}

	var none Meta
	c.mustGet("/api/t/public-only", &none)
	var noneCurve Curve
	c.mustGet("/api/t/public-only/curve", &noneCurve)
	if none.FreshGap != nil || none.FreshGapPart != 0 || noneCurve.FreshGap != nil {
		t.Errorf("no fresh suite, yet a gap: summary %v at %d, curve %v", deref(none.FreshGap), none.FreshGapPart, noneCurve.FreshGap)
	}

	var list struct{ Trajectories []Summary }
	c.mustGet("/api/trajectories", &list)
	rows := map[string]Summary{}
	for _, s := range list.Trajectories {
		rows[s.ID] = s
	}
	if r := rows["fits"]; r.FreshGap == nil || !near(*r.FreshGap, 0.75) || r.FreshGapPart != 4 {
		t.Errorf("store row gap %v at part %d, want 0.75 at part 4", deref(r.FreshGap), r.FreshGapPart)
	}
	if r, ok := rows["public-only"]; !ok || r.FreshGap != nil {
		t.Errorf("store row of public-only: %+v", r)
	}
}

// freshGapStore holds "fits" (public climbs to 100 %, fresh stays at the
// level-1 share; part 2 has no fresh suite, part 4 pools fresh's levels)
// and "public-only" (no fresh suite), scored by ground truth.
func freshGapStore(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	gt, suite := tracetest.GroundTruth, tracetest.Suite
	for id, res := range map[string]map[int][]trace.GroundTruth{
		"fits": {
			2: {gt(2, suite("basics", 5, 10))},
			3: {gt(3, suite("basics", 9, 10), suite("torture", 9, 10), suite("fresh", 8, 32))},
			4: {gt(4, suite("basics", 10, 10), suite("fresh/level_1", 8, 8), suite("fresh/level_2", 0, 24))},
		},
		"public-only": {3: {gt(3, suite("basics", 9, 10))}},
	} {
		tdir := filepath.Join(dir, store.TrajectoriesDir, id)
		if err := os.MkdirAll(tdir, 0o755); err != nil {
			t.Fatal(err)
		}
		tracetest.WriteDir(t, tdir, tracetest.Spec{TrajectoryID: id, Turns: []int{4}, End: trace.EndPartLimit, GroundTruth: res})
	}
	return dir
}

// TestBrowserFreshGap: the gap is a visible line beside the score on the
// trajectory page and under the score on the store page's row.
func TestBrowserFreshGap(t *testing.T) {
	srv, base, _ := testServer(t, Options{StoreURL: freshGapStore(t)})
	ctx := browser(t, 1400, 1000)
	run(t, ctx, "open the trajectory that fits the tests",
		chromedp.Navigate(base+"/?token="+srv.Token()+"#/t/fits"),
		chromedp.WaitVisible(chromedp.CSS(`#fresh-gap`)))
	if got := text(t, ctx, `#fresh-gap`); got != "public − fresh +75.0 pts at part 4" {
		t.Errorf("trajectory page gap line %q", got)
	}
	run(t, ctx, "open the store page",
		chromedp.Navigate(base+"/?token="+srv.Token()+"#/"),
		chromedp.WaitVisible(chromedp.CSS(`.fresh-gap`)))
	if n := js[int](t, ctx, `document.querySelectorAll(".fresh-gap").length`); n != 1 {
		t.Errorf("%d store rows show a gap, want 1 (fits)", n)
	}
	if got := text(t, ctx, `.fresh-gap`); got != "gap +75.0 pts" {
		t.Errorf("store row gap %q", got)
	}
}
