package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/trajlab/traj/orchestrator/folder"
	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/location"
	"github.com/trajlab/traj/trace/store/s3test"
)

// TestS3StoreComplete records a real trajectory (OpenCode, bwrap, the
// scripted model, one run_tests call) into an S3 store (versitygw): after
// the run the bucket holds every object view and export read (trace,
// bundles, logs, run.json, model and tool call records, summary), each
// equal to the trajectory folder's copy; an export from S3 has the same
// rows per table as one from the folder, and the README's SQL example
// returns rows on it; `traj sync` on the complete
// store uploads nothing, twice.
func TestS3StoreComplete(t *testing.T) {
	traj := trajExe(t)
	requireSandbox(t, sandbox.ProviderBwrap)
	ctx := context.Background()
	srv := s3test.Start(t)
	srv.SetEnv(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	url, work, id := srv.URL("team"), t.TempDir(), "s3-complete"
	task, _ := filepath.Abs("../../orchestrator/testdata/tasks/e2e")
	script, _ := filepath.Abs("../../orchestrator/testdata/e2e.jsonl")
	out, code := trajRun(t, traj, "run", "--task", task, "--model", "scripted/demo", "--script", script, "--max-parts", "30",
		"--store", url, "--work-dir", work, "--trajectory-id", id, "--sandbox", "bwrap", "--quiet")
	// 3 is agent_error: the scripted model ran out of answers.
	if code != 0 && code != 3 {
		t.Fatalf("traj run: exit %d\n%s", code, out)
	}
	st, err := location.Open(ctx, url, location.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := folder.PathsOf(work, id).Dir
	objs, err := folder.Objects(dir, id)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, o := range objs {
		have[o.Key] = true
		remote, err := store.ObjectDigest(ctx, st, o.Key)
		if err != nil {
			t.Errorf("%s: %v", o.Key, err)
			continue
		}
		if local, err := store.SourceDigest(store.File(o.Path)); err != nil || local != remote {
			t.Errorf("%s: store %+v, folder %+v (%v)", o.Key, remote, local, err)
		}
	}
	for _, key := range []string{store.TraceKey(id), store.BundleKey(id), store.RunStateKey(id), store.ModelCallsKey(id),
		store.ToolCallsKey(id), store.SummaryKey(id)} {
		if _, err := st.Stat(ctx, key); err != nil {
			t.Errorf("the store lacks %s: %v", key, err)
		}
		if key != store.SummaryKey(id) && !have[key] {
			t.Errorf("the trajectory folder has no %s", key)
		}
	}
	var history int
	st.List(ctx, store.HistoryPrefix(id), func(store.FileInfo) error { history++; return nil })
	if history == 0 {
		t.Error("no history bundle in the store")
	}

	// The same rows from S3 as from the folder, in every table.
	remoteRef := strings.Replace(url, "/team?", "/team/trajectories/"+id+"?", 1)
	fromS3, fromDir := filepath.Join(t.TempDir(), "s3"), filepath.Join(t.TempDir(), "dir")
	for ref, outDir := range map[string]string{remoteRef: fromS3, dir: fromDir} {
		if out, code := trajRun(t, traj, "export", ref, "--format", "parquet", "--out", outDir); code != 0 {
			t.Fatalf("export %s: exit %d\n%s", ref, code, out)
		}
	}
	for _, table := range []string{"trajectories", "parts", "evaluations", "tests", "model_calls"} {
		a, b := parquetRows(t, filepath.Join(fromS3, table)), parquetRows(t, filepath.Join(fromDir, table))
		t.Logf("%s: %d rows from S3, %d from the folder", table, a, b)
		if table == "tests" {
			// Before any evaluate the tests rows come from the per-case
			// results the run cached in its store's evaluation cache: the
			// bucket has them, the trajectory folder alone does not (its
			// export warns and leaves the table empty).
			if a == 0 || (b != 0 && b != a) {
				t.Errorf("tests: %d rows from S3 (want the cached ground truth's), %d from the folder (want none or the same)", a, b)
			}
			continue
		}
		if a != b {
			t.Errorf("%s: %d rows from S3, %d from the folder", table, a, b)
		}
		if table != "tests" && a == 0 {
			t.Errorf("%s: no rows", table)
		}
	}
	// The README's SQL example has rows on a trajectory just recorded (no
	// traj replay evaluate yet): ground truth's, labelled by source.
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range readmeBlocks(string(readme)) {
		if b.lang == "sql" {
			checkSQL(t, b.text, fromDir)
		}
	}

	forkFromS3(t, traj, url, id)

	for range 2 {
		out, code := trajRun(t, traj, "sync", id, "--store", url, "--work-dir", work)
		if code != 0 || !strings.Contains(out, "nothing to do") {
			t.Fatalf("sync of a complete store: exit %d\n%s", code, out)
		}
	}
	// A changed record (same size, other bytes) is uploaded again, alone.
	rec := filepath.Join(dir, store.ModelCallsName)
	b, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-2] ^= 1
	if err := os.WriteFile(rec, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, code = trajRun(t, traj, "sync", id, "--store", url, "--work-dir", work)
	if code != 0 || !strings.Contains(out, ": 1 objects uploaded") {
		t.Fatalf("sync after a change: exit %d\n%s", code, out)
	}
}

// forkFromS3 forks trajectory id of the S3 store url as another machine
// would: a fresh work folder and download cache, only --store. The fork
// reruns the source's first response from the recorded calls in the
// bucket, then a new script answers; the fork lands in the bucket.
func forkFromS3(t *testing.T, traj, url, id string) {
	t.Helper()
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	script := filepath.Join(t.TempDir(), "fork.jsonl")
	if err := os.WriteFile(script, []byte(`{"text":"Forked on another machine."}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := trajRun(t, traj, "run", "--fork", id, "--at-part", "1", "--store", url, "--work-dir", t.TempDir(),
		"--script", script, "--trajectory-id", id+"-fork", "--sandbox", "bwrap", "--quiet")
	// 0: solved (the inherited build.sh passes); 3: the new script ran out.
	if (code != 0 && code != 3) || !strings.Contains(out, "inherited parts reproduced 4/4 parts") {
		t.Fatalf("fork from S3: exit %d, want the inherited parts (1..4: the first response) reproduced\n%s", code, out)
	}
	show, code := trajRun(t, traj, "trace", "show", id+"-fork", "--store", url)
	if code != 0 || !strings.Contains(show, "forked from "+id) {
		t.Fatalf("trace show of the fork on S3: exit %d\n%s", code, show)
	}
}

// trajRun runs the traj binary with this process's environment and
// returns its combined output and exit status.
func trajRun(t *testing.T, traj string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(traj, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("traj %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), 0
}

// parquetRows counts the rows of every Parquet file in dir.
func parquetRows(t *testing.T, dir string) int64 {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.parquet"))
	var n int64
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := f.Stat()
		pf, err := parquet.OpenFile(f, fi.Size())
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		n += pf.NumRows()
		f.Close()
	}
	return n
}
