package folder

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadRunState holds run.json's one reader to its one policy: a
// missing file is fs.ErrNotExist (a caller may take it as no run state),
// anything else that does not decode is an error naming the file (never
// a zero RunState taken for defaults), and what WriteRunState wrote
// reads back whole.
func TestReadRunState(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	want := RunState{TrajectoryID: "t1", Model: "scripted/demo", MaxParts: 7, Status: "running", Sandbox: []byte(`{"provider":"bwrap"}`)}
	if err := WriteRunState(dir, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadRunState(filepath.Join(dir, "run.json"))
	if err != nil || got.TrajectoryID != want.TrajectoryID || got.MaxParts != 7 || !strings.Contains(string(got.Sandbox), `"bwrap"`) {
		t.Fatalf("read back %+v, %v", got, err)
	}
	if _, err := ReadRunState(filepath.Join(dir, "absent.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing run.json: %v, want fs.ErrNotExist", err)
	}
	for name, body := range map[string]string{"truncated": `{"trajectory_id": "t1", `, "array": `[]`, "wrong type": `{"max_parts": "7"}`, "empty": ``} {
		p := filepath.Join(dir, name+".json")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		st, err := ReadRunState(p)
		if err == nil || errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), p) || st.TrajectoryID != "" {
			t.Errorf("%s run.json: %+v, %v; want an error naming %s", name, st, err, p)
		}
	}
}
