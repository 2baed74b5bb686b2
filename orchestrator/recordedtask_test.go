package orchestrator

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/trajlab/traj/orchestrator/folder"
	"github.com/trajlab/traj/trace/store"
)

// TestRecordedTask: an evaluate without --task opens a Harbor
// trajectory's environment on the folder its run.json names, only when
// that folder is here; a built-in task, a relative or vanished folder,
// no run.json or an undecodable one name none (the evaluate then asks
// for --task).
func TestRecordedTask(t *testing.T) {
	here := t.TempDir()
	for _, tc := range []struct {
		name, source, raw, want string
	}{
		{name: "folder here", source: here, want: here},
		{name: "built-in", source: "builtin:c-compiler"},
		{name: "relative", source: "tasks/x"},
		{name: "gone", source: filepath.Join(here, "gone")},
		{name: "no run.json"},
		{name: "undecodable", raw: "{"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			switch {
			case tc.raw != "":
				if err := os.WriteFile(filepath.Join(dir, store.RunStateName), []byte(tc.raw), 0o644); err != nil {
					t.Fatal(err)
				}
			case tc.source != "":
				if err := folder.WriteRunState(dir, folder.RunState{TrajectoryID: "t", TaskSource: tc.source}); err != nil {
					t.Fatal(err)
				}
			}
			if got := RecordedTask(dir); got != tc.want {
				t.Errorf("RecordedTask = %q, want %q", got, tc.want)
			}
		})
	}
}
