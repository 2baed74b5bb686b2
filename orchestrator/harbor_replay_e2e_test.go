package orchestrator_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trajlab/traj/trace"
)

// harborReplays checks that a Harbor trajectory (TestHarborStaged's, on
// python-stats: one test path, the task's name, with its CTRF cases and
// the case "reward") reads like a C suite's in the real binary: `traj
// report --json` has the score and the solved part ground truth gave
// (no evaluate report stored yet, so the rates are ground truth's),
// the Parquet export's evaluations table (read by DuckDB) holds the test
// path with each part's counts, `traj replay checkout-part` at the part
// that wrote median gives stats.py as that command wrote it, and `traj
// run --fork` at that part reproduces the source's prefix and goes on
// with a script of its own.
func harborReplays(t *testing.T, store, id string, tr *trace.Trace) {
	traj := needTraj(t)
	run := func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(traj, args...)
		out, err := cmd.CombinedOutput()
		if err != nil && cmd.ProcessState == nil {
			t.Fatalf("traj %v: %v", args, err)
		}
		return string(out), cmd.ProcessState.ExitCode()
	}
	truth := truthByPart(tr)
	solvedAt := 0
	for part := 0; part <= len(partsOf(tr)); part++ {
		if g, ok := truth[part]; ok && g.Solved && solvedAt == 0 {
			solvedAt = part
		}
	}
	const suite = "python-stats"

	// traj report --json: the score and the solved part ground truth gave.
	repPath := filepath.Join(t.TempDir(), "report.json")
	if out, code := run("report", "--store", store, "--json", repPath); code != 0 {
		t.Fatalf("traj report: exit %d\n%s", code, out)
	}
	var rep struct {
		Trajectories []struct {
			ID        string   `json:"trajectory_id"`
			Source    string   `json:"rate_source"`
			EndReason string   `json:"end_reason"`
			PassRate  *float64 `json:"pass_rate"`
			SolvedAt  int      `json:"solved_at"`
			Suites    []struct {
				Suite         string `json:"suite"`
				Passed, Total int
			} `json:"suites"`
		} `json:"trajectories"`
	}
	readJSON(t, repPath, &rep)
	found := false
	for _, r := range rep.Trajectories {
		if r.ID != id {
			continue
		}
		found = true
		if r.Source != "ground_truth" || r.EndReason != string(trace.EndSolved) || r.PassRate == nil || *r.PassRate != 1 || solvedAt == 0 || r.SolvedAt != solvedAt {
			t.Errorf("report (rates from %s): end %q, pass rate %s, solved at %d; ground truth: solved at part %d",
				r.Source, r.EndReason, rate(r.PassRate), r.SolvedAt, solvedAt)
		}
		if len(r.Suites) != 1 || r.Suites[0].Suite != suite || r.Suites[0].Passed != 5 || r.Suites[0].Total != 5 {
			t.Errorf("report suites %+v, want %s 5/5", r.Suites, suite)
		}
	}
	if !found {
		t.Fatalf("report has no trajectory %s", id)
	}

	// traj export --format parquet, read by DuckDB: the evaluations table
	// has the test path with each scored part's reward and CTRF counts.
	pq := filepath.Join(t.TempDir(), "parquet")
	if out, code := run("export", id, "--store", store, "--format", "parquet", "--out", pq); code != 0 {
		t.Fatalf("traj export: exit %d\n%s", code, out)
	}
	rows := duckdbRows(t, `SELECT part, suite, passed, total, pass_rate FROM read_parquet(`+
		sqlQuote(filepath.Join(pq, "evaluations", "*.parquet"))+`) WHERE source = 'ground_truth' ORDER BY part`)
	scored := 0
	for _, r := range rows {
		part, passed, total := jsonInt(t, r["part"]), jsonInt(t, r["passed"]), jsonInt(t, r["total"])
		g, ok := truth[int(part)]
		if r["suite"] != suite || !ok || passed != g.Passed || total != 5 {
			t.Errorf("evaluations row %v; ground truth at part %d: %+v (want suite %s, total 5)", r, part, g, suite)
		}
		scored++
	}
	if scored < 4 {
		t.Errorf("evaluations: %d ground-truth rows, want one per scored part (at least 4)", scored)
	}

	// traj replay checkout-part at the part that wrote median: stats.py
	// holds what that command wrote.
	at, want := 0, ""
	for _, p := range partsOf(tr) {
		var c struct {
			State struct {
				Input struct{ Command, Description string } `json:"input"`
			} `json:"state"`
		}
		if p.Tool == "bash" && json.Unmarshal(p.Content, &c) == nil && c.State.Input.Description == "median" {
			at = p.Part
			_, body, _ := strings.Cut(c.State.Input.Command, "<<'PY'\n")
			want, _, _ = strings.Cut(body, "PY\n")
		}
	}
	if at == 0 || !strings.Contains(want, "sorted(xs)") {
		t.Fatalf("no bash part writes median (part %d, body %q)", at, want)
	}
	dest := filepath.Join(t.TempDir(), "checkout")
	if out, code := run("replay", "checkout-part", id, "--store", store, "--part", fmt.Sprint(at), "--checkout-dest", dest); code != 0 {
		t.Fatalf("checkout-part %d: exit %d\n%s", at, code, out)
	}
	if got, err := os.ReadFile(filepath.Join(dest, "stats.py")); err != nil || string(got) != want {
		t.Errorf("checkout-part %d: stats.py %q (%v), want %q", at, got, err, want)
	}

	// traj run --fork at that part with a script of its own: the prefix is
	// reproduced, forked_from is recorded, the parts after it are the
	// new script's.
	script := filepath.Join(t.TempDir(), "fork.jsonl")
	if err := os.WriteFile(script, []byte(`{"text": "Forked after median."}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := run("run", "--fork", id, "--at-part", fmt.Sprint(at), "--script", script, "--store", store,
		"--trajectory-id", "fork", "--quiet")
	if code != 0 && code != 3 { // 3: agent_error, the script ran out
		t.Fatalf("traj run --fork: exit %d\n%s", code, out)
	}
	ftr := readValidTrace(t, filepath.Join(store, "trajectories", "fork"))
	ff := ftr.ForkedFrom
	if ff == nil || ff.TrajectoryID != id || ff.Part < at {
		t.Fatalf("forked_from %+v; want %s at a part >= %d", ff, id, at)
	}
	if w := fmt.Sprintf("inherited parts reproduced %d/%d parts", ff.Part, ff.Part); !strings.Contains(out, w) {
		t.Fatalf("the fork does not say %q:\n%s", w, out)
	}
	var after []string
	for _, p := range partsOf(ftr) {
		if p.Part > ff.Part {
			after = append(after, string(p.Content))
		}
	}
	if all := strings.Join(after, "|"); !strings.Contains(all, "Forked after median.") || strings.Contains(all, `"mode"`) {
		t.Errorf("the fork's parts after %d are not its script's: %.500s", ff.Part, all)
	}
}

// duckdbRows runs one query with the pinned DuckDB of the export tests
// (replay/export/testdata/duckdb, installed by make setup).
func duckdbRows(t *testing.T, query string) []map[string]any {
	t.Helper()
	dir, err := filepath.Abs("../replay/export/testdata/duckdb")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@duckdb", "node-api")); err != nil {
		if os.Getenv("TRAJ_SKIP_DUCKDB") == "1" {
			t.Skip("DuckDB not installed and TRAJ_SKIP_DUCKDB=1")
		}
		t.Fatalf("DuckDB for the export tests is not installed (run make setup): %v", err)
	}
	in, _ := json.Marshal([]string{query})
	cmd := exec.Command("node", "query.mjs")
	cmd.Dir, cmd.Stdin = dir, bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("duckdb: %v\n%s", err, stderr.String())
	}
	var res [][]map[string]any
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&res); err != nil || len(res) != 1 {
		t.Fatalf("duckdb output (%v): %s", err, out)
	}
	return res[0]
}

// rate prints a pass rate that may be absent.
func rate(r *float64) string {
	if r == nil {
		return "none"
	}
	return fmt.Sprint(*r)
}

// sqlQuote quotes a path for a SQL string literal.
func sqlQuote(p string) string { return "'" + strings.ReplaceAll(p, "'", "''") + "'" }

// jsonInt reads a DuckDB JSON integer (a number, or a string for BIGINT).
func jsonInt(t *testing.T, v any) int64 {
	t.Helper()
	var n json.Number
	switch x := v.(type) {
	case json.Number:
		n = x
	case string:
		n = json.Number(x)
	default:
		t.Fatalf("not an integer: %#v", v)
	}
	i, err := n.Int64()
	if err != nil {
		t.Fatalf("integer %v: %v", v, err)
	}
	return i
}

// readJSON decodes the JSON file at path into v.
func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
