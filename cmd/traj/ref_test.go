package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trajlab/traj/replay/replaytest"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/location"
	"github.com/trajlab/traj/trace/store/s3test"
)

// TestEveryCommandTakesREF: every command that takes a trajectory takes
// REF positionally in each of its forms (an id in the store, the
// trajectory's folder, its agent_trace.json, an s3:// URL), and
// --trajectory-id stays an alias. The trajectory is in the original
// recorder's shape (repo_checkpoint null on parts that changed nothing),
// which replay verify must accept.
func TestEveryCommandTakesREF(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	ctx := context.Background()
	tj := replaytest.Build(t, "ref-grammar", replaytest.AttributionScript(), 3, false)
	if !strings.Contains(string(readFile(t, tj.TracePath)), `"repo_checkpoint": null`) {
		t.Fatal("fixture has no null repo_checkpoint")
	}
	st := storeWith(t, tj)
	folder := filepath.Join(st, filepath.FromSlash(store.TrajectoryPrefix(tj.ID)))

	srv := s3test.Start(t)
	srv.SetEnv(t)
	remote, err := location.Open(ctx, srv.URL("team"), location.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for key, src := range map[string]string{store.TraceKey(tj.ID): tj.TracePath, store.BundleKey(tj.ID): tj.BundlePath} {
		if err := remote.Save(ctx, key, store.File(src)); err != nil {
			t.Fatal(err)
		}
	}
	query := srv.URL("")[strings.Index(srv.URL(""), "?"):]
	url := "s3://" + srv.Bucket + "/team/trajectories/" + tj.ID + query

	refs := map[string][]string{
		"id":     {tj.ID, "--store", st},
		"folder": {folder},
		"trace":  {filepath.Join(folder, store.TraceName)},
		"s3 URL": {url},
		"alias":  {"--trajectory-id", tj.ID, "--store", st},
	}
	out := t.TempDir()
	for form, ref := range refs {
		t.Run(form, func(t *testing.T) {
			cmds := [][]string{
				{"replay", "verify"},
				{"replay", "checkout-part", "--part", "3", "--checkout-dest", filepath.Join(out, form, "repo")},
			}
			if form != "alias" {
				cmds = append(cmds, []string{"trace", "show"}, []string{"trace", "validate"})
			}
			if form == "s3 URL" {
				cmds = append(cmds, []string{"replay", "evaluate", "--tests", "basics/smoke", "--output", filepath.Join(out, "eval.json")})
			}
			for _, c := range cmds {
				args := append(append(c, ref...), "--log-level", "error")
				code, stdout, stderr := runTraj(t, args...)
				if code != 0 {
					t.Fatalf("%s: exit %d\n%s%s", strings.Join(args, " "), code, stdout, stderr)
				}
				if c[1] == "verify" && !strings.Contains(stdout, "ok (10 parts") {
					t.Fatalf("%s: %s", strings.Join(args, " "), stdout)
				}
			}
			if got := replaytest.Git(t, filepath.Join(out, form, "repo"), "rev-parse", "HEAD"); got != tj.Commits[2] {
				t.Fatalf("checkout of part 3 at %s, want %s", got, tj.Commits[2])
			}
		})
	}
	if _, err := os.Stat(filepath.Join(out, "eval.json")); err != nil {
		t.Fatal(err)
	}
}

// TestRecoveryTakesFolderREF: sync and finalize take the trajectory's
// folder or its agent_trace.json as well as its id.
func TestRecoveryTakesFolderREF(t *testing.T) {
	k := newKilledRun(t, "killed-ref")
	if code, out, errs := runTraj(t, "sync", k.Dir, "--store", k.Store); code != 0 || !strings.Contains(out, "trajectory "+k.ID) {
		t.Fatalf("sync FOLDER: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := runTraj(t, "trace", "finalize", filepath.Join(k.Dir, store.TraceName), "--store", k.Store)
	if code != 0 || !strings.Contains(out, "interrupted after 10 parts") {
		t.Fatalf("finalize TRACE: exit %d\n%s%s", code, out, errs)
	}
	k.checkFinalized(t, k.readTrace(t).SessionEnd.FinalGitCommit)

	// run --resume takes the folder too (here at its budget, so no agent
	// is started).
	r := newKilledRun(t, "killed-ref-resume")
	code, out, errs = runTraj(t, "run", "--resume", r.Dir, "--store", r.Store, "--max-parts", "10", "--agent-bin", "/nonexistent/opencode")
	if code != 0 || !strings.Contains(out, "part_limit after 10 parts") {
		t.Fatalf("run --resume FOLDER: exit %d\n%s%s", code, out, errs)
	}
}
