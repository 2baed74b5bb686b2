package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/location"
	"github.com/trajlab/traj/trace/store/s3test"
)

// TestRerunRunningOnS3 is the regression of rerunning a trajectory that is
// still running in a remote store: such a store holds its trace as
// chunks and its model-call record only as the call chunks of its turn
// ends (model_calls.jsonl is whole only once the run ends), and `traj
// replay rerun` failed on the missing object. A real OpenCode trajectory
// (scripted model, bwrap) is recorded into a real S3 server (versitygw);
// the objects a finished run adds at its end are removed, leaving what a
// running one has uploaded; the rerun must still play every call.
func TestRerunRunningOnS3(t *testing.T) {
	if testing.Short() {
		t.Skip("records a real trajectory")
	}
	if err := sandbox.BwrapWorks(t.Context()); err != nil {
		t.Skipf("bwrap unusable: %v", err)
	}
	exe := trajExe(t)
	srv := s3test.Start(t)
	srv.SetEnv(t)
	url := srv.URL("team")
	// Two turns: the first leaves a build.sh that builds nothing, so the
	// run goes on and the first turn end uploads its call chunks.
	script := writeFile(t, filepath.Join(t.TempDir(), "two-turns.jsonl"), []byte(strings.Join([]string{
		`{"text": "Writing build.sh.", "tools": [{"name": "write", "args": {"filePath": "build.sh", "content": "#!/bin/sh\nexit 1\n"}}]}`,
		`{"text": "Done."}`,
		`{"text": "Fixing build.sh.", "tools": [{"name": "write", "args": {"filePath": "build.sh", "content": "#!/bin/sh\nset -e\nprintf '#!/bin/sh\\nexec gcc \"$@\"\\n' > cc\nchmod +x cc\n"}}]}`,
		`{"text": "Fixed."}`,
	}, "\n")+"\n"))
	run := exec.Command(exe, "run", "--task", "orchestrator/testdata/tasks/e2e", "--agent", "opencode", "--model", "scripted/demo",
		"--script", script, "--max-parts", "100", "--timeout", "3m", "--trajectory-id", "live",
		"--store", url, "--sandbox", sandbox.ProviderBwrap, "--work-dir", filepath.Join(t.TempDir(), "work"), "--quiet")
	run.Dir = filepath.Join("..", "..")
	if out, err := run.CombinedOutput(); err != nil {
		if strings.Contains(string(out), "make setup") {
			t.Skipf("opencode needed (make setup):\n%s", out)
		}
		t.Fatalf("traj run: %v\n%s", err, out)
	}
	ctx := context.Background()
	st, err := location.Open(ctx, url, location.Options{})
	if err != nil {
		t.Fatal(err)
	}
	chunks := 0
	if err := st.List(ctx, store.TrajectoryPrefix("live")+store.CallsDir+store.ModelCallsName+"/", func(store.FileInfo) error {
		chunks++
		return nil
	}); err != nil || chunks == 0 {
		t.Fatalf("the run uploaded %d chunks of its model calls (%v): nothing to attack", chunks, err)
	}
	for _, key := range []string{store.TraceKey("live"), store.ModelCallsKey("live"), store.ToolCallsKey("live"), store.BundleKey("live")} {
		if err := st.Remove(ctx, key); err != nil {
			t.Fatal(err)
		}
	}
	// The store holds the calls of the first turn (its 4 parts; the trace
	// chunks hold all 8): those are what a rerun can play.
	rerun := exec.Command(exe, "replay", "rerun", "live", "--store", url, "--until-part", "4", "--trajectory-id", "live-rerun",
		"--work-dir", filepath.Join(t.TempDir(), "rerun"), "--quiet")
	rerun.Dir = run.Dir
	out, err := rerun.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "reproduced 4/4 parts") {
		t.Fatalf("rerun of a running trajectory: %v\n%s", err, out)
	}
}
