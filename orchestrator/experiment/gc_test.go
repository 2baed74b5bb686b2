package experiment

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trajlab/traj/orchestrator/folder"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/tracetest"
)

// gcFixture lays out one trajectory as traj run leaves it: run.json, a
// trace, maybe repo.bundle, and a sandbox with a file in it.
func gcFixture(t *testing.T, work, id, status, end string, bundle bool, sandboxDir string) string {
	t.Helper()
	dir := filepath.Join(work, "trajectories", id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tracetest.WriteDir(t, dir, tracetest.Spec{TrajectoryID: id, End: end})
	if bundle {
		if err := os.WriteFile(filepath.Join(dir, store.BundleName), []byte("bundle"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if sandboxDir == "" {
		sandboxDir = filepath.Join(work, "sandboxes", id)
	}
	rs := folder.RunState{TrajectoryID: id, Status: status, SandboxDir: sandboxDir, PID: 0}
	b, _ := json.Marshal(rs)
	if err := os.WriteFile(filepath.Join(dir, store.RunStateName), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(sandboxDir, "workspace"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sandboxDir, "workspace", "main.c"), []byte("int main(){}"), 0o644); err != nil {
		t.Fatal(err)
	}
	return sandboxDir
}

func TestGC(t *testing.T) {
	work := t.TempDir()
	ctx := context.Background()
	w, err := Open(ctx, &Spec{Store: work}, "")
	if err != nil {
		t.Fatal(err)
	}
	done := gcFixture(t, work, "done", "finished", trace.EndPartLimit, true, "")
	died := gcFixture(t, work, "died", "running", "", true, "")
	noBundle := gcFixture(t, work, "nobundle", "finished", trace.EndSolved, false, "")
	// A sandbox with no trajectory folder at all (died before run.json).
	orphan := filepath.Join(work, "sandboxes", "orphan")
	if err := os.MkdirAll(orphan, 0o755); err != nil {
		t.Fatal(err)
	}

	res, err := GC(ctx, w, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Removed {
			t.Errorf("dry run removed %s", r.Dir)
		}
	}
	for _, d := range []string{done, died, noBundle, orphan} {
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("dry run: %s gone", d)
		}
	}
	res, err = GC(ctx, w, false)
	if err != nil {
		t.Fatal(err)
	}
	kept := map[string]string{}
	for _, r := range res {
		if !r.Removed {
			kept[r.ID] = r.Kept
		}
	}
	if _, err := os.Stat(done); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("finalized sandbox kept: %v (%s)", err, kept["done"])
	}
	for id, want := range map[string]string{"died": "traj run --resume died", "nobundle": "repo.bundle", "orphan": "no run.json"} {
		if !strings.Contains(kept[id], want) {
			t.Errorf("%s: kept because %q, want it to say %q", id, kept[id], want)
		}
	}
	for _, d := range []string{died, noBundle, orphan} {
		if _, err := os.Stat(filepath.Join(d)); err != nil {
			t.Errorf("%s removed although not finalized", d)
		}
	}
}

func TestRemoveSandboxRefusesForeignFolder(t *testing.T) {
	work := t.TempDir()
	other := filepath.Join(t.TempDir(), "precious")
	gcFixture(t, work, "t1", "finished", trace.EndPartLimit, true, other)
	w, err := Open(context.Background(), &Spec{Store: work}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RemoveSandbox(context.Background(), w, "t1"); err == nil || !strings.Contains(err.Error(), "not a folder of this trajectory") {
		t.Fatalf("got %v", err)
	}
	if _, err := os.Stat(filepath.Join(other, "workspace", "main.c")); err != nil {
		t.Fatal("a folder run.json pointed at was removed")
	}
}
