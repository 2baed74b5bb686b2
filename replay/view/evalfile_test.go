package view

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/labels"
	"github.com/trajlab/traj/trace/store"
)

// chunkReader hands out at most n bytes a read, so a report crosses many
// buffer refills.
type chunkReader struct {
	r io.Reader
	n int
}

func (c chunkReader) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

// sorted copies e with its test lists sorted (the reduction appends them
// in map order; the pages sort them).
func sorted(e *evalData) *evalData {
	c := *e
	sortLists := func(m map[int][]string) map[int][]string {
		out := make(map[int][]string, len(m))
		for k, v := range m {
			out[k] = slices.Sorted(slices.Values(v))
		}
		return out
	}
	c.series.Drops, c.series.Gains, c.fixed = sortLists(e.series.Drops), sortLists(e.series.Gains), sortLists(e.fixed)
	return &c
}

// TestEvalReportSameAsFull: the report read for the pages (part
// evaluations and attribution, the rest passed over) reduces to exactly
// what the whole replay.Output reduces to, and so does the reduction kept
// in the cache folder, on real evaluations (the sample store's alpha with
// a regression and beta, the recorded demo) and on the benchmark's
// 3,058-case report.
func TestEvalReportSameAsFull(t *testing.T) {
	dir := sharedSample(t)
	// The bench report holds failure labels: they reach the curve's
	// marks through the streamed read and the cache folder alike.
	benchOut := benchEvaluation(700)
	benchOut.Labels, _ = labels.Marshal([]labels.Label{{Label: labels.Plateau, Part: 120, Evidence: "no new test passing from part 120 to part 400"}}, labels.Options{})
	bench, err := replay.MarshalIndent(benchOut)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]byte{"bench": bench}
	for name, p := range map[string]string{
		"alpha": filepath.Join(dir, store.TrajectoriesDir, "alpha", store.EvaluationName),
		"beta":  filepath.Join(dir, store.TrajectoriesDir, "beta", store.EvaluationName),
		"demo":  filepath.Join(demoDir, store.EvaluationName),
	} {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		cases[name] = data
	}
	cat := &catalog{cacheDir: t.TempDir(), logger: slog.New(slog.DiscardHandler)}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			var full replay.Output
			if err := json.Unmarshal(data, &full); err != nil {
				t.Fatal(err)
			}
			want := newEvalData(&full)
			if want.series.Empty() || len(want.tests) == 0 {
				t.Fatalf("%s: no score or no tests to compare", name)
			}
			if name == "bench" && (len(want.labels) != 1 || want.labels[0].Part != 120) {
				t.Fatalf("bench: labels %+v", want.labels)
			}
			if name == "alpha" || name == "bench" {
				if len(want.series.Drops) == 0 || len(want.fixed) == 0 {
					t.Fatalf("%s: no regression or fix to compare", name)
				}
			}
			for _, chunk := range []int{1 << 20, 4096, 7} {
				if chunk == 7 && len(data) > 1<<20 {
					continue
				}
				var rep evalReport
				n, err := rep.ReadFrom(chunkReader{bytes.NewReader(data), chunk})
				if err != nil {
					t.Fatalf("chunks of %d: %v", chunk, err)
				}
				if n != int64(len(data)-1) { // all but the final newline
					t.Errorf("chunks of %d: read %d bytes of %d", chunk, n, len(data))
				}
				if len(rep.out.CommitEvaluations) != 0 {
					t.Errorf("chunks of %d: commit evaluations decoded", chunk)
				}
				got := newEvalData(&rep.out)
				if !reflect.DeepEqual(sorted(got), sorted(want)) {
					t.Fatalf("chunks of %d: the report read for the pages reduces differently from the whole report", chunk)
				}
			}
			uri := "file:///" + name
			cat.saveEval(uri, "stamp-1", want)
			cached := cat.loadEval(uri, "stamp-1")
			if cached == nil || !reflect.DeepEqual(sorted(cached), sorted(want)) {
				t.Fatal("the cached reduction differs from the one saved")
			}
			if cat.loadEval(uri, "stamp-2") != nil {
				t.Fatal("a reduction cached for another state of the report was used")
			}
		})
	}
}

// TestEvalReportBad: a truncated or malformed report is an error, never a
// partial score.
func TestEvalReportBad(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(demoDir, store.EvaluationName))
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(data, []byte(`"part_evaluations"`))
	for name, bad := range map[string]string{
		"empty":             "",
		"not an object":     "[1, 2]",
		"truncated":         string(data[:len(data)/2]),
		"truncated in part": string(data[:i+400]),
		"bad part key":      `{"part_evaluations": {"one": {}}}`,
		"bad part value":    `{"part_evaluations": {"1": [1]}}`,
		"bad attribution":   `{"test_attribution": {"t": {"broken_at": "x"}}}`,
		"no comma":          `{"trajectory_id": "x" "part_evaluations": {}}`,
		"open string":       `{"trajectory_id": "x}`,
	} {
		var rep evalReport
		if _, err := rep.ReadFrom(strings.NewReader(bad)); err == nil {
			t.Errorf("%s: decoded without an error", name)
		}
	}
	var rep evalReport
	if _, err := rep.ReadFrom(strings.NewReader(`{"part_evaluations": null, "test_attribution": {}, "x": [1, "]", {"a": -1.5e3}, true, null]}`)); err != nil {
		t.Errorf("a report with empty parts: %v", err)
	}
}

// TestEvalCacheFolder: a restarted viewer takes the evaluation's reduction
// from the cache folder while the report keeps its size and time (so a
// report overwritten with garbage under the same stamp still shows the
// cached score), and reads the report again when its stamp changes.
func TestEvalCacheFolder(t *testing.T) {
	src := filepath.Join(sharedSample(t), store.TrajectoriesDir, "alpha")
	dir := t.TempDir()
	tdir := filepath.Join(dir, store.TrajectoriesDir, "alpha")
	if err := os.CopyFS(tdir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	var first, again, changed Curve
	_, _, c := testServer(t, Options{StoreURL: dir, CacheDir: cache})
	c.mustGet("/api/t/alpha/curve", &first)
	if first.Source != fromEvaluation || len(first.Marks) == 0 {
		t.Fatalf("alpha's curve: source %q, %d marks", first.Source, len(first.Marks))
	}
	report := filepath.Join(tdir, store.EvaluationName)
	fi, err := os.Stat(report)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(report, bytes.Repeat([]byte("x"), int(fi.Size())), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(report, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	_, _, c = testServer(t, Options{StoreURL: dir, CacheDir: cache})
	c.mustGet("/api/t/alpha/curve", &again)
	if !reflect.DeepEqual(again, first) {
		t.Fatalf("the restarted viewer did not show the cached evaluation: source %q", again.Source)
	}
	later := fi.ModTime().Add(time.Second)
	if err := os.Chtimes(report, later, later); err != nil {
		t.Fatal(err)
	}
	_, _, c = testServer(t, Options{StoreURL: dir, CacheDir: cache})
	c.mustGet("/api/t/alpha/curve", &changed)
	if changed.Source == fromEvaluation {
		t.Fatal("a report whose stamp changed was not read again (its garbage would have been ignored)")
	}
}
