package export_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/trajlab/traj/replay/export"
	"github.com/trajlab/traj/replay/sweepvalue"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store/local"
	"github.com/trajlab/traj/trace/tracetest"
)

// TestSweepsTableQueriedByDuckDB exports a store holding a swept trajectory and one
// without sweeps and reads the sweeps table back with DuckDB: one row per
// swept part with its value and the decisive part, nothing for the other;
// a sweep stored later changes the fingerprint, so exporting into the same
// folder again writes the new rows (not a stale table).
func TestSweepsTableQueriedByDuckDB(t *testing.T) {
	dir := t.TempDir()
	for _, id := range []string{"traj-swept", "traj-plain"} {
		folder := filepath.Join(dir, "trajectories", id)
		if err := os.MkdirAll(folder, 0o755); err != nil {
			t.Fatal(err)
		}
		tracetest.WriteDir(t, folder, tracetest.Spec{TrajectoryID: id, Turns: []int{6}, End: trace.EndPartLimit})
	}
	save := func(name string, values map[int]float64) {
		var forks []sweepvalue.Fork
		for at, v := range values {
			for r := 1; r <= 2; r++ {
				v := v
				forks = append(forks, sweepvalue.Fork{At: at, ForkPart: at, Repeat: r, Value: &v, Solved: v == 1, PrefixOK: true})
			}
		}
		forks = append(forks, sweepvalue.Fork{At: 6, ForkPart: 6, Repeat: 3}) // not reproduced, no value
		res := &sweepvalue.Result{Version: sweepvalue.Version, Name: name, Source: "traj-swept", SourceParts: 6, Model: "scripted/demo", Repeats: 2, MaxParts: 9, Forks: forks}
		res.Rows, res.Decisive = sweepvalue.Summarize(forks)
		st, err := local.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := sweepvalue.Save(context.Background(), st, res); err != nil {
			t.Fatal(err)
		}
	}
	save("s1", map[int]float64{2: 1, 4: 1, 6: 0})
	out := t.TempDir()
	export1 := func() {
		t.Helper()
		if _, err := export.Run(t.Context(), []string{dir}, export.Options{Format: export.FormatParquet, Out: out, StoreURL: t.TempDir(), Version: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	export1()
	files, _ := filepath.Glob(filepath.Join(out, "sweeps", "*.parquet"))
	if len(files) != 2 {
		t.Fatalf("sweeps files %v: one per trajectory, empty ones too", files)
	}
	query := `SELECT trajectory_id, sweep, part, fork_part, forks, counted, not_reproduced, mean_value, share_solved, decisive FROM read_parquet(` +
		sqlPath(filepath.Join(out, "sweeps", "*.parquet")) + `) ORDER BY sweep, part`
	rows := duckdb(t, query)[0]
	if len(rows) != 3 {
		t.Fatalf("sweeps rows %v", rows)
	}
	want := []struct {
		part, forks, counted, notReproduced float64
		mean                                float64
		decisive                            bool
	}{{2, 2, 2, 0, 1, false}, {4, 2, 2, 0, 1, false}, {6, 3, 2, 1, 0, true}}
	for i, w := range want {
		r := rows[i]
		got := func(k string) float64 {
			n, ok := num(t, r[k])
			if !ok {
				t.Fatalf("row %d %s = %v", i, k, r[k])
			}
			return n
		}
		if r["trajectory_id"] != "traj-swept" || r["sweep"] != "s1" || got("part") != w.part || got("fork_part") != w.part || got("forks") != w.forks ||
			got("counted") != w.counted || got("not_reproduced") != w.notReproduced || got("mean_value") != w.mean || got("share_solved") != w.mean || r["decisive"] != w.decisive {
			t.Errorf("row %d: %v, want %+v", i, r, w)
		}
	}

	save("s2", map[int]float64{3: 0.5})
	export1()
	rows = duckdb(t, query)[0]
	// s2: part 3, and part 6 whose one fork was not reproduced: no value.
	if len(rows) != 5 || rows[3]["sweep"] != "s2" || rows[4]["sweep"] != "s2" || rows[4]["mean_value"] != nil || rows[4]["counted"] == nil {
		t.Errorf("after a second sweep: rows %v, want s2's two rows too (part 6 without a value)", rows)
	}
}
