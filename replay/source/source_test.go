package source_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/replaytest"
	"github.com/trajlab/traj/replay/source"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/location"
	"github.com/trajlab/traj/trace/store/s3test"
)

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestOpen(t *testing.T) {
	ctx := context.Background()
	tj := replaytest.BuildSpec(t, replaytest.Spec{ID: "traj-src", Changes: replaytest.AttributionScript(), TurnSize: 4, TrajFields: true, History: true})
	st := t.TempDir()
	copyFile(t, tj.TracePath, filepath.Join(st, filepath.FromSlash(store.TraceKey(tj.ID))))
	copyFile(t, tj.BundlePath, filepath.Join(st, filepath.FromSlash(store.BundleKey(tj.ID))))
	// A second trajectory that never finished: chunks aside, only its
	// trace and history bundles are there.
	copyFile(t, tj.TracePath, filepath.Join(st, filepath.FromSlash(store.TraceKey("traj-running"))))
	for _, p := range tj.HistoryBundles {
		copyFile(t, p, filepath.Join(st, filepath.FromSlash(store.HistoryPrefix("traj-running")), filepath.Base(p)))
	}

	tests := []struct {
		name      string
		req       source.Request
		protected string
	}{
		{"id in store", source.Request{Ref: tj.ID, StoreURL: st}, filepath.Join(st, "trajectories", tj.ID)},
		{"id in store via file URL", source.Request{Ref: tj.ID, StoreURL: "file://" + st}, filepath.Join(st, "trajectories", tj.ID)},
		{"unfinished run: history chain", source.Request{Ref: "traj-running", StoreURL: st}, filepath.Join(st, "trajectories", "traj-running")},
		{"trajectory folder", source.Request{Ref: tj.Dir, StoreURL: st}, tj.Dir},
		{"trace path", source.Request{Ref: tj.TracePath, StoreURL: st}, tj.Dir},
		{"loose files", source.Request{TracePath: tj.TracePath, BundlePath: tj.BundlePath, StoreURL: st}, tj.Dir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := source.Open(ctx, tt.req)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			if tr.Trace.TrajectoryID != tj.ID || len(tr.Protected) == 0 || tr.Protected[0] != tt.protected {
				t.Fatalf("id %s protected %v, want %s", tr.Trace.TrajectoryID, tr.Protected, tt.protected)
			}
			probs, err := replay.Verify(ctx, tr.Trace, tr.History)
			if err != nil || len(probs) != 0 {
				t.Fatalf("verify: %v %v", probs, err)
			}
		})
	}

	// A trajectory folder whose run has not finished uses its history/.
	running := t.TempDir()
	copyFile(t, tj.TracePath, filepath.Join(running, "agent_trace.json"))
	for _, p := range tj.HistoryBundles {
		copyFile(t, p, filepath.Join(running, "history", filepath.Base(p)))
	}
	tr, err := source.Open(ctx, source.Request{Ref: running, StoreURL: st})
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := tr.History.HasCommit(ctx, tj.Commits[9]); !ok {
		t.Fatal("the history chain lacks the last commit")
	}
	tr.Close()
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	st := t.TempDir()
	tj := replaytest.Build(t, "traj-e", replaytest.AttributionScript()[:3], 3, false)
	noBundle := t.TempDir()
	copyFile(t, tj.TracePath, filepath.Join(noBundle, "agent_trace.json"))
	tests := []struct {
		name  string
		req   source.Request
		usage bool
		want  string
	}{
		{"nothing named", source.Request{StoreURL: st}, true, "--trajectory-id"},
		{"unknown id", source.Request{Ref: "nope", StoreURL: st}, true, "not found in store"},
		{"traversal in id", source.Request{Ref: "../../etc", StoreURL: st}, true, "no such file or folder"},
		{"folder that is no trajectory", source.Request{Ref: st, StoreURL: st}, true, "not a trajectory folder"},
		{"trace without bundle flag", source.Request{TracePath: tj.TracePath, StoreURL: st}, true, "--trace and --bundle"},
		{"folder without bundles", source.Request{Ref: noBundle, StoreURL: st}, false, "no repo.bundle"},
		{"URL that names no trajectory", source.Request{Ref: "s3://bucket/some/thing", StoreURL: st}, true, "want s3://bucket/prefix/trajectories/<id>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := source.Open(ctx, tt.req)
			if err == nil || !strings.Contains(err.Error(), tt.want) || errors.Is(err, replay.ErrUsage) != tt.usage {
				t.Fatalf("err = %v, want one mentioning %q (usage %v)", err, tt.want, tt.usage)
			}
		})
	}
}

// A trajectory in a real S3 server (versitygw on 127.0.0.1), named by its
// s3:// URL: the trace is read and the bundle downloaded and removed again.
func TestOpenFromS3(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	ctx := context.Background()
	tj := replaytest.Build(t, "traj-s3", replaytest.AttributionScript(), 4, true)
	storeURL := srv.URL("team")
	st, err := location.Open(ctx, storeURL, location.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for key, path := range map[string]string{store.TraceKey(tj.ID): tj.TracePath, store.BundleKey(tj.ID): tj.BundlePath} {
		if err := st.Save(ctx, key, store.File(path)); err != nil {
			t.Fatal(err)
		}
	}
	u, q, _ := strings.Cut(storeURL, "?")
	cache := t.TempDir()
	tr, err := source.Open(ctx, source.Request{Ref: u + "/trajectories/" + tj.ID + "?" + q, CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	cst, err := tr.CacheStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if tr.ID != tj.ID || cst == nil || len(tr.Protected) != 0 {
		t.Fatalf("opened %s, protected %v", tr.ID, tr.Protected)
	}
	dest := filepath.Join(t.TempDir(), "co")
	if _, err := replay.CheckoutPart(ctx, tr.Trace, tr.History, replay.CheckoutRequest{Part: 8, Dest: dest}); err != nil {
		t.Fatal(err)
	}
	if head := replaytest.Git(t, dest, "rev-parse", "HEAD"); head != tj.Commits[7] {
		t.Fatalf("HEAD %s", head)
	}
	// The evaluation report and the cache go to the S3 store.
	if err := tr.SaveEvaluation(ctx, []byte(`{"trajectory_id":"traj-s3"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Stat(ctx, store.EvaluationKey(tj.ID)); err != nil {
		t.Fatalf("evaluation not kept in the S3 store: %v", err)
	}
	c := source.Cache(cst)
	if err := c.Put(ctx, "k", replay.CacheEntry{Tree: "t"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Stat(ctx, store.EvalCacheKey("k")); err != nil {
		t.Fatalf("cache entry not in the S3 store: %v", err)
	}
}
