package view

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/trajlab/traj/replay/sweepvalue"
	"github.com/trajlab/traj/trace/store/local"
)

// TestSweepBand: a fork sweep stored beside a trajectory is served by
// /api/t/{id}/sweeps and drawn on its page as a band under its curve with
// the mean value and a mark at the decisive part; a trajectory without a
// sweep gets none.
func TestSweepBand(t *testing.T) {
	dir := t.TempDir()
	addDemo(t, dir)
	st, err := local.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var forks []sweepvalue.Fork
	for at, v := range map[int]float64{2: 1, 4: 0.75, 6: 0.125, 8: 0} {
		for r := 1; r <= 3; r++ {
			v := v - 0.05*float64(r-1)*v // a spread
			forks = append(forks, sweepvalue.Fork{At: at, ForkPart: at, Repeat: r, Value: &v, Solved: v == 1, PrefixOK: true})
		}
	}
	res := &sweepvalue.Result{Version: sweepvalue.Version, Name: "s1", Source: "demo-ground-truth", SourceParts: 20, Model: "scripted/demo", Repeats: 3, MaxParts: 30, Forks: forks}
	res.Rows, res.Decisive = sweepvalue.Summarize(forks)
	if res.Decisive == nil || res.Decisive.Part != 6 {
		t.Fatalf("decisive %+v, want part 6", res.Decisive)
	}
	if err := sweepvalue.Save(context.Background(), st, res); err != nil {
		t.Fatal(err)
	}
	srv, base, c := testServer(t, Options{StoreURL: dir})
	var got []SweepView
	c.mustGet("/api/t/demo-ground-truth/sweeps", &got)
	if len(got) != 1 || len(got[0].Rows) != 4 || got[0].Decisive == nil || got[0].Decisive.Part != 6 {
		t.Fatalf("sweeps %+v", got)
	}
	var none []SweepView
	c.mustGet("/api/t/demo/sweeps", &none)
	if none == nil || len(none) != 0 {
		t.Errorf("demo's sweeps %v, want []", none)
	}

	ctx := browser(t, 1400, 1000)
	run(t, ctx, "open the swept trajectory",
		chromedp.Navigate(base+"/?token="+srv.Token()+"#/t/demo-ground-truth"),
		chromedp.WaitVisible(chromedp.CSS(`#curve svg path.band-area.sweep`)),
		chromedp.WaitVisible(chromedp.CSS(`#curve svg g.fork-mark.decisive[data-part="6"]`)))
	if label := js[string](t, ctx, `document.querySelector('#curve g.fork-mark.decisive title').textContent`); !strings.Contains(label, "from part 4 to part 6") {
		t.Errorf("decisive mark says %q", label)
	}
	if n := js[int](t, ctx, `[...document.querySelectorAll('#curve path.line')].filter((p) => p.querySelector('title').textContent.startsWith('sweep s1')).length`); n != 1 {
		t.Errorf("%d mean lines of the sweep, want 1", n)
	}
	run(t, ctx, "open a trajectory without a sweep",
		chromedp.Navigate(base+"/?token="+srv.Token()+"#/t/demo"),
		chromedp.WaitVisible(chromedp.CSS(`#curve svg path.line`)))
	if n := js[int](t, ctx, `document.querySelectorAll('#curve path.band-area.sweep, #curve g.fork-mark.decisive').length`); n != 0 {
		t.Errorf("the unswept trajectory shows %d sweep shapes", n)
	}
}
