package experiment

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	xp "github.com/trajlab/traj/orchestrator/experiment"
	"github.com/trajlab/traj/replay"
)

const spec = `name: sweep
matrix:
  models: [scripted/demo, openai/gpt-5]
  repeats: 2
budget:
  max_parts: 10
relaunch:
  max_attempts: 3
kubernetes:
  image: registry.example/traj:v2
`

// writeSpec writes the spec with its store set to a new folder.
func writeSpec(t *testing.T) (path, storeDir string) {
	t.Helper()
	dir := t.TempDir()
	storeDir = filepath.Join(dir, "runs")
	if err := os.MkdirAll(storeDir, 0o755); err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(path, []byte(spec+"store: "+storeDir+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, storeDir
}

// TestFind: an experiment is found by its spec or, once recorded, by its
// name in the store, the same slots and attempt ids either way; what names
// none is a usage error.
func TestFind(t *testing.T) {
	ctx := context.Background()
	path, storeDir := writeSpec(t)
	bySpec, err := Find(ctx, path, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if bySpec.Name != "sweep" || bySpec.StoreURL != storeDir || len(bySpec.Cells) != 4 || len(bySpec.IDs()) != 12 {
		t.Fatalf("by spec: %s in %s, %d cells, %d ids", bySpec.Name, bySpec.StoreURL, len(bySpec.Cells), len(bySpec.IDs()))
	}
	if _, err := Find(ctx, "sweep", storeDir, nil); !errors.Is(err, replay.ErrUsage) {
		t.Fatalf("by name before any record: %v, want a usage error", err)
	}
	s, err := xp.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := xp.Open(ctx, s, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := xp.SaveRecord(ctx, w, s); err != nil {
		t.Fatal(err)
	}
	byName, err := Find(ctx, "sweep", storeDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(byName.IDs(), " ") != strings.Join(bySpec.IDs(), " ") {
		t.Errorf("ids by name %v, by spec %v", byName.IDs(), bySpec.IDs())
	}
	rep := byName.Report()
	if rep.Name != "sweep" || len(rep.Slots) != 4 || len(rep.Slots[0].Attempts) != 3 || rep.Slots[0].Attempts[0] != bySpec.Cells[0].AttemptID(1) {
		t.Errorf("report slots %+v", rep.Slots)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("name: x\nmatrix: [\n"), 0o644)
	for _, tc := range []struct{ ref, store string }{
		{bad, ""}, {"sweep", filepath.Join(storeDir, "nope")}, {"other", storeDir},
	} {
		if _, err := Find(ctx, tc.ref, tc.store, nil); !errors.Is(err, replay.ErrUsage) {
			t.Errorf("Find(%s, %s): %v, want a usage error", tc.ref, tc.store, err)
		}
	}
}

// TestBadSpecIsUsage: every command refuses a spec that does not parse as
// a usage error, before it starts anything.
func TestBadSpecIsUsage(t *testing.T) {
	ctx := context.Background()
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("name: x\nbudget: {max_parts: -1}\n"), 0o644)
	r := Request{Spec: bad, TrajBin: "/nonexistent/traj"}
	for name, err := range map[string]error{
		"run":      Run(ctx, RunRequest{Request: r}),
		"status":   Status(ctx, r),
		"check":    Check(ctx, r),
		"task":     Task(ctx, TaskRequest{Request: r}),
		"manifest": Manifest(ctx, ManifestRequest{Request: r}),
	} {
		if !errors.Is(err, replay.ErrUsage) {
			t.Errorf("%s: %v, want a usage error", name, err)
		}
	}
}

// TestManifest: the manifest written to a file is the one written to
// stdout, and the file's note says how to apply it; a folder store (the
// spec's, without the override) is refused as a usage error: pods cannot
// reach it.
func TestManifest(t *testing.T) {
	ctx := context.Background()
	path, _ := writeSpec(t)
	var stdout, note bytes.Buffer
	if err := Manifest(ctx, ManifestRequest{Request: Request{Spec: path, Store: "s3://bucket/x", Stdout: &stdout}}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "m.yaml")
	if err := Manifest(ctx, ManifestRequest{Request: Request{Spec: path, Store: "s3://bucket/x", Stdout: &note}, Out: out}); err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(file, stdout.Bytes()) || !bytes.Contains(file, []byte("kind: Job")) {
		t.Errorf("manifest file differs from stdout's or lacks the Job:\n%s", file)
	}
	err = Manifest(ctx, ManifestRequest{Request: Request{Spec: path, Stdout: &stdout}, Out: filepath.Join(t.TempDir(), "n.yaml")})
	if !errors.Is(err, replay.ErrUsage) || !strings.Contains(err.Error(), "is a folder") {
		t.Errorf("folder store: %v, want a usage error", err)
	}
	if !strings.HasPrefix(note.String(), "wrote "+out+": Indexed Job ") || !strings.Contains(note.String(), "with 4 completions; kubectl apply -f "+out) {
		t.Errorf("note %q", note.String())
	}
}

// TestGCListing: gc lists each sandbox kept with its reason and the
// totals; a dry run frees nothing.
func TestGCListing(t *testing.T) {
	work := t.TempDir()
	orphan := filepath.Join(work, "sandboxes", "orphan")
	if err := os.MkdirAll(orphan, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(orphan, "f"), make([]byte, 3000), 0o644)
	var out bytes.Buffer
	if err := GC(context.Background(), GCRequest{Store: work, DryRun: true, Stdout: &out}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "kept orphan: ") || !strings.Contains(out.String(), "no run.json") || !strings.HasSuffix(out.String(), "\n1 sandboxes, would free 0 B, 1 kept\n") {
		t.Errorf("gc --dry-run:\n%s", out.String())
	}
	if _, err := os.Stat(orphan); err != nil {
		t.Errorf("dry run removed the orphan: %v", err)
	}
	out.Reset()
	if err := GC(context.Background(), GCRequest{Store: filepath.Join(t.TempDir(), "empty"), Stdout: &out}); err != nil || out.String() != "0 sandboxes, freed 0 B, 0 kept\n" {
		t.Errorf("gc of an empty folder: %v %q", err, out.String())
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", 5 << 20: "5.0 MiB", 3 << 30: "3.0 GiB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
