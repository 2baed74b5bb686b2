package experiment

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
)

// TestRemoveSandboxRefusesBrokenRunState: a finalized trajectory whose
// run.json no longer decodes (cut by a full disk, edited) keeps its
// sandbox, and the refusal names the file: run.json says which folder
// is the sandbox and whether the run finished, so it is never read as
// absent or as defaults (folder.ReadRunState's one policy).
func TestRemoveSandboxRefusesBrokenRunState(t *testing.T) {
	work := t.TempDir()
	sb := gcFixture(t, work, "t1", "finished", trace.EndPartLimit, true, "")
	rs := filepath.Join(work, "trajectories", "t1", store.RunStateName)
	if err := os.WriteFile(rs, []byte(`{"trajectory_id": "t1", "status": "fin`), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := Open(context.Background(), &Spec{Store: work}, "")
	if err != nil {
		t.Fatal(err)
	}
	removed, err := RemoveSandbox(context.Background(), w, "t1")
	if removed || err == nil || !strings.Contains(err.Error(), rs) {
		t.Fatalf("removed %v, %v; want a refusal naming %s", removed, err, rs)
	}
	if _, err := os.Stat(filepath.Join(sb, "workspace", "main.c")); err != nil {
		t.Fatal("the sandbox of a trajectory with a broken run.json was removed")
	}
}
