package ref_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/chunk"
	"github.com/trajlab/traj/trace/store/local"
	"github.com/trajlab/traj/trace/store/location"
	"github.com/trajlab/traj/trace/store/ref"
	"github.com/trajlab/traj/trace/store/s3test"
	"github.com/trajlab/traj/trace/tracetest"
)

type saveNow struct{ st store.Store }

func (s saveNow) Enqueue(key string, src store.Source) error {
	return s.st.Save(context.Background(), key, src)
}

// record writes a finished 2-turn trace for id with the real writer,
// shipping its chunks to st, and returns the document.
func record(t *testing.T, st store.Store, id string) []byte {
	t.Helper()
	codec, err := chunk.NewCodec()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), store.TraceName)
	w, err := trace.Create(path, tracetest.Header(id), trace.WriterOptions{OnChunk: codec.Forward(saveNow{st}, id, func(err error) { t.Error(err) })})
	if err != nil {
		t.Fatal(err)
	}
	for turn, n := 1, 0; turn <= 2; turn++ {
		w.BeginTurn(trace.TurnStart{Timestamp: tracetest.Time(n), Prompt: "go"})
		for range 3 {
			n++
			if err := w.AppendPart(tracetest.Part(n, tracetest.Commit(n))); err != nil {
				t.Fatal(err)
			}
		}
		w.EndTurn(trace.TurnEnd{EndedAt: tracetest.Time(n)})
	}
	if err := w.Finish(trace.SessionEnd{Reason: trace.EndPartLimit}, nil); err != nil {
		t.Fatal(err)
	}
	w.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func save(t *testing.T, st store.Store, key string, b []byte) {
	t.Helper()
	if err := st.Save(context.Background(), key, store.Bytes(b)); err != nil {
		t.Fatal(err)
	}
}

func TestLocalStoreID(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	st, _ := local.Open(root)
	doc := record(t, st, "t1")
	save(t, st, store.TraceKey("t1"), doc)
	save(t, st, store.BundleKey("t1"), []byte("bundle"))
	tr, err := ref.Resolve(ctx, "t1", root, ref.Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	p, rebuilt, err := tr.TracePath(ctx)
	if err != nil || rebuilt {
		t.Fatalf("trace path: %v (rebuilt %v)", err, rebuilt)
	}
	if want := filepath.Join(root, "trajectories", "t1", store.TraceName); p != want {
		t.Fatalf("local trace not used in place: %s, want %s", p, want)
	}
	bs, err := tr.BundlePaths(ctx)
	if err != nil || len(bs) != 1 || filepath.Base(bs[0]) != store.BundleName {
		t.Fatalf("bundles %v, %v", bs, err)
	}
}

func TestRebuildFromChunksAndHistory(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	st, _ := local.Open(root)
	doc := record(t, st, "dead") // the run died: no agent_trace.json, no repo.bundle
	for _, part := range []int{5, 1, 3} {
		save(t, st, store.HistoryBundleKey("dead", part), []byte{byte(part)})
	}
	tr, err := ref.Resolve(ctx, "dead", root, ref.Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	p, rebuilt, err := tr.TracePath(ctx)
	if err != nil || !rebuilt {
		t.Fatalf("trace path: %v (rebuilt %v)", err, rebuilt)
	}
	if !bytes.Equal(readFile(t, p), doc) {
		t.Fatal("trace rebuilt from chunks differs from the recorded one")
	}
	if strings.HasPrefix(p, root) {
		t.Fatalf("rebuilt trace written into the store: %s", p)
	}
	bs, err := tr.BundlePaths(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range bs {
		names = append(names, filepath.Base(b))
	}
	if strings.Join(names, " ") != "00000001.bundle 00000003.bundle 00000005.bundle" {
		t.Fatalf("history bundles %v, want part order", names)
	}
}

func TestFolderAndFile(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "my-run")
	os.MkdirAll(dir, 0o755)
	tracePath := tracetest.WriteDir(t, dir, tracetest.Spec{End: trace.EndSolved})
	for _, r := range []string{dir, tracePath, "file://" + tracePath} {
		tr, err := ref.Resolve(ctx, r, "", ref.Options{CacheDir: t.TempDir()})
		if err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		p, _, err := tr.TracePath(ctx)
		if err != nil || p != tracePath {
			t.Fatalf("%s: trace path %s, %v; want %s", r, p, err, tracePath)
		}
		rc, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := trace.Read(rc)
		rc.Close()
		if err != nil || got.SessionEnd == nil || got.SessionEnd.Reason != trace.EndSolved {
			t.Fatalf("%s: read %+v, %v", r, got, err)
		}
	}
}

func TestErrors(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	st, _ := local.Open(root)
	save(t, st, store.TraceKey("present"), []byte("{}"))
	empty := t.TempDir()
	cases := []struct {
		ref, want string
		notFound  bool
	}{
		{"", "empty trajectory reference", false},
		{"missing-id", `trajectory "missing-id" not found in store ` + root, true},
		{"bad id", "not allowed", false},
		{"./no/such/folder", "no such file or folder", true},
		{"gs://bucket/trajectories/x", "unsupported scheme", false},
		{"s3://bucket/prefix/not-a-trajectory", "want s3://bucket/prefix/trajectories/<id>", false},
		{"s3://bucket/trajectories/..", "not allowed", false},
		{root, "is a store, not a trajectory folder", true},
		{empty, "no such file agent_trace.json", true},
	}
	for _, c := range cases {
		_, err := ref.Resolve(ctx, c.ref, root, ref.Options{CacheDir: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("resolve %q: got %v, want error containing %q", c.ref, err, c.want)
			continue
		}
		if errors.Is(err, ref.ErrNotFound) != c.notFound {
			t.Errorf("resolve %q: errors.Is(ErrNotFound) = %v, want %v", c.ref, !c.notFound, c.notFound)
		}
	}
	// The default store ./runs is not created by looking something up.
	missing := filepath.Join(t.TempDir(), "runs")
	if _, err := ref.Resolve(ctx, "t1", missing, ref.Options{}); !errors.Is(err, ref.ErrNotFound) || !strings.Contains(err.Error(), missing) {
		t.Errorf("id in a missing store folder: %v", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("resolving created the store folder %s", missing)
	}
	// Present but incomplete: no bundle anywhere.
	tr, err := ref.Resolve(ctx, "present", root, ref.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.BundlePaths(ctx); !errors.Is(err, ref.ErrNotFound) || !strings.Contains(err.Error(), "no repo.bundle") {
		t.Errorf("bundles of a trajectory without any: %v", err)
	}
}

func TestSplitTrajectoryURL(t *testing.T) {
	cases := []struct{ in, store, id string }{
		{"s3://b/p/trajectories/t1", "s3://b/p", "t1"},
		{"s3://b/trajectories/t1/", "s3://b", "t1"},
		{"s3://b/a/b/trajectories/t1/agent_trace.json?endpoint=http://127.0.0.1:9&region=x", "s3://b/a/b?endpoint=http://127.0.0.1:9&region=x", "t1"},
	}
	for _, c := range cases {
		su, id, err := ref.SplitTrajectoryURL(c.in)
		if err != nil || su != c.store || id != c.id {
			t.Errorf("split %s = %q %q %v, want %q %q", c.in, su, id, err, c.store, c.id)
		}
	}
}

// TestS3 resolves s3:// trajectory URLs against a real versitygw: a
// finished trajectory is downloaded into the cache (once), a dead one is
// rebuilt from its chunks.
func TestS3(t *testing.T) {
	ctx := context.Background()
	srv := s3test.Start(t)
	srv.SetEnv(t) // the standard credential chain reads these
	st, err := location.Open(ctx, srv.URL("team"), location.Options{})
	if err != nil {
		t.Fatal(err)
	}
	doc := record(t, st, "done")
	save(t, st, store.TraceKey("done"), doc)
	save(t, st, store.BundleKey("done"), []byte("bundle bytes"))
	deadDoc := record(t, st, "dead")

	cache := t.TempDir()
	u := "s3://" + srv.Bucket + "/team/trajectories/done?" + strings.SplitN(srv.URL(""), "?", 2)[1]
	tr, err := ref.Resolve(ctx, u, "", ref.Options{CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	p, rebuilt, err := tr.TracePath(ctx)
	if err != nil || rebuilt || !strings.HasPrefix(p, cache) || !bytes.Equal(readFile(t, p), doc) {
		t.Fatalf("downloaded trace %s (rebuilt %v, err %v) is wrong", p, rebuilt, err)
	}
	// The cache is reused while size and time match: mark the cached copy
	// (same size and time) and see the mark survive a second call.
	fi, _ := os.Stat(p)
	marked := bytes.ToUpper(doc)
	os.WriteFile(p, marked, 0o644)
	os.Chtimes(p, fi.ModTime(), fi.ModTime())
	if p2, _, err := tr.TracePath(ctx); err != nil || p2 != p || !bytes.Equal(readFile(t, p), marked) {
		t.Fatalf("second TracePath did not reuse the cache (%v)", err)
	}
	// A changed object is downloaded again.
	save(t, st, store.TraceKey("done"), append(doc, ' '))
	if _, _, err := tr.TracePath(ctx); err != nil || !bytes.Equal(readFile(t, p), append(doc, ' ')) {
		t.Fatalf("changed trace not downloaded again (%v)", err)
	}
	bs, err := tr.BundlePaths(ctx)
	if err != nil || len(bs) != 1 || string(readFile(t, bs[0])) != "bundle bytes" {
		t.Fatalf("bundle %v, %v", bs, err)
	}

	// A bare id with --store as the S3 URL.
	tr, err = ref.Resolve(ctx, "dead", srv.URL("team"), ref.Options{CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	p, rebuilt, err = tr.TracePath(ctx)
	if err != nil || !rebuilt || !bytes.Equal(readFile(t, p), deadDoc) {
		t.Fatalf("rebuilt from S3 chunks: %s rebuilt=%v err=%v", p, rebuilt, err)
	}
	_, err = ref.Resolve(ctx, "nobody", srv.URL("team"), ref.Options{CacheDir: cache})
	if !errors.Is(err, ref.ErrNotFound) || !strings.Contains(err.Error(), "s3://"+srv.Bucket+"/team") {
		t.Fatalf("unknown id on S3: %v", err)
	}

	// A running trajectory's model-call record is in the store only as
	// the call chunks of its turn ends (the second overlapping the first,
	// as after a resumed run): Fetch puts them together, and again once a
	// turn end adds one.
	calls := []string{`{"seq":1}` + "\n", `{"seq":2}` + "\n", `{"seq":3}` + "\n"}
	one, two := int64(len(calls[0])), int64(len(calls[0])+len(calls[1]))
	save(t, st, store.CallChunkKey("dead", store.ModelCallsName, 0, one), []byte(calls[0]))
	save(t, st, store.CallChunkKey("dead", store.ModelCallsName, 0, two), []byte(calls[0]+calls[1]))
	p, err = tr.Fetch(ctx, tr.Prefix+store.ModelCallsName)
	if err != nil || string(readFile(t, p)) != calls[0]+calls[1] {
		t.Fatalf("model calls from chunks: %s, %v", p, err)
	}
	save(t, st, store.CallChunkKey("dead", store.ModelCallsName, two, two+int64(len(calls[2]))), []byte(calls[2]))
	if p, err = tr.Fetch(ctx, tr.Prefix+store.ModelCallsName); err != nil || string(readFile(t, p)) != strings.Join(calls, "") {
		t.Fatalf("model calls after another turn end: %s, %v", p, err)
	}
	// Once whole, the whole object is what is read.
	save(t, st, store.ModelCallsKey("dead"), []byte(calls[2]))
	if p, err = tr.Fetch(ctx, tr.Prefix+store.ModelCallsName); err != nil || string(readFile(t, p)) != calls[2] {
		t.Fatalf("whole model calls: %s, %v", p, err)
	}
	if _, err = tr.Fetch(ctx, tr.Prefix+store.ToolCallsName); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("tool calls with neither object nor chunks: %v", err)
	}
}
