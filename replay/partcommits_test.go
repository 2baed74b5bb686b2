package replay_test

import (
	"os"
	"slices"
	"testing"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/tracetest"
)

// samePartCommits fails unless the part index's answer (PartCommitsAt, what
// evaluate uses) equals the full read of the trace (PartCommits).
func samePartCommits(t *testing.T, path string, wantParts int) {
	t.Helper()
	parts, commits, err := replay.PartCommitsAt(path)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := replay.ReadTraceFile(path)
	if err != nil {
		t.Fatal(err)
	}
	wparts, wcommits, err := replay.PartCommits(tr)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != wantParts || !slices.Equal(parts, wparts) {
		t.Fatalf("index gives parts %v, the trace %v (want %d parts)", parts, wparts, wantParts)
	}
	for _, p := range parts {
		if commits[p] != wcommits[p] {
			t.Fatalf("part %d: index gives commit %q, the trace %q", p, commits[p], wcommits[p])
		}
	}
}

// TestPartCommitsAtEqualsFullRead: evaluate's parts and commits, read
// through the part index, equal a full read of the trace whatever state
// the index is in, also while the trace is still being written.
func TestPartCommitsAtEqualsFullRead(t *testing.T) {
	spec := tracetest.Spec{Turns: []int{4, 3, 5}, End: "part_limit", PartSize: 300,
		Commit: func(n int) string { return tracetest.Commit((n + 2) / 3) }} // three parts a commit
	for name, damage := range map[string]func(t *testing.T, path string){
		"as written":    func(*testing.T, string) {},
		"index missing": func(t *testing.T, p string) { must(t, os.Remove(trace.PartIndexPath(p))) },
		"index of another trace": func(t *testing.T, p string) {
			other := tracetest.WriteDir(t, t.TempDir(), tracetest.Spec{TrajectoryID: "traj-other", Turns: spec.Turns, End: spec.End, PartSize: 300})
			data, err := os.ReadFile(trace.PartIndexPath(other))
			must(t, err)
			must(t, os.WriteFile(trace.PartIndexPath(p), data, 0o644))
		},
		"index behind the trace": func(t *testing.T, p string) {
			ix := trace.PartIndexPath(p)
			fi, err := os.Stat(ix)
			must(t, err)
			must(t, os.Truncate(ix, fi.Size()-5*64))
		},
	} {
		t.Run(name, func(t *testing.T) {
			path := tracetest.WriteDir(t, t.TempDir(), spec)
			damage(t, path)
			samePartCommits(t, path, 12)
		})
	}
	t.Run("still being written", func(t *testing.T) {
		path := t.TempDir() + "/agent_trace.json"
		w, err := trace.Create(path, tracetest.Header("traj-live"), trace.WriterOptions{})
		must(t, err)
		defer w.Close()
		must(t, w.BeginTurn(trace.TurnStart{Timestamp: tracetest.Time(0), Prompt: "go", SessionID: "ses_root"}))
		for n := 1; n <= 7; n++ {
			must(t, w.AppendPart(tracetest.Part(n, tracetest.Commit((n+1)/2))))
			samePartCommits(t, path, n)
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
