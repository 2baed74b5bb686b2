package synth

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trajlab/traj/sandbox/gateway/model"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
)

// TestDeterministic writes the same trajectory into two store folders:
// every file is the same, byte for byte, but for the store's location in
// the trace's artifact URLs; another seed gives another trajectory.
func TestDeterministic(t *testing.T) {
	ctx := context.Background()
	write := func(seed uint64) (string, Result) {
		dir := t.TempDir()
		res, err := Write(ctx, dir, Options{ID: "synth-test", Parts: 400, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		return dir, res
	}
	a, ra := write(7)
	b, rb := write(7)
	_, rc := write(8)
	if ra.FinalCommit != rb.FinalCommit || ra.FinalCommit == rc.FinalCommit {
		t.Fatalf("final commits %s %s (same seed) %s (other seed)", ra.FinalCommit, rb.FinalCommit, rc.FinalCommit)
	}
	files := 0
	err := filepath.WalkDir(ra.Dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(ra.Dir, path)
		x, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		y, err := os.ReadFile(filepath.Join(rb.Dir, rel))
		if err != nil {
			return err
		}
		if rel == store.TraceName || rel == store.PartIndexName {
			x, y = bytes.ReplaceAll(x, []byte(a), nil), bytes.ReplaceAll(y, []byte(b), nil)
		}
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between two runs of one seed", rel)
		}
		files++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 5 {
		t.Fatalf("only %d files compared", files)
	}
}

// TestShape checks what the trajectory holds: parts 1..N in turns, the
// tool mix, committed checkpoints with a growing tree, ground truth,
// sub-agent sessions, and call records that agree with the trace.
func TestShape(t *testing.T) {
	ctx := context.Background()
	const parts = 1500
	res, err := Write(ctx, t.TempDir(), Options{Parts: parts, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(res.Dir, store.TraceName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if probs := trace.Validate(f); len(probs) > 0 {
		t.Fatalf("invalid trace: %v", probs[0])
	}
	f.Seek(0, 0)
	tools := map[string]int{}
	types := map[string]int{}
	var committed, gt, envoi, subSessions, last int
	var sumIn int64
	changed := map[string]bool{}
	err = trace.Scan(f, trace.Visitor{OnPart: func(_ int, p *trace.Part) error {
		last = p.Part
		types[p.PartType]++
		if p.Tool != "" {
			tools[p.Tool]++
		}
		if p.RepoCheckpoint.Committed {
			committed++
			for _, c := range p.RepoCheckpoint.ChangedFiles {
				changed[c] = true
			}
		}
		gt += len(p.GroundTruth)
		envoi += len(p.EnvoiCalls)
		subSessions += len(p.Sessions)
		if p.Tokens != nil {
			sumIn += p.Tokens.Input
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if last != parts || res.Parts != parts || res.Turns < 2 {
		t.Fatalf("last part %d, result %+v", last, res)
	}
	for _, tool := range []string{"bash", "read", "edit", "write", "grep", "tests_run_tests", "task"} {
		if tools[tool] == 0 {
			t.Errorf("no %s tool part in %d parts: %v", tool, parts, tools)
		}
	}
	if types["text"] == 0 || types["reasoning"] == 0 {
		t.Errorf("part types %v", types)
	}
	if committed != res.Commits || committed < parts/10 || len(changed) < 20 || gt == 0 || envoi == 0 || subSessions == 0 {
		t.Errorf("committed %d (result %d), %d files changed, %d ground truths, %d envoi calls, %d sub-agent sessions",
			committed, res.Commits, len(changed), gt, envoi, subSessions)
	}
	totals, err := model.ReadRecord(filepath.Join(res.Dir, store.ModelCallsName), nil)
	if err != nil {
		t.Fatal(err)
	}
	if totals.Calls != res.Calls || totals.Tokens.Input != sumIn {
		t.Errorf("model_calls.jsonl: %d calls, %d input tokens; trace: %d calls, %d input tokens", totals.Calls, totals.Tokens.Input, res.Calls, sumIn)
	}
	tc, err := os.ReadFile(filepath.Join(res.Dir, store.ToolCallsName))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(tc), "\n"); n != envoi {
		t.Errorf("tool_calls.jsonl holds %d calls, the trace %d run_tests calls", n, envoi)
	}
	bundles, _ := os.ReadDir(filepath.Join(res.Dir, "history"))
	if len(bundles) != committed {
		t.Errorf("%d history bundles for %d commits", len(bundles), committed)
	}
}

func TestRefuses(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, o := range []Options{{Parts: 0}, {Parts: 3, ID: "../x"}} {
		if _, err := Write(ctx, dir, o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
	if _, err := Write(ctx, dir, Options{Parts: 3, ID: "twice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(ctx, dir, Options{Parts: 3, ID: "twice"}); err == nil || !strings.Contains(err.Error(), "already holds a trace") {
		t.Errorf("second write: %v", err)
	}
}
