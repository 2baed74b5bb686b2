package retry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/retry"
	"github.com/trajlab/traj/trace/store/storefault"
	"github.com/trajlab/traj/trace/store/storetest"
)

var fastPolicy = retry.Policy{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond, AttemptTimeout: 100 * time.Millisecond}

// TestConformance: the wrapper is a Store like any other.
func TestConformance(t *testing.T) {
	storetest.RunConformance(t, func(t *testing.T) store.Store {
		fs, _ := storefault.OnLocal(t)
		return retry.Wrap(fs, fastPolicy)
	}, storetest.Options{LargeSize: 3 << 20})
}

func TestEventualSuccess(t *testing.T) {
	faults := []storefault.Fault{storefault.Error, storefault.SlowDown, storefault.Hang, storefault.Partial}
	ctx := context.Background()
	fs, base := storefault.OnLocal(t)
	s := retry.Wrap(fs, fastPolicy)
	data := bytes.Repeat([]byte("part record "), 1000)
	fs.Script(storefault.Save, faults...)
	if err := s.Save(ctx, "trajectories/x/chunks/part-00000001.json.zst", store.Bytes(data)); err != nil {
		t.Fatalf("save through %v: %v", faults, err)
	}
	fs.Script(storefault.Load, faults...)
	var got []byte
	err := s.Load(ctx, "trajectories/x/chunks/part-00000001.json.zst", func(r io.Reader) error {
		b, err := io.ReadAll(r)
		got = b
		return err
	})
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("load through %v: err %v, %d bytes (want %d identical)", faults, err, len(got), len(data))
	}
	fs.Script(storefault.Stat, faults[:3]...)
	if fi, err := s.Stat(ctx, "trajectories/x/chunks/part-00000001.json.zst"); err != nil || fi.Size != int64(len(data)) {
		t.Fatalf("stat: %+v, %v", fi, err)
	}
	for _, op := range []storefault.Op{storefault.Save, storefault.Load, storefault.Stat} {
		want := len(faults) + 1
		if op == storefault.Stat {
			want = 4
		}
		if n := fs.Calls(op); n != want {
			t.Errorf("%s attempts = %d, want %d", op, n, want)
		}
	}
	fs.Script(storefault.Remove, faults[:2]...)
	if err := s.Remove(ctx, "trajectories/x/chunks/part-00000001.json.zst"); err != nil {
		t.Fatalf("remove: %v", err)
	}
	if _, err := base.Stat(ctx, "trajectories/x/chunks/part-00000001.json.zst"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("object still there after remove: %v", err)
	}
}

func TestListRetryDeliversEachOnce(t *testing.T) {
	ctx := context.Background()
	fs, _ := storefault.OnLocal(t)
	s := retry.Wrap(fs, fastPolicy)
	for i := range 5 {
		if err := s.Save(ctx, fmt.Sprintf("l/%d", i), store.Bytes("x")); err != nil {
			t.Fatal(err)
		}
	}
	fs.Script(storefault.List, storefault.Error, storefault.SlowDown)
	var got []string
	if err := s.List(ctx, "l/", func(fi store.FileInfo) error { got = append(got, fi.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[l/0 l/1 l/2 l/3 l/4]" {
		t.Fatalf("listing through faults gave %q, want each key once", got)
	}
}

func TestNoRetry(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		call func(s store.Store) error
		want error
	}{
		{"not found", func(s store.Store) error { _, err := s.Stat(ctx, "missing"); return err }, store.ErrNotFound},
		{"invalid key", func(s store.Store) error { return s.Save(ctx, "../x", store.Bytes("x")) }, store.ErrInvalidKey},
		{"permanent from fn", func(s store.Store) error {
			s.Save(ctx, "k", store.Bytes("x"))
			return s.Load(ctx, "k", func(io.Reader) error { return store.Permanent(errBadData) })
		}, errBadData},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs, _ := storefault.OnLocal(t)
			s := retry.Wrap(fs, fastPolicy)
			start := time.Now()
			err := c.call(s)
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			for _, op := range []storefault.Op{storefault.Load, storefault.Stat} {
				if n := fs.Calls(op); n > 1 {
					t.Fatalf("%s called %d times, want at most once", op, n)
				}
			}
			if d := time.Since(start); d > time.Second {
				t.Fatalf("took %v: something was retried", d)
			}
		})
	}
}

var errBadData = errors.New("bad data")

// TestWhichErrorsRetry is the table of what the wrapper retries: errors a
// retry can fix (dropped connections, throttling, a body cut mid-read,
// timeouts) are retried up to MaxAttempts; errors it cannot (a full or
// read-only disk, permissions, a missing key, a parse error of a body that
// was read intact) return after one attempt.
func TestWhichErrorsRetry(t *testing.T) {
	ctx := context.Background()
	const maxAttempts = 4
	pathErr := func(errno syscall.Errno) error {
		return fmt.Errorf("save k: %w", &os.PathError{Op: "write", Path: "/store/k.tmp", Err: errno})
	}
	var syntaxErr error
	{
		var v any
		syntaxErr = json.Unmarshal([]byte(`{"turns":[`), &v)
	}
	parse := func(r io.Reader) error {
		var v any
		return json.NewDecoder(r).Decode(&v)
	}
	validate := func(r io.Reader) error {
		if _, err := io.ReadAll(r); err != nil {
			return err
		}
		return errors.New("part 3 follows part 1")
	}
	cases := []struct {
		name  string
		op    string // the operation that fails ("" for Load's callback)
		err   error  // what it returns
		fn    func(io.Reader) error
		retry bool
	}{
		{"connection reset", "save", fmt.Errorf("save k: %w", syscall.ECONNRESET), nil, true},
		{"plain network error", "stat", errors.New("dial tcp 127.0.0.1:7070: i/o timeout"), nil, true},
		{"S3 SlowDown", "save", storefault.SlowDownError(), nil, true},
		{"attempt deadline", "load", fmt.Errorf("load k: %w", context.DeadlineExceeded), nil, true},
		{"unexpected EOF from the backend", "load", fmt.Errorf("load k: %w", io.ErrUnexpectedEOF), nil, true},
		{"EIO", "load", pathErr(syscall.EIO), nil, true},
		{"body cut mid-read, then a parse error", "cut", nil, parse, true},
		{"ENOSPC", "save", pathErr(syscall.ENOSPC), nil, false},
		{"EDQUOT", "save", pathErr(syscall.EDQUOT), nil, false},
		{"read-only filesystem", "save", pathErr(syscall.EROFS), nil, false},
		{"permission denied", "save", pathErr(syscall.EACCES), nil, false},
		{"operation not permitted", "remove", pathErr(syscall.EPERM), nil, false},
		{"name too long", "save", pathErr(syscall.ENAMETOOLONG), nil, false},
		{"file too large", "save", pathErr(syscall.EFBIG), nil, false},
		{"not a folder", "stat", pathErr(syscall.ENOTDIR), nil, false},
		{"not found", "load", fmt.Errorf("load k: %w", store.ErrNotFound), nil, false},
		{"invalid key", "save", fmt.Errorf("save k: %w", store.ErrInvalidKey), nil, false},
		{"marked permanent", "stat", store.Permanent(errors.New("access denied")), nil, false},
		{"JSON syntax error", "load", fmt.Errorf("read trace: %w", syntaxErr), nil, false},
		{"parse error of an intact body", "", nil, parse, false},
		{"validation error of an intact body", "", nil, validate, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs, base := storefault.OnLocal(t)
			if err := base.Save(ctx, "k", store.Bytes(`{"turns":[`)); err != nil {
				t.Fatal(err)
			}
			p := fastPolicy
			p.MaxAttempts = maxAttempts
			s := retry.Wrap(fs, p)
			op := storefault.Op(c.op)
			switch c.op {
			case "":
				op = storefault.Load
			case "cut": // every attempt's body breaks after 3 bytes
				op = storefault.Load
				fs.Script(op, slices.Repeat([]storefault.Fault{storefault.Partial}, maxAttempts)...)
			default:
				fs.FailOp(op, c.err)
			}
			fn := c.fn
			if fn == nil {
				fn = func(r io.Reader) error { _, err := io.ReadAll(r); return err }
			}
			var err error
			switch op {
			case storefault.Save:
				err = s.Save(ctx, "k", store.Bytes("x"))
			case storefault.Load:
				err = s.Load(ctx, "k", fn)
			case storefault.Stat:
				_, err = s.Stat(ctx, "k")
			case storefault.Remove:
				err = s.Remove(ctx, "k")
			}
			if err == nil {
				t.Fatal("the operation succeeded")
			}
			if c.err != nil && !errors.Is(err, c.err) {
				t.Fatalf("got %v, want it to wrap %v", err, c.err)
			}
			want := 1
			if c.retry {
				want = maxAttempts
			}
			if n := fs.Calls(op); n != want {
				t.Fatalf("%s attempted %d times, want %d (err: %v)", op, n, want, err)
			}
		})
	}
}

func TestGivesUp(t *testing.T) {
	fs, _ := storefault.OnLocal(t)
	p := fastPolicy
	p.MaxAttempts = 3
	s := retry.Wrap(fs, p)
	fs.Script(storefault.Save, storefault.SlowDown, storefault.SlowDown, storefault.SlowDown, storefault.SlowDown)
	err := s.Save(context.Background(), "k", store.Bytes("x"))
	if err == nil || !strings.Contains(err.Error(), "giving up after 3 attempts") || !strings.Contains(err.Error(), "SlowDown") {
		t.Fatalf("got %v, want giving up after 3 attempts with the SlowDown cause", err)
	}
	if n := fs.Calls(storefault.Save); n != 3 {
		t.Fatalf("save attempts = %d, want 3", n)
	}
}

func TestCancelDuringBackoff(t *testing.T) {
	fs, _ := storefault.OnLocal(t)
	s := retry.Wrap(fs, retry.Policy{BaseDelay: time.Hour, MaxDelay: time.Hour})
	fs.Script(storefault.Save, storefault.Error, storefault.Error)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := s.Save(ctx, "k", store.Bytes("x"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the caller's deadline", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("returned after %v: backoff ignored the context", d)
	}
}

// TestNoLossUnderFaults saves many objects concurrently while every third
// call fails in one of the four ways; every object must arrive intact.
func TestNoLossUnderFaults(t *testing.T) {
	ctx := context.Background()
	fs, _ := storefault.OnLocal(t)
	fs.FailEvery(3, storefault.Error, storefault.SlowDown, storefault.Hang, storefault.Partial)
	// With the default 8 attempts one of 60 objects gives up about once in
	// 110 runs ((1/3)^8 × 60); 20 attempts make that (1/3)^20 × 60 ≈ 2e-8,
	// so a failure here means loss, not bad luck.
	policy := fastPolicy
	policy.MaxAttempts = 20
	s := retry.Wrap(fs, policy)
	const n = 60
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- s.Save(ctx, fmt.Sprintf("obj/%03d", i), store.Bytes(fmt.Sprintf("content %d", i)))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("save under faults: %v", err)
		}
	}
	fs.FailEvery(0)
	for i := range n {
		var got string
		err := s.Load(ctx, fmt.Sprintf("obj/%03d", i), func(r io.Reader) error {
			b, err := io.ReadAll(r)
			got = string(b)
			return err
		})
		if err != nil || got != fmt.Sprintf("content %d", i) {
			t.Fatalf("obj/%03d: %q, %v", i, got, err)
		}
	}
	if got := fs.Injected(); got[storefault.Partial] == 0 || got[storefault.Hang] == 0 || fs.Calls(storefault.Save) <= n {
		t.Fatalf("%d save calls for %d objects, faults %v: want every kind injected", fs.Calls(storefault.Save), n, got)
	}
}
