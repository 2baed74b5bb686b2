package upload_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/storefault"
	"github.com/trajlab/traj/trace/store/upload"
)

func content(t *testing.T, s store.Store, key string) string {
	t.Helper()
	var got string
	err := s.Load(context.Background(), key, func(r io.Reader) error {
		b, err := io.ReadAll(r)
		got = string(b)
		return err
	})
	if err != nil {
		t.Fatalf("load %s: %v", key, err)
	}
	return got
}

// newFailing wraps a fresh local store in storefault.
func newFailing(t *testing.T) *storefault.FailingStore {
	f, _ := storefault.OnLocal(t)
	return f
}

// saves lists the Saves g received, in order, as key=body.
func saves(g *storefault.FailingStore) []string {
	var out []string
	for _, c := range g.Log() {
		if c.Op == storefault.Save {
			out = append(out, c.Key+"="+c.Head)
		}
	}
	return out
}

func TestOrderedPerKeyAndCoalescing(t *testing.T) {
	ctx := context.Background()
	g := newFailing(t)
	gate := g.Hold(storefault.Save, "trajectories/t/chunks/tail")
	u := upload.New(ctx, g, upload.Options{Workers: 4})
	for i := 1; i <= 5; i++ {
		if err := u.Enqueue("trajectories/t/chunks/tail", store.Bytes(fmt.Sprintf("v%d", i))); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			<-gate.Reached() // v1 is running and held
		}
	}
	gate.Release()
	rep, err := u.Close(ctx)
	if err != nil || len(rep.Failed) != 0 {
		t.Fatalf("close: %v, failed %v", err, rep.Failed)
	}
	if got := content(t, g, "trajectories/t/chunks/tail"); got != "v5" {
		t.Fatalf("final version %q, want v5", got)
	}
	if got := saves(g); fmt.Sprint(got) != "[trajectories/t/chunks/tail=v1 trajectories/t/chunks/tail=v5]" {
		t.Fatalf("saves %q, want v1 then v5 only", got)
	}
	if len(g.Overlapping()) != 0 {
		t.Fatal("two versions of one key were saved at the same time")
	}
	if rep.Stats.Coalesced != 3 || rep.Stats.Objects != 2 {
		t.Fatalf("stats %+v, want 3 coalesced and 2 objects", rep.Stats)
	}
}

func TestFirstEnqueuedFirstStarted(t *testing.T) {
	ctx := context.Background()
	g := newFailing(t)
	u := upload.New(ctx, g, upload.Options{Workers: 1})
	var want []string
	for i := range 20 {
		key := fmt.Sprintf("k/%02d", 19-i)
		want = append(want, key+"=x")
		u.Enqueue(key, store.Bytes("x"))
	}
	if _, err := u.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := saves(g); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("order %q, want %q", got, want)
	}
}

func TestEnqueueNeverWaitsForTheStore(t *testing.T) {
	ctx := context.Background()
	g := newFailing(t)
	gate := g.Hold(storefault.Save, "slow/first")
	u := upload.New(ctx, g, upload.Options{Workers: 1, MaxQueuedBytes: 1 << 20})
	u.Enqueue("slow/first", store.Bytes("1"))
	<-gate.Reached()
	// With the only worker stuck, Enqueue still returns; this test would
	// hang otherwise.
	for i := range 1000 {
		if err := u.Enqueue(fmt.Sprintf("q/%04d", i), store.Bytes("0123456789")); err != nil {
			t.Fatal(err)
		}
	}
	gate.Release()
	rep, err := u.Close(ctx)
	if err != nil || len(rep.Failed) != 0 || rep.Stats.Objects != 1001 {
		t.Fatalf("close: %v, %d failed, %d objects", err, len(rep.Failed), rep.Stats.Objects)
	}
}

func TestQueueBound(t *testing.T) {
	ctx := context.Background()
	g := newFailing(t)
	gate := g.Hold(storefault.Save, "a")
	u := upload.New(ctx, g, upload.Options{Workers: 1, MaxQueuedBytes: 10_000})
	data := store.Bytes(strings.Repeat("x", 4000))
	u.Enqueue("a", data)
	<-gate.Reached()
	if err := u.Enqueue("b", data); err != nil {
		t.Fatal(err)
	}
	err := u.Enqueue("c", data)
	if !errors.Is(err, upload.ErrQueueFull) {
		t.Fatalf("third 4 KB object over a 10 KB bound: got %v, want ErrQueueFull", err)
	}
	// Replacing a queued version does not grow the queue.
	if err := u.Enqueue("b", data); err != nil {
		t.Fatalf("coalescing into a full queue: %v", err)
	}
	// A file body costs no memory.
	path := filepath.Join(t.TempDir(), "big")
	os.WriteFile(path, []byte(strings.Repeat("y", 50_000)), 0o644)
	if err := u.Enqueue("d", store.File(path)); err != nil {
		t.Fatalf("file body refused: %v", err)
	}
	gate.Release()
	rep, _ := u.Close(ctx)
	// c was refused; Flush retried it (the queue had room again) and it made it.
	if len(rep.Failed) != 0 || rep.Stats.Refused != 1 {
		t.Fatalf("report %+v, want the refused object uploaded by the flush", rep)
	}
	for _, k := range []string{"a", "b", "c", "d"} {
		if _, err := g.Stat(ctx, k); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}
}

func TestFlushReportsPending(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	// Every Save of a key holding "bad" is refused for good; the first
	// Save of each key holding "flaky" drops its connection.
	broken := newFailing(t)
	broken.Decide(func(c storefault.Call) storefault.Fault {
		switch {
		case c.Op != storefault.Save:
		case strings.Contains(c.Key, "bad"):
			return storefault.Denied
		case strings.Contains(c.Key, "flaky") && c.N == 1:
			return storefault.Error
		}
		return storefault.None
	})
	pending := filepath.Join(dir, "pending_uploads.json")
	u := upload.New(ctx, broken, upload.Options{PendingFile: pending})

	tracePath := filepath.Join(dir, "agent_trace.json")
	os.WriteFile(tracePath, []byte(`{"trajectory_id":"t"}`), 0o644)
	u.Enqueue("trajectories/bad/agent_trace.json", store.File(tracePath))
	u.Enqueue("trajectories/bad/chunks/0000000000000000-1-header.zst", store.Bytes("h"))
	u.Enqueue("trajectories/t/flaky.json", store.Bytes("ok"))
	u.Enqueue("trajectories/t/fine.json", store.Bytes("ok"))
	rep, err := u.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, f := range rep.Failed {
		keys = append(keys, f.Key)
	}
	if fmt.Sprint(keys) != "[trajectories/bad/agent_trace.json trajectories/bad/chunks/0000000000000000-1-header.zst]" {
		t.Fatalf("failed %q, want the two bad keys (flaky recovered on the flush's retry)", keys)
	}
	if rep.Failed[0].LocalPath != tracePath || !strings.Contains(rep.Failed[0].Err, "access denied") {
		t.Fatalf("failure %+v lacks the local path or the cause", rep.Failed[0])
	}
	if err := rep.Err(); err == nil || !strings.Contains(err.Error(), "2 objects not uploaded") {
		t.Fatalf("report error %v", err)
	}
	var p upload.Pending
	if raw, err := os.ReadFile(pending); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(raw, &p); err != nil || p.Version != 1 || len(p.Objects) != 2 {
		t.Fatalf("pending record: %+v, %v", p, err)
	}
	if content(t, broken, "trajectories/t/flaky.json") != "ok" {
		t.Fatal("flaky object lost")
	}
}

func TestEnqueueAfterCloseAndBadKey(t *testing.T) {
	u := upload.New(context.Background(), newFailing(t), upload.Options{})
	if err := u.Enqueue("../escape", store.Bytes("x")); !errors.Is(err, store.ErrInvalidKey) {
		t.Fatalf("traversal key: %v", err)
	}
	u.Close(context.Background())
	if err := u.Enqueue("k", store.Bytes("x")); !errors.Is(err, upload.ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
}

// TestFlushDeadline: a flush that runs out of time names what is still
// uploading and still queued, and Close abandons the stuck upload.
func TestFlushDeadline(t *testing.T) {
	g := newFailing(t)
	gate := g.Hold(storefault.Save, "stuck") // never released: the save waits for its context
	u := upload.New(context.Background(), g, upload.Options{Workers: 1})
	u.Enqueue("stuck", store.Bytes("1"))
	<-gate.Reached()
	u.Enqueue("queued", store.Bytes("2"))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	rep, err := u.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range rep.Failed {
		got[f.Key] = f.Err
	}
	if !strings.Contains(got["stuck"], "still uploading") || !strings.Contains(got["queued"], "still queued") {
		t.Fatalf("failures %q, want stuck (uploading) and queued", got)
	}
}
