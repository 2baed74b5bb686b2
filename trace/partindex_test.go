package trace_test

import (
	"errors"
	"os"
	"testing"

	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/tracetest"
)

// checkPartIndex fails unless ix lists parts 1..n of the trace at path,
// each one's bytes read through the index and its commit the one the
// trace holds.
func checkPartIndex(t *testing.T, path string, ix *trace.PartIndex, n int) {
	t.Helper()
	if len(ix.Entries) != n {
		t.Fatalf("part index lists %d parts, the trace has %d", len(ix.Entries), n)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i, e := range ix.Entries {
		if e.Part != i+1 {
			t.Fatalf("entry %d is part %d", i, e.Part)
		}
		raw, err := ix.ReadPart(f, e)
		if err != nil {
			t.Fatal(err)
		}
		got, err := trace.NewPartEntry(e.Turn, e.Off, raw)
		if err != nil {
			t.Fatal(err)
		}
		commit, ok, err := ix.Commit(f, e.Part)
		if err != nil || !ok || commit != got.Commit || got.Part != e.Part {
			t.Fatalf("part %d: index says commit %q (%v, %v), the part says %q (part %d)", e.Part, commit, ok, err, got.Commit, got.Part)
		}
	}
}

// TestPartIndex attacks the index beside a recorded trace: whatever was
// done to it, LoadPartIndex answers from the trace as it is, and says
// whether it had to rebuild or complete the index.
func TestPartIndex(t *testing.T) {
	spec := tracetest.Spec{Turns: []int{4, 3, 5}, End: "part_limit", PartSize: 600}
	cases := []struct {
		name             string
		damage           func(t *testing.T, tracePath, indexPath string)
		rebuilt          bool
		added            int
		repairedByWriter bool // check that a reopened writer repairs the index
	}{
		{name: "as written", damage: func(*testing.T, string, string) {}},
		{name: "missing", damage: func(t *testing.T, _, ix string) { must(t, os.Remove(ix)) }, rebuilt: true, repairedByWriter: true},
		{name: "torn last record", damage: func(t *testing.T, _, ix string) { truncateBy(t, ix, 20) }, added: 1, repairedByWriter: true},
		{name: "three records behind", damage: func(t *testing.T, _, ix string) { truncateBy(t, ix, 3*64) }, added: 3, repairedByWriter: true},
		{name: "only the magic", damage: func(t *testing.T, _, ix string) { truncateBy(t, ix, 12*64) }, rebuilt: true, repairedByWriter: true},
		{name: "garbage", damage: func(t *testing.T, _, ix string) { must(t, os.WriteFile(ix, []byte("not an index"), 0o644)) }, rebuilt: true, repairedByWriter: true},
		{name: "a record flipped", damage: func(t *testing.T, _, ix string) { flipByte(t, ix, 16+5*64+9) }, added: 7, repairedByWriter: true},
		{name: "of another trace", damage: func(t *testing.T, tr, ix string) {
			// Same shape, other bytes: the index of a different recording.
			other := tracetest.WriteDir(t, t.TempDir(), tracetest.Spec{TrajectoryID: "traj-other", Turns: spec.Turns, End: spec.End, PartSize: 600})
			data, err := os.ReadFile(trace.PartIndexPath(other))
			must(t, err)
			must(t, os.WriteFile(ix, data, 0o644))
		}, rebuilt: true, repairedByWriter: true},
		{name: "trace rewritten after the index", damage: func(t *testing.T, tr, _ string) {
			// A trace recorded again at the same path keeps no byte of the old index.
			data, err := os.ReadFile(tracetest.WriteDir(t, t.TempDir(), tracetest.Spec{TrajectoryID: "traj-test-2", Turns: []int{6, 6}, End: "part_limit", PartSize: 600}))
			must(t, err)
			must(t, os.WriteFile(tr, data, 0o644))
		}, rebuilt: true, repairedByWriter: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := tracetest.WriteDir(t, t.TempDir(), spec)
			ixPath := trace.PartIndexPath(path)
			if _, err := os.Stat(ixPath); err != nil {
				t.Fatalf("the writer left no part index: %v", err)
			}
			fresh, _, err := trace.PartIndexDigest(path)
			if err != nil {
				t.Fatalf("digest of the index as written: %v", err)
			}
			tc.damage(t, path, ixPath)
			// A digest only of an index that describes every part.
			switch d, _, err := trace.PartIndexDigest(path); {
			case (tc.rebuilt || tc.added > 0) && !errors.Is(err, trace.ErrStaleIndex):
				t.Errorf("digest of a damaged index: %.12s, %v; want ErrStaleIndex", d, err)
			case !tc.rebuilt && tc.added == 0 && (err != nil || d != fresh):
				t.Errorf("digest of the index as written: %.12s, %v; want %.12s", d, err, fresh)
			}
			before, _ := os.ReadFile(ixPath)
			ix, err := trace.LoadPartIndex(path)
			if err != nil {
				t.Fatal(err)
			}
			if ix.Rebuilt != tc.rebuilt || ix.Added != tc.added {
				t.Errorf("rebuilt %v, added %d; want %v, %d", ix.Rebuilt, ix.Added, tc.rebuilt, tc.added)
			}
			checkPartIndex(t, path, ix, 12)
			if after, _ := os.ReadFile(ixPath); string(after) != string(before) {
				t.Error("reading changed the index file")
			}
			if tc.repairedByWriter {
				// The writer, reopening the trace, keeps a whole index again.
				w, err := trace.OpenForAppend(path, trace.WriterOptions{})
				if err != nil {
					t.Fatal(err)
				}
				must(t, w.Close())
				again, err := trace.LoadPartIndex(path)
				if err != nil {
					t.Fatal(err)
				}
				if again.Rebuilt || again.Added != 0 {
					t.Errorf("after the writer reopened the trace: rebuilt %v, added %d", again.Rebuilt, again.Added)
				}
				checkPartIndex(t, path, again, 12)
				if _, n, err := trace.PartIndexDigest(path); err != nil || n != 12 {
					t.Errorf("digest after the writer repaired the index: %d parts, %v", n, err)
				}
			}
		})
	}
}

// TestPartIndexDigest: the digest is the same for the same parts
// wherever the trace lies, and changes when a part is added.
func TestPartIndexDigest(t *testing.T) {
	spec := tracetest.Spec{Turns: []int{4, 3}, PartSize: 400}
	a := tracetest.WriteDir(t, t.TempDir(), spec)
	b := tracetest.WriteDir(t, t.TempDir(), spec)
	da, n, err := trace.PartIndexDigest(a)
	must(t, err)
	if n != 7 {
		t.Errorf("digest of %d parts, the trace has 7", n)
	}
	db, _, err := trace.PartIndexDigest(b)
	must(t, err)
	if da != db {
		t.Errorf("one recording at two paths: digests %.12s and %.12s", da, db)
	}
	w, err := trace.OpenForAppend(b, trace.WriterOptions{})
	must(t, err)
	must(t, w.AppendPart(tracetest.RealisticPart(8, tracetest.Commit(8), 400)))
	must(t, w.Close())
	if db, n, err = trace.PartIndexDigest(b); err != nil || db == da || n != 8 {
		t.Errorf("after a part was added: %.12s of %d parts, %v; want a new digest of 8", db, n, err)
	}
}

// TestPartIndexResumedWriter: a writer reopened on a trace whose index is
// gone writes the index again and goes on appending to it.
func TestPartIndexResumedWriter(t *testing.T) {
	path := tracetest.WriteDir(t, t.TempDir(), tracetest.Spec{Turns: []int{3}})
	must(t, os.Remove(trace.PartIndexPath(path)))
	w, err := trace.OpenForAppend(path, trace.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AppendPart(tracetest.RealisticPart(4, tracetest.Commit(4), 300)); err != nil {
		t.Fatal(err)
	}
	must(t, w.Close())
	ix, err := trace.LoadPartIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	if ix.Rebuilt || ix.Added != 0 {
		t.Errorf("rebuilt %v, added %d: the reopened writer did not keep the index", ix.Rebuilt, ix.Added)
	}
	checkPartIndex(t, path, ix, 4)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func truncateBy(t *testing.T, path string, n int64) {
	t.Helper()
	fi, err := os.Stat(path)
	must(t, err)
	must(t, os.Truncate(path, fi.Size()-n))
}

func flipByte(t *testing.T, path string, at int) {
	t.Helper()
	data, err := os.ReadFile(path)
	must(t, err)
	data[at] ^= 0xff
	must(t, os.WriteFile(path, data, 0o644))
}
