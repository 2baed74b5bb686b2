package view

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
)

// recordedForkDir holds the OpenCode demo ("demo-src") and a fork of it in
// its turn 2 with another script and a prompt ("demo-fork"), both recorded
// by traj run with the real OpenCode and the scripted model (`make
// view-fork-fixture`).
const recordedForkDir = "testdata/recorded-fork"

// TestBrowserRecordedFork: what TestBrowserLineage shows on synthetic
// traces holds for a fork traj run recorded: the fork's page names its
// source and fork point, and the compare page draws the source whole and
// the fork from the fork point on, both scored by the runs' own ground
// truth.
func TestBrowserRecordedFork(t *testing.T) {
	dir := t.TempDir()
	for _, id := range []string{"demo-src", "demo-fork"} {
		out := filepath.Join(dir, store.TrajectoriesDir, id)
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{store.TraceName, store.BundleName} {
			data, err := os.ReadFile(filepath.Join(recordedForkDir, id, name))
			if err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(out, name), data)
		}
	}
	f, err := os.Open(filepath.Join(recordedForkDir, "demo-fork", store.TraceName))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trace.Read(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	ff := tr.ForkedFrom
	if ff == nil || ff.TrajectoryID != "demo-src" || ff.Part < 2 {
		t.Fatalf("the recorded fork's forked_from is %+v", ff)
	}

	srv, base, c := testServer(t, Options{StoreURL: dir})
	var cmp struct {
		Trajectories []struct {
			Summary struct {
				ID string `json:"id"`
			} `json:"summary"`
			Curve    Curve  `json:"curve"`
			SourceOf string `json:"source_of"`
		} `json:"trajectories"`
	}
	if code := c.get("/api/compare?ids=demo-fork", &cmp); code != 200 || len(cmp.Trajectories) != 2 ||
		cmp.Trajectories[1].Summary.ID != "demo-src" || cmp.Trajectories[1].SourceOf != "demo-fork" {
		t.Fatalf("compare of the recorded fork: %d, %+v", code, cmp.Trajectories)
	}
	for _, tj := range cmp.Trajectories {
		if tj.Curve.Source != fromGroundTruth || len(tj.Curve.Points) < 2 {
			t.Errorf("%s: curve from %q with %d points, want the run's ground truth", tj.Summary.ID, tj.Curve.Source, len(tj.Curve.Points))
		}
	}

	ctx := browser(t, 1400, 1000)
	run(t, ctx, "open the recorded fork",
		chromedp.Navigate(base+"/?token="+srv.Token()),
		chromedp.WaitVisible(chromedp.CSS(`#trajectories tr[data-id="demo-fork"] .lineage`)),
		chromedp.Navigate(base+"/#/t/demo-fork"),
		chromedp.WaitVisible(chromedp.CSS(`#lineage a.lineage-source`)),
		chromedp.WaitVisible(chromedp.CSS(`#curve .fork-mark`)))
	want := "forked from demo-src at part " + strconv.Itoa(ff.Part)
	if l := text(t, ctx, `#lineage`); !strings.HasPrefix(l, want) {
		t.Errorf("the fork's page says %q, want %q", l, want)
	}
	run(t, ctx, "compare the recorded fork with its source",
		chromedp.Click(chromedp.CSS(`#lineage a.lineage-compare`)),
		chromedp.WaitVisible(chromedp.CSS(`#compare-summary`)),
		chromedp.WaitVisible(chromedp.CSS(`#compare-curve .fork-mark`)))
	compareChecks(t, ctx, "recorded fork", "demo-fork", "demo-src", ff.Part)
}
