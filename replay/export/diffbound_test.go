package export_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/trajlab/traj/replay/export"
	"github.com/trajlab/traj/replay/replaytest"
	"github.com/trajlab/traj/trace/store"
)

// TestParquetPermutedRewriteBounded is the attack on the export's line
// counts: part 2 rewrites a 160,000-line file as a permutation of its
// lines (go-git's diff: 134 s of the export). The export finishes with
// the counts of a correct diff (the file replaced whole) and a warning
// naming the part as too large to diff.
func TestParquetPermutedRewriteBounded(t *testing.T) {
	tj := replaytest.BuildSpec(t, replaytest.Spec{ID: "permuted", Changes: replaytest.PermutedRewrite(160_000), TurnSize: 2, TrajFields: true})
	st := t.TempDir()
	dir := filepath.Join(st, store.TrajectoriesDir, "permuted")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, tj.TracePath, filepath.Join(dir, store.TraceName))
	copyFile(t, tj.BundlePath, filepath.Join(dir, store.BundleName))
	out := t.TempDir()
	if _, err := export.Run(context.Background(), []string{"permuted"}, export.Options{Format: export.FormatParquet, Out: out, StoreURL: st}); err != nil {
		t.Fatal(err)
	}
	rows, err := parquet.ReadFile[export.PartRow](filepath.Join(out, export.TableParts, "permuted.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[1].LinesAdded == nil || *rows[1].LinesAdded != 160_000 || *rows[1].LinesRemoved != 160_000 {
		t.Fatalf("rows %+v", rows)
	}
	m, err := os.ReadFile(filepath.Join(out, export.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(m), "part 2: a file too large to diff") {
		t.Errorf("no warning in the manifest:\n%s", m)
	}
}
