// Package storetest is the conformance suite every store.Store passes. Each
// backend's test calls RunConformance with a constructor for a fresh, empty
// store.
package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/trajlab/traj/trace/store"
)

// Options tunes the suite for a backend.
type Options struct {
	// LargeSize is the size of the large-object test; make it exceed the
	// backend's multipart threshold. 0 means 11 MiB.
	LargeSize int
}

// RunConformance runs every conformance test against stores made by
// newStore, which must return a fresh, empty store per call.
func RunConformance(t *testing.T, newStore func(t *testing.T) store.Store, opts Options) {
	if opts.LargeSize == 0 {
		opts.LargeSize = 11 << 20
	}
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"SaveLoadStat", testSaveLoadStat},
		{"Overwrite", testOverwrite},
		{"Digest", testDigest},
		{"NotFound", testNotFound},
		{"List", testList},
		{"Remove", testRemove},
		{"InvalidKeys", testInvalidKeys},
		{"FileSource", testFileSource},
		{"LoadCallbackError", testLoadCallbackError},
		{"ConcurrentSaves", testConcurrentSaves},
		{"Cancelled", testCancelled},
		{"Large", func(t *testing.T, s store.Store) { testLarge(t, s, opts.LargeSize) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore(t)) })
	}
}

func save(t *testing.T, s store.Store, key string, data []byte) {
	t.Helper()
	if err := s.Save(context.Background(), key, store.Bytes(data)); err != nil {
		t.Fatalf("save %s: %v", key, err)
	}
}

func load(t *testing.T, s store.Store, key string) []byte {
	t.Helper()
	var got []byte
	err := s.Load(context.Background(), key, func(r io.Reader) error {
		b, err := io.ReadAll(r)
		got = b
		return err
	})
	if err != nil {
		t.Fatalf("load %s: %v", key, err)
	}
	return got
}

func keys(t *testing.T, s store.Store, prefix string) []string {
	t.Helper()
	var out []string
	err := s.List(context.Background(), prefix, func(fi store.FileInfo) error {
		out = append(out, fi.Key)
		return nil
	})
	if err != nil {
		t.Fatalf("list %q: %v", prefix, err)
	}
	return out
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func testSaveLoadStat(t *testing.T, s store.Store) {
	for _, size := range []int{0, 1, 4096, 100_000} {
		key := fmt.Sprintf("trajectories/t1/obj-%d", size)
		data := randomBytes(t, size)
		save(t, s, key, data)
		if got := load(t, s, key); !bytes.Equal(got, data) {
			t.Fatalf("load %s: got %d bytes, want %d identical bytes", key, len(got), len(data))
		}
		fi, err := s.Stat(context.Background(), key)
		if err != nil {
			t.Fatalf("stat %s: %v", key, err)
		}
		if fi.Key != key || fi.Size != int64(size) || fi.ModTime.IsZero() {
			t.Fatalf("stat %s = %+v, want key %s size %d and a modification time", key, fi, key, size)
		}
	}
}

func testOverwrite(t *testing.T, s store.Store) {
	key := "a/b/c.json"
	save(t, s, key, []byte("first version, longer than the second"))
	save(t, s, key, []byte("second"))
	if got := string(load(t, s, key)); got != "second" {
		t.Fatalf("after overwrite got %q, want %q", got, "second")
	}
	if got := keys(t, s, ""); len(got) != 1 || got[0] != key {
		t.Fatalf("after overwrite list = %q, want just %q", got, key)
	}
}

// testDigest: store.ObjectDigest of a saved object is the digest of what
// was saved, also after an overwrite with the same size (what sync relies
// on to skip an object), and a missing key is ErrNotFound.
func testDigest(t *testing.T, s store.Store) {
	ctx := context.Background()
	key := "t/records.jsonl"
	for _, body := range []string{"version one\n", "version two\n"} {
		save(t, s, key, []byte(body))
		want, err := store.SourceDigest(store.Bytes(body))
		if err != nil {
			t.Fatal(err)
		}
		got, err := store.ObjectDigest(ctx, s, key)
		if err != nil || got != want {
			t.Fatalf("digest of %q: %+v, %v; want %+v", body, got, err, want)
		}
	}
	if _, err := store.ObjectDigest(ctx, s, "t/missing"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("digest of a missing key: %v, want ErrNotFound", err)
	}
}

func testNotFound(t *testing.T, s store.Store) {
	ctx := context.Background()
	save(t, s, "present/x", []byte("x"))
	for _, key := range []string{"missing", "present/missing", "present/x/below"} {
		err := s.Load(ctx, key, func(io.Reader) error { t.Fatalf("fn called for missing %s", key); return nil })
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("load %s: got %v, want ErrNotFound", key, err)
		}
		if _, err := s.Stat(ctx, key); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("stat %s: got %v, want ErrNotFound", key, err)
		}
	}
	// A "folder" is not an object.
	if _, err := s.Stat(ctx, "present"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("stat of a key prefix: got %v, want ErrNotFound", err)
	}
}

func testList(t *testing.T, s store.Store) {
	want := []string{
		"evalcache/k1.json",
		"trajectories/ab/agent_trace.json",
		"trajectories/abc/agent_trace.json",
		"trajectories/abc/chunks/part-00000001.json.zst",
		"trajectories/abc/chunks/part-00000002.json.zst",
		"trajectories/abc/history/00000001.bundle",
		"trajectories/abc/repo.bundle",
		"trajectories/abc-d/agent_trace.json",
	}
	for i, k := range want {
		save(t, s, k, []byte(fmt.Sprintf("object %d", i)))
	}
	cases := []struct {
		prefix string
		want   []string
	}{
		{"", sortedCopy(want)},
		{"trajectories/abc/", want[2:7]},
		{"trajectories/abc/chunks/", want[3:5]},
		{"trajectories/ab", sortedCopy(want[1:])},
		{"trajectories/abc/history/0000000", want[5:6]},
		{"nothing/", nil},
	}
	for _, c := range cases {
		got := keys(t, s, c.prefix)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("list %q:\n got %q\nwant %q", c.prefix, got, c.want)
		}
	}
	var sizes []int64
	s.List(context.Background(), "evalcache/", func(fi store.FileInfo) error {
		sizes = append(sizes, fi.Size)
		return nil
	})
	if len(sizes) != 1 || sizes[0] != int64(len("object 0")) {
		t.Errorf("list sizes = %v, want [%d]", sizes, len("object 0"))
	}
	stop := errors.New("stop")
	n := 0
	err := s.List(context.Background(), "", func(store.FileInfo) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("list with failing fn: err %v after %d calls, want stop after 1", err, n)
	}
}

func sortedCopy(in []string) []string {
	out := append([]string(nil), in...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func testRemove(t *testing.T, s store.Store) {
	ctx := context.Background()
	save(t, s, "d/one", []byte("1"))
	save(t, s, "d/two", []byte("2"))
	if err := s.Remove(ctx, "d/one"); err != nil {
		t.Fatalf("remove: %v", err)
	}
	if _, err := s.Stat(ctx, "d/one"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("stat after remove: got %v, want ErrNotFound", err)
	}
	if err := s.Remove(ctx, "d/one"); err != nil {
		t.Fatalf("second remove of the same key: %v, want nil", err)
	}
	if got := keys(t, s, ""); fmt.Sprint(got) != "[d/two]" {
		t.Fatalf("after remove list = %q, want [d/two]", got)
	}
	if got := string(load(t, s, "d/two")); got != "2" {
		t.Fatalf("sibling after remove = %q", got)
	}
}

func testInvalidKeys(t *testing.T, s store.Store) {
	ctx := context.Background()
	bad := []string{"", "/abs", "../escape", "a/../../b", "a//b", "a/./b", "trailing/", "nul\x00", "ctrl\x1b", `back\slash`, "sp ace"}
	for _, key := range bad {
		if err := s.Save(ctx, key, store.Bytes("x")); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("save %q: got %v, want ErrInvalidKey", key, err)
		}
		if err := s.Load(ctx, key, func(io.Reader) error { return nil }); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("load %q: got %v, want ErrInvalidKey", key, err)
		}
		if _, err := s.Stat(ctx, key); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("stat %q: got %v, want ErrInvalidKey", key, err)
		}
		if err := s.Remove(ctx, key); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("remove %q: got %v, want ErrInvalidKey", key, err)
		}
	}
	if err := s.List(ctx, "../", func(store.FileInfo) error { return nil }); !errors.Is(err, store.ErrInvalidKey) {
		t.Errorf("list ../: got %v, want ErrInvalidKey", err)
	}
	if got := keys(t, s, ""); len(got) != 0 {
		t.Errorf("store after invalid saves holds %q, want nothing", got)
	}
}

func testFileSource(t *testing.T, s store.Store) {
	path := filepath.Join(t.TempDir(), "src")
	data := randomBytes(t, 70_000)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(context.Background(), "f/src", store.File(path)); err != nil {
		t.Fatalf("save file source: %v", err)
	}
	if got := load(t, s, "f/src"); !bytes.Equal(got, data) {
		t.Fatalf("file source round trip: got %d bytes, want %d identical", len(got), len(data))
	}
	err := s.Save(context.Background(), "f/missing", store.File(filepath.Join(t.TempDir(), "none")))
	if err == nil {
		t.Fatal("save from a missing file succeeded")
	}
	if _, err := s.Stat(context.Background(), "f/missing"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("failed save left an object: %v", err)
	}
}

func testLoadCallbackError(t *testing.T, s store.Store) {
	save(t, s, "k", []byte("content"))
	boom := errors.New("boom")
	err := s.Load(context.Background(), "k", func(r io.Reader) error { return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("load with failing fn: got %v, want boom", err)
	}
}

func testConcurrentSaves(t *testing.T, s store.Store) {
	const n = 16
	versions := make([][]byte, n)
	for i := range versions {
		versions[i] = bytes.Repeat([]byte{byte('a' + i)}, 10_000+i)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := range n {
		wg.Add(2)
		go func() {
			defer wg.Done()
			errs <- s.Save(context.Background(), fmt.Sprintf("c/own-%02d", i), store.Bytes(versions[i]))
		}()
		go func() {
			defer wg.Done()
			errs <- s.Save(context.Background(), "c/shared", store.Bytes(versions[i]))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent save: %v", err)
		}
	}
	for i := range n {
		if got := load(t, s, fmt.Sprintf("c/own-%02d", i)); !bytes.Equal(got, versions[i]) {
			t.Fatalf("c/own-%02d holds the wrong content", i)
		}
	}
	shared := load(t, s, "c/shared")
	found := false
	for _, v := range versions {
		found = found || bytes.Equal(shared, v)
	}
	if !found {
		t.Fatalf("c/shared (%d bytes) is not one complete version: writes interleaved", len(shared))
	}
	if got := keys(t, s, "c/"); len(got) != n+1 {
		t.Fatalf("list after concurrent saves: %d keys (%q), want %d", len(got), got, n+1)
	}
}

func testCancelled(t *testing.T, s store.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Save(ctx, "x/cancelled", store.Bytes("data")); !errors.Is(err, context.Canceled) {
		t.Errorf("save with cancelled context: got %v, want context.Canceled", err)
	}
	if _, err := s.Stat(context.Background(), "x/cancelled"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("cancelled save left an object: %v", err)
	}
	save(t, s, "x/present", []byte("data"))
	err := s.Load(ctx, "x/present", func(r io.Reader) error { _, err := io.ReadAll(r); return err })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("load with cancelled context: got %v, want context.Canceled", err)
	}
	// Cancelling in the middle of a save leaves no partial object.
	ctx2, cancel2 := context.WithCancel(context.Background())
	src := cancelAfter{data: randomBytes(t, 1<<20), at: 256 << 10, cancel: cancel2}
	if err := s.Save(ctx2, "x/midway", src); err == nil {
		t.Errorf("save cancelled midway succeeded")
	}
	if _, err := s.Stat(context.Background(), "x/midway"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("save cancelled midway left an object: %v", err)
	}
}

// cancelAfter is a Source that cancels the save's context once `at` bytes
// have been read.
type cancelAfter struct {
	data   []byte
	at     int
	cancel context.CancelFunc
}

func (c cancelAfter) Open() (io.ReadCloser, int64, error) {
	return io.NopCloser(&cancellingReader{r: bytes.NewReader(c.data), left: c.at, cancel: c.cancel}), int64(len(c.data)), nil
}

type cancellingReader struct {
	r      io.Reader
	left   int
	cancel context.CancelFunc
}

func (c *cancellingReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		c.cancel()
		return 0, context.Canceled
	}
	if len(p) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= n
	return n, err
}

func testLarge(t *testing.T, s store.Store, size int) {
	data := randomBytes(t, size)
	if err := s.Save(context.Background(), "big/repo.bundle", store.Bytes(data)); err != nil {
		t.Fatalf("save %d bytes: %v", size, err)
	}
	if got := load(t, s, "big/repo.bundle"); !bytes.Equal(got, data) {
		t.Fatalf("large round trip: got %d bytes, want %d identical", len(got), size)
	}
	path := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(path, data[:size-12345], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(context.Background(), "big/from-file", store.File(path)); err != nil {
		t.Fatalf("save large file: %v", err)
	}
	if got := load(t, s, "big/from-file"); !bytes.Equal(got, data[:size-12345]) {
		t.Fatalf("large file round trip differs")
	}
	// A body that can only be read once, front to back (no Seek, no ReadAt).
	if err := s.Save(context.Background(), "big/stream", streamSource(data)); err != nil {
		t.Fatalf("save large stream: %v", err)
	}
	if got := load(t, s, "big/stream"); !bytes.Equal(got, data) {
		t.Fatalf("large stream round trip differs")
	}
}

// streamSource hides bytes.Reader's Seek and ReadAt.
type streamSource []byte

func (b streamSource) Open() (io.ReadCloser, int64, error) {
	return io.NopCloser(struct{ io.Reader }{bytes.NewReader(b)}), int64(len(b)), nil
}
