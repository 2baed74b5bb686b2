package inspect_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/inspect"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/tracetest"
)

// store writes a folder store holding trajectory "t1" (finished, 5 parts
// in 2 turns) and returns it.
func store(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "trajectories", "t1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tracetest.WriteDir(t, dir, tracetest.Spec{TrajectoryID: "t1", Turns: []int{2, 3}, End: trace.EndSolved})
	return root
}

// TestShowAndValidate: an id in a store, its folder and its trace file
// name the same trace; Show's text and JSON and Validate's line say what
// it is.
func TestShowAndValidate(t *testing.T) {
	root := store(t)
	dir := filepath.Join(root, "trajectories", "t1")
	ctx := context.Background()
	for _, ref := range []string{"t1", dir, filepath.Join(dir, "agent_trace.json")} {
		var out bytes.Buffer
		r := inspect.Request{Ref: ref, Store: root, Stdout: &out}
		if err := inspect.Validate(ctx, r, false); err != nil {
			t.Fatalf("validate %s: %v", ref, err)
		}
		if !strings.HasPrefix(out.String(), "ok: ") || !strings.Contains(out.String(), "trajectory t1, schema ") ||
			!strings.HasSuffix(out.String(), "5 parts in 2 turns, solved\n") {
			t.Errorf("validate %s: %q", ref, out.String())
		}
		out.Reset()
		if err := inspect.Show(ctx, r, true); err != nil {
			t.Fatalf("show %s: %v", ref, err)
		}
		var s trace.Summary
		if err := json.Unmarshal(out.Bytes(), &s); err != nil || s.TrajectoryID != "t1" || s.Parts != 5 || s.EndReason != trace.EndSolved {
			t.Errorf("show --json %s: %v %+v", ref, err, s)
		}
		out.Reset()
		if err := inspect.Show(ctx, r, false); err != nil || !strings.Contains(out.String(), "t1") {
			t.Errorf("show %s: %v\n%s", ref, err, out.String())
		}
	}
}

// TestValidateInvalid: a trace that breaks the contract is an error
// naming its first problem (not a usage error: the command exits 1), and
// with all every problem is listed.
func TestValidateInvalid(t *testing.T) {
	tr := tracetest.Build(tracetest.Spec{TrajectoryID: "t1", Turns: []int{3}, End: trace.EndSolved})
	tr.Turns[0].Parts[2].Part = 7
	tr.Turns[0].Parts[1].Part = 9
	data, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "agent_trace.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = inspect.Validate(context.Background(), inspect.Request{Ref: path, Stdout: &out}, false)
	if err == nil || errors.Is(err, replay.ErrUsage) || !strings.HasPrefix(err.Error(), "invalid trace ") ||
		!strings.Contains(err.Error(), "more; --all lists them") {
		t.Fatalf("err %q, want the first of several problems", err)
	}
	if out.Len() != 0 {
		t.Errorf("stdout %q", out.String())
	}
	err = inspect.Validate(context.Background(), inspect.Request{Ref: path, Stdout: &out}, true)
	if err == nil || strings.Contains(err.Error(), "more;") || strings.Count(out.String(), "\n") < 2 {
		t.Errorf("--all: err %v, listed:\n%s", err, out.String())
	}
}

// TestOpenRefuses: references that name no trace are usage errors.
func TestOpenRefuses(t *testing.T) {
	root := store(t)
	for _, ref := range []string{"nope", "../t1", filepath.Join(root, "missing.json")} {
		_, _, err := inspect.Open(context.Background(), inspect.Request{Ref: ref, Store: root})
		if !errors.Is(err, replay.ErrUsage) {
			t.Errorf("%s: err %v, want a usage error", ref, err)
		}
	}
}
