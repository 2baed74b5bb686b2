// Package storefault wraps a real store.Store so that it fails on purpose:
// connection errors, S3's 503 SlowDown, attempts that hang until their
// timeout, and whole outages. It is for failure-injection tests of the
// retry wrapper, the uploader, `traj run` and `traj sync`; nothing in the
// product uses it.
package storefault

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"sync"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/trajlab/traj/trace/store"
)

// Fault is one kind of injected failure.
type Fault int

// The faults, in the order FailEvery goes through them.
const (
	None Fault = iota
	// Error is a dropped connection.
	Error
	// SlowDown is S3's throttling answer: HTTP 503 with code SlowDown.
	SlowDown
	// Hang never answers; the call returns when its context ends (the
	// retry wrapper's per-attempt timeout).
	Hang
)

func (f Fault) String() string {
	switch f {
	case Error:
		return "error"
	case SlowDown:
		return "slowdown"
	case Hang:
		return "hang"
	}
	return "none"
}

// FailingStore is a store.Store that injects faults before delegating to
// the store it wraps. The zero configuration injects nothing. Safe for
// concurrent use.
type FailingStore struct {
	inner store.Store

	mu       sync.Mutex
	every    int // every k-th call fails (0: never)
	kinds    []Fault
	down     bool
	calls    int
	injected map[Fault]int
	saved    map[string]int // successful saves per key
}

var _ store.Store = (*FailingStore)(nil)

// New wraps s. Wrap the result in retry.Wrap to test the retries.
func New(s store.Store) *FailingStore {
	return &FailingStore{inner: s, injected: map[Fault]int{}, saved: map[string]int{}}
}

// FailEvery makes every k-th call (of any operation) fail, taking
// kinds in turn (default Error, SlowDown, Hang). k <= 0 stops it.
func (f *FailingStore) FailEvery(k int, kinds ...Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.every = k
	f.kinds = kinds
	if len(f.kinds) == 0 {
		f.kinds = []Fault{Error, SlowDown, Hang}
	}
}

// SetDown starts (true) or ends (false) an outage: while down every call
// fails with Error.
func (f *FailingStore) SetDown(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
}

// Injected returns how many faults of each kind were injected so far.
func (f *FailingStore) Injected() map[Fault]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.injected)
}

// TotalInjected is the sum of Injected.
func (f *FailingStore) TotalInjected() int {
	n := 0
	for _, v := range f.Injected() {
		n += v
	}
	return n
}

// Saved returns how many times each key was saved successfully.
func (f *FailingStore) Saved() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.saved)
}

func (f *FailingStore) next() Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	var fl Fault
	switch {
	case f.down:
		fl = Error
	case f.every > 0 && f.calls%f.every == 0:
		fl = f.kinds[(f.calls/f.every-1)%len(f.kinds)]
	}
	if fl != None {
		f.injected[fl]++
	}
	return fl
}

// SlowDownError is the error an S3 client returns for 503 SlowDown.
func SlowDownError() error {
	return &smithyhttp.ResponseError{
		Response: &smithyhttp.Response{Response: &http.Response{StatusCode: http.StatusServiceUnavailable}},
		Err:      &smithy.GenericAPIError{Code: "SlowDown", Message: "Please reduce your request rate."},
	}
}

func (f *FailingStore) inject(ctx context.Context, op, key string) error {
	switch f.next() {
	case Error:
		return fmt.Errorf("%s %s: connection reset by peer (injected)", op, key)
	case SlowDown:
		return fmt.Errorf("%s %s: %w", op, key, SlowDownError())
	case Hang:
		<-ctx.Done()
		return fmt.Errorf("%s %s: no answer (injected hang): %w", op, key, ctx.Err())
	}
	return nil
}

// Save implements store.Store.
func (f *FailingStore) Save(ctx context.Context, key string, src store.Source) error {
	if err := f.inject(ctx, "save", key); err != nil {
		return err
	}
	if err := f.inner.Save(ctx, key, src); err != nil {
		return err
	}
	f.mu.Lock()
	f.saved[key]++
	f.mu.Unlock()
	return nil
}

// Load implements store.Store.
func (f *FailingStore) Load(ctx context.Context, key string, fn func(io.Reader) error) error {
	if err := f.inject(ctx, "load", key); err != nil {
		return err
	}
	return f.inner.Load(ctx, key, fn)
}

// Stat implements store.Store.
func (f *FailingStore) Stat(ctx context.Context, key string) (store.FileInfo, error) {
	if err := f.inject(ctx, "stat", key); err != nil {
		return store.FileInfo{}, err
	}
	return f.inner.Stat(ctx, key)
}

// List implements store.Store.
func (f *FailingStore) List(ctx context.Context, prefix string, fn func(store.FileInfo) error) error {
	if err := f.inject(ctx, "list", prefix); err != nil {
		return err
	}
	return f.inner.List(ctx, prefix, fn)
}

// Remove implements store.Store.
func (f *FailingStore) Remove(ctx context.Context, key string) error {
	if err := f.inject(ctx, "remove", key); err != nil {
		return err
	}
	return f.inner.Remove(ctx, key)
}

// URI implements store.Store.
func (f *FailingStore) URI(key string) string { return f.inner.URI(key) }
