package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/trajlab/traj/trace"
)

// TestTraceSynthReadable makes a small synthetic trajectory with `traj
// trace synth` and reads it with every command that reads trajectories:
// trace show and validate, replay verify and checkout-part, export
// (Parquet and ATIF), report, and the viewer's pages of a part, its diff
// and the model calls.
func TestTraceSynthReadable(t *testing.T) {
	st := t.TempDir()
	const id = "synth-300-5"
	mustRun := func(args ...string) string {
		t.Helper()
		code, out, errs := runTraj(t, args...)
		if code != 0 {
			t.Fatalf("traj %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
		}
		return out
	}
	out := mustRun("trace", "synth", "--parts", "300", "--seed", "5", "--out", st)
	if !strings.Contains(out, id+": 300 parts") {
		t.Fatalf("synth said %q", out)
	}
	if out := mustRun("trace", "show", "--store", st, id); !strings.Contains(out, "parts                 300") || !strings.Contains(out, "ground truth") {
		t.Errorf("trace show:\n%s", out)
	}
	mustRun("trace", "validate", "--store", st, id)
	if out := mustRun("replay", "verify", "--store", st, id); !strings.Contains(out, "ok (300 parts") {
		t.Errorf("verify: %s", out)
	}
	// The last committed part, checked out at its commit.
	f, err := os.Open(filepath.Join(st, "trajectories", id, "agent_trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	var committed int
	var commit string
	if err := trace.Scan(f, trace.Visitor{OnPart: func(_ int, p *trace.Part) error {
		if p.RepoCheckpoint != nil && p.RepoCheckpoint.Committed {
			committed, commit = p.Part, p.GitCommit
		}
		return nil
	}}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	dest := filepath.Join(t.TempDir(), "co")
	if out := mustRun("replay", "checkout-part", "--store", st, id, "--part", strconv.Itoa(committed), "--checkout-dest", dest); !strings.Contains(out, commit) {
		t.Errorf("checkout-part: %s", out)
	}
	if _, err := os.Stat(filepath.Join(dest, "src", "main.c")); err != nil {
		t.Errorf("checkout: %v", err)
	}
	exp := t.TempDir()
	if out := mustRun("export", "--store", st, id, "--format", "parquet", "--out", exp); !strings.Contains(out, "parts 300") || !strings.Contains(out, "model_calls ") {
		t.Errorf("parquet export: %s", out)
	}
	mustRun("export", "--store", st, id, "--format", "atif", "--out", t.TempDir())
	html := filepath.Join(t.TempDir(), "r.html")
	if out := mustRun("report", "--store", st, "--html", html); !strings.Contains(out, id) {
		t.Errorf("report: %s", out)
	}

	api := viewClient(t, st, "synth")
	get := func(path string) string { return string(api(path, nil)) }
	n := strconv.Itoa(committed)
	for _, path := range []string{"/api/trajectories", "/api/t/" + id, "/api/t/" + id + "/parts", "/api/t/" + id + "/parts/" + n,
		"/api/t/" + id + "/diff/" + n, "/api/t/" + id + "/calls"} {
		body := get(path)
		if !json.Valid([]byte(body)) {
			t.Errorf("GET %s: not JSON: %.200s", path, body)
		}
		if strings.Contains(path, "/diff/") && !strings.Contains(body, "@@") {
			t.Errorf("diff of part %s shows no hunk: %.300s", n, body)
		}
	}
}
