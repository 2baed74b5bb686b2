package ref_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/local"
	"github.com/trajlab/traj/trace/store/ref"
	"github.com/trajlab/traj/trace/tracetest"
)

// traceDir writes a trace for id into dir (made with its parents).
func traceDir(t *testing.T, dir, id string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tracetest.WriteDir(t, dir, tracetest.Spec{TrajectoryID: id})
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// chunksOnly records trajectory id into the store at root with the real
// writer, keeping only its chunks there (no agent_trace.json), and returns
// the trace the chunks must rebuild.
func chunksOnly(t *testing.T, root, id string) []byte {
	t.Helper()
	st, err := local.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	return record(t, st, id)
}

func ids(ts []*ref.Trajectory) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.ID)
	}
	return out
}

// TestSets attacks the one rule (a trace or its chunks) on every shape a
// set's reference can have: what Expand finds, what IsTrajectoryFolder
// says, and that each found trajectory's trace can be read.
func TestSets(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		// build makes the tree under root and returns the reference.
		build   func(t *testing.T, root string) string
		want    []string
		folder  bool // IsTrajectoryFolder(reference)
		rebuilt []string
		wantErr error
	}{
		{
			name:   "folder with trace",
			build:  func(t *testing.T, root string) string { d := filepath.Join(root, "t1"); traceDir(t, d, "t1"); return d },
			want:   []string{"t1"},
			folder: true,
		},
		{
			name: "folder with chunks only",
			build: func(t *testing.T, root string) string {
				chunksOnly(t, root, "c1")
				return filepath.Join(root, "trajectories", "c1")
			},
			want: []string{"c1"}, folder: true, rebuilt: []string{"c1"},
		},
		{
			name: "folder with neither (bundles and logs only)",
			build: func(t *testing.T, root string) string {
				d := filepath.Join(root, "t1")
				writeFile(t, filepath.Join(d, store.BundleName), "bundle")
				writeFile(t, filepath.Join(d, store.HistoryDir, store.HistoryBundleName(1)), "bundle")
				writeFile(t, filepath.Join(d, store.LogsDir, "opencode.log"), "log")
				return d
			},
			wantErr: ref.ErrBadReference,
		},
		{
			name: "nested folders",
			build: func(t *testing.T, root string) string {
				traceDir(t, filepath.Join(root, "a", "t2"), "t2")
				traceDir(t, filepath.Join(root, "a", "b", "c", "t1"), "t1")
				// A trajectory folder's own subfolders are its objects, and
				// .git folders are never searched.
				traceDir(t, filepath.Join(root, "a", "t2", store.LogsDir, "inner"), "inner")
				traceDir(t, filepath.Join(root, ".git", "t9"), "t9")
				writeFile(t, filepath.Join(root, "a", "empty", "notes.txt"), "x")
				return root
			},
			want: []string{"t1", "t2"},
		},
		{
			name: "store with 3 trajectories",
			build: func(t *testing.T, root string) string {
				traceDir(t, filepath.Join(root, "trajectories", "t2"), "t2")
				traceDir(t, filepath.Join(root, "trajectories", "t1"), "t1")
				chunksOnly(t, root, "t3")
				// Not trajectories: a summary alone, bundles alone, a loose file.
				writeFile(t, filepath.Join(root, "trajectories", "s", store.SummaryName), "{}")
				writeFile(t, filepath.Join(root, "trajectories", "b", store.BundleName), "bundle")
				writeFile(t, filepath.Join(root, "trajectories", "loose.json"), "{}")
				return root
			},
			want: []string{"t1", "t2", "t3"}, rebuilt: []string{"t3"},
		},
		{
			name: "store URL",
			build: func(t *testing.T, root string) string {
				traceDir(t, filepath.Join(root, "trajectories", "t1"), "t1")
				return "file://" + root
			},
			want: []string{"t1"},
		},
		{
			name: "empty store",
			build: func(t *testing.T, root string) string {
				os.MkdirAll(filepath.Join(root, "trajectories"), 0o755)
				return root
			},
			wantErr: ref.ErrBadReference,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			r := c.build(t, root)
			if got := ref.IsTrajectoryFolder(r); got != c.folder {
				t.Errorf("IsTrajectoryFolder(%s) = %v, want %v", r, got, c.folder)
			}
			ts, err := ref.ResolveAll(ctx, []string{r}, root, ref.Options{CacheDir: t.TempDir()})
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("ResolveAll(%s) = %v, %v; want %v", r, ids(ts), err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(ts); !slices.Equal(got, c.want) {
				t.Fatalf("ResolveAll(%s) = %v, want %v", r, got, c.want)
			}
			for _, tr := range ts {
				p, rebuilt, err := tr.TracePath(ctx)
				if err != nil {
					t.Fatalf("%s: %v", tr.ID, err)
				}
				if rebuilt != slices.Contains(c.rebuilt, tr.ID) {
					t.Errorf("%s: rebuilt %v", tr.ID, rebuilt)
				}
				if b := readFile(t, p); !bytes.Contains(b, []byte(`"trajectory_id":"`+tr.ID+`"`)) && !bytes.Contains(b, []byte(`"trajectory_id": "`+tr.ID+`"`)) {
					t.Errorf("%s: trace %s names another trajectory", tr.ID, p)
				}
			}
		})
	}
}

func TestListFlags(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	traceDir(t, filepath.Join(root, "trajectories", "t1"), "t1")
	writeFile(t, filepath.Join(root, "trajectories", "t1", store.EvaluationName), "{}")
	writeFile(t, filepath.Join(root, "trajectories", "t1", store.SummaryName), "{}")
	chunksOnly(t, root, "t2")
	st, err := local.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ref.List(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("List = %+v, want t1 and t2", got)
	}
	t1, t2 := got[0], got[1]
	if t1.ID != "t1" || !t1.HasTrace || t1.Trace.Size == 0 || !t1.HasEvaluation || !t1.HasSummary || t1.HasChunks {
		t.Errorf("t1: %+v", t1)
	}
	if t2.ID != "t2" || t2.HasTrace || !t2.HasChunks || t2.HasEvaluation {
		t.Errorf("t2: %+v", t2)
	}
	// Lookup applies the same rule to one id; Resolve follows it.
	writeFile(t, filepath.Join(root, "trajectories", "logs-only", store.LogsDir, "opencode.log"), "x")
	for _, c := range []struct {
		id              string
		ok, trace, chks bool
	}{{"t1", true, true, false}, {"t2", true, false, true}, {"logs-only", false, false, false}, {"absent", false, false, false}} {
		l, ok, err := ref.Lookup(ctx, st, c.id)
		if err != nil || ok != c.ok || l.HasTrace != c.trace || l.HasChunks != c.chks {
			t.Errorf("Lookup(%s) = %+v, %v, %v", c.id, l, ok, err)
		}
		if _, err := ref.Resolve(ctx, c.id, root, ref.Options{}); (err == nil) != c.ok || (err != nil && !errors.Is(err, ref.ErrNotFound)) {
			t.Errorf("Resolve(%s) = %v, want found %v", c.id, err, c.ok)
		}
	}
	// ListStore keeps the ids asked for that the store holds.
	ts, err := ref.ListStore(ctx, root, []string{"t2", "never-ran"}, ref.Options{})
	if err != nil || !slices.Equal(ids(ts), []string{"t2"}) {
		t.Errorf("ListStore(t2, never-ran) = %v, %v", ids(ts), err)
	}
	// A store that does not exist is the user's mistake, and is not made.
	missing := filepath.Join(root, "no-store")
	if _, err := ref.ListStore(ctx, missing, nil, ref.Options{}); !errors.Is(err, ref.ErrBadReference) {
		t.Errorf("ListStore(missing) = %v", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ListStore created %s", missing)
	}
}

func TestSetDuplicates(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	a, b := filepath.Join(root, "a", "t1"), filepath.Join(root, "b", "t1")
	traceDir(t, a, "t1")
	traceDir(t, b, "t1")
	ts, err := ref.ResolveAll(ctx, []string{a, filepath.Join(a, store.TraceName), a}, "", ref.Options{})
	if err != nil || len(ts) != 1 {
		t.Errorf("one trajectory named three ways: %v, %v", ids(ts), err)
	}
	_, err = ref.ResolveAll(ctx, []string{a, b}, "", ref.Options{})
	if !errors.Is(err, ref.ErrDuplicateID) || !errors.Is(err, ref.ErrBadReference) || !strings.Contains(err.Error(), "two trajectories have the id t1") {
		t.Errorf("two trajectories with id t1: %v", err)
	}
	if _, err := ref.ResolveAll(ctx, []string{"gs://bucket/x"}, "", ref.Options{}); !errors.Is(err, ref.ErrBadReference) {
		t.Errorf("unknown scheme: %v", err)
	}
}

type evaluation struct {
	Suites map[string]int `json:"suites"`
}

func TestLoadEvaluation(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name      string
		content   *string
		found     bool
		errSubstr string
	}{
		{name: "missing"},
		{name: "present", content: ptr(`{"suites":{"basic":3}}`), found: true},
		{name: "corrupt", content: ptr(`{"suites":{"basic":`), errSubstr: store.EvaluationName},
		{name: "wrong type", content: ptr(`[1,2]`), errSubstr: store.EvaluationName},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "trajectories", "t1")
			traceDir(t, dir, "t1")
			if c.content != nil {
				writeFile(t, filepath.Join(dir, store.EvaluationName), *c.content)
			}
			// The same answer through a store id and through the folder.
			for _, r := range []string{"t1", dir} {
				tr, err := ref.Resolve(ctx, r, root, ref.Options{})
				if err != nil {
					t.Fatal(err)
				}
				var ev evaluation
				found, err := tr.LoadEvaluation(ctx, &ev)
				if c.errSubstr != "" {
					if err == nil || !strings.Contains(err.Error(), c.errSubstr) {
						t.Errorf("%s: LoadEvaluation = %v, %v; want an error naming %s", r, found, err, c.errSubstr)
					}
					continue
				}
				if err != nil || found != c.found {
					t.Fatalf("%s: LoadEvaluation = %v, %v; want %v", r, found, err, c.found)
				}
				if c.found && ev.Suites["basic"] != 3 {
					t.Errorf("%s: decoded %+v", r, ev)
				}
				stamp, err := tr.EvaluationStamp(ctx)
				if err != nil || (stamp != "") != c.found {
					t.Errorf("%s: EvaluationStamp = %q, %v", r, stamp, err)
				}
			}
		})
	}
}

func ptr(s string) *string { return &s }
