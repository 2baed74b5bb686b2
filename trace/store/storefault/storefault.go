// Package storefault wraps a real store.Store so that it fails on purpose:
// connection errors, S3's 503 SlowDown, attempts that hang until their
// timeout, bodies cut mid-read, refusals, whole outages, and gates that
// hold an operation until the test releases it. It is the one
// fault-injecting store of traj's tests (the retry wrapper, the uploader,
// `traj run`, `traj sync`); nothing in the product uses it.
package storefault

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"sync"
	"testing"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/local"
)

// Fault is one kind of injected failure.
type Fault int

// The faults; FailEvery goes through Error, SlowDown and Hang by default.
const (
	None Fault = iota
	// Error is a dropped connection.
	Error
	// SlowDown is S3's throttling answer: HTTP 503 with code SlowDown.
	SlowDown
	// Hang never answers; the call returns when its context ends (the
	// retry wrapper's per-attempt timeout).
	Hang
	// Partial drops the connection mid-body: Save reads half its body
	// first, Load hands its function a body that breaks after 3 bytes,
	// List fails after its first object.
	Partial
	// Denied is a refusal no retry can fix (S3's 403 AccessDenied):
	// store.Permanent.
	Denied
)

func (f Fault) String() string {
	switch f {
	case Error:
		return "error"
	case SlowDown:
		return "slowdown"
	case Hang:
		return "hang"
	case Partial:
		return "partial"
	case Denied:
		return "denied"
	}
	return "none"
}

// Op names a store operation.
type Op string

// The operations of store.Store that can fail.
const (
	Save   Op = "save"
	Load   Op = "load"
	Stat   Op = "stat"
	List   Op = "list"
	Remove Op = "remove"
)

// Call is one call the store received, in the order calls arrived.
type Call struct {
	Op  Op
	Key string // the prefix for List
	// N counts the calls of Op on Key: 1 for the first.
	N int
	// Head is the start of a Save's body (up to HeadBytes), so a test can
	// tell which version of a key went out.
	Head string
}

// HeadBytes is how much of a Save's body Call.Head keeps.
const HeadBytes = 64

// ErrPartial is the cause of a Partial fault.
var ErrPartial = errors.New("connection dropped mid-body (injected)")

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
	script   map[Op][]Fault
	fail     map[Op]error
	decide   func(Call) Fault
	gates    map[gateKey]*Gate
	log      []Call
	perKey   map[gateKey]int
	active   map[string]int // saves in progress per key
	overlap  []string
	injected map[Fault]int
	saved    map[string]int // successful saves per key
}

type gateKey struct {
	op  Op
	key string
}

var _ store.Store = (*FailingStore)(nil)

// New wraps s. Wrap the result in retry.Wrap to test the retries.
func New(s store.Store) *FailingStore {
	return &FailingStore{
		inner: s, script: map[Op][]Fault{}, fail: map[Op]error{}, gates: map[gateKey]*Gate{},
		perKey: map[gateKey]int{}, active: map[string]int{}, injected: map[Fault]int{}, saved: map[string]int{},
	}
}

// OnLocal wraps a new local store in a temporary folder of t; the second
// result is that store itself, to see what arrived past the faults.
func OnLocal(t testing.TB) (*FailingStore, *local.Store) {
	t.Helper()
	s, err := local.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return New(s), s
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

// Script makes the next calls of op take faults in order, one each; once
// they are used up, calls of op go through (or take FailEvery's faults).
func (f *FailingStore) Script(op Op, faults ...Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script[op] = append(f.script[op], faults...)
}

// FailOp makes every call of op return err as it is (a full disk, a
// permission error, …); nil ends it.
func (f *FailingStore) FailOp(op Op, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[op] = err
}

// Decide sets a rule that picks the fault of every call no script,
// outage or FailOp decided, from the call itself (its key, how many
// times that key was tried). It runs under the store's lock.
func (f *FailingStore) Decide(rule func(Call) Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.decide = rule
}

// Gate holds calls of one operation on one key until Release.
type Gate struct {
	reached chan struct{}
	release chan struct{}
	once    sync.Once
}

// Reached receives once for each call that arrives at the gate (up to
// 64 unread).
func (g *Gate) Reached() <-chan struct{} { return g.reached }

// Release lets every held call, and every later one, through. Safe to
// call more than once.
func (g *Gate) Release() { g.once.Do(func() { close(g.release) }) }

// Hold makes calls of op on key wait at a gate until it is released; a
// held call whose context ends returns the context's error.
func (f *FailingStore) Hold(op Op, key string) *Gate {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := &Gate{reached: make(chan struct{}, 64), release: make(chan struct{})}
	f.gates[gateKey{op, key}] = g
	return g
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

// Calls returns how many calls of op arrived (failed ones included).
func (f *FailingStore) Calls(op Op) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.log {
		if c.Op == op {
			n++
		}
	}
	return n
}

// Log returns every call so far, in the order they arrived.
func (f *FailingStore) Log() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.log...)
}

// Overlapping returns the keys that had two Saves in progress at once.
func (f *FailingStore) Overlapping() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.overlap...)
}

// SlowDownError is the error an S3 client returns for 503 SlowDown.
func SlowDownError() error {
	return &smithyhttp.ResponseError{
		Response: &smithyhttp.Response{Response: &http.Response{StatusCode: http.StatusServiceUnavailable}},
		Err:      &smithy.GenericAPIError{Code: "SlowDown", Message: "Please reduce your request rate."},
	}
}

// arrive logs c, waits at its gate, and returns the fault to inject (or
// FailOp's error).
func (f *FailingStore) arrive(ctx context.Context, c Call) (Fault, error) {
	f.mu.Lock()
	k := gateKey{c.Op, c.Key}
	f.perKey[k]++
	c.N = f.perKey[k]
	f.log = append(f.log, c)
	f.calls++
	g := f.gates[k]
	err := f.fail[c.Op]
	fl := None
	if q := f.script[c.Op]; f.down {
		fl = Error
	} else if len(q) > 0 {
		fl, f.script[c.Op] = q[0], q[1:]
	} else if f.decide != nil {
		fl = f.decide(c)
	}
	if fl == None && f.every > 0 && f.calls%f.every == 0 {
		fl = f.kinds[(f.calls/f.every-1)%len(f.kinds)]
	}
	if err == nil && fl != None {
		f.injected[fl]++
	}
	f.mu.Unlock()
	if g != nil {
		select {
		case g.reached <- struct{}{}:
		default: // nobody is watching
		}
		select {
		case <-g.release:
		case <-ctx.Done():
			return None, fmt.Errorf("%s %s: held at a gate: %w", c.Op, c.Key, ctx.Err())
		}
	}
	return fl, err
}

// failure is the error of fault fl (Partial's own effects aside).
func failure(ctx context.Context, op Op, key string, fl Fault) error {
	switch fl {
	case Error:
		return fmt.Errorf("%s %s: connection reset by peer (injected)", op, key)
	case SlowDown:
		return fmt.Errorf("%s %s: %w", op, key, SlowDownError())
	case Hang:
		<-ctx.Done()
		return fmt.Errorf("%s %s: no answer (injected hang): %w", op, key, ctx.Err())
	case Partial:
		return fmt.Errorf("%s %s: %w", op, key, ErrPartial)
	case Denied:
		return store.Permanent(fmt.Errorf("%s %s: access denied (injected)", op, key))
	}
	return nil
}

// simple runs an operation without a body: Stat and Remove.
func (f *FailingStore) simple(ctx context.Context, op Op, key string) error {
	fl, err := f.arrive(ctx, Call{Op: op, Key: key})
	if err != nil {
		return err
	}
	return failure(ctx, op, key, fl)
}

// Save implements store.Store.
func (f *FailingStore) Save(ctx context.Context, key string, src store.Source) error {
	head, err := readHead(src)
	if err != nil {
		return fmt.Errorf("save %s: %w", key, err)
	}
	f.mu.Lock()
	if f.active[key]++; f.active[key] == 2 {
		f.overlap = append(f.overlap, key)
	}
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.active[key]--
		f.mu.Unlock()
	}()
	fl, err := f.arrive(ctx, Call{Op: Save, Key: key, Head: head})
	if err != nil {
		return err
	}
	if fl == Partial {
		rc, size, err := src.Open()
		if err != nil {
			return err
		}
		_, _ = io.CopyN(io.Discard, rc, size/2)
		rc.Close()
	}
	if err := failure(ctx, Save, key, fl); err != nil {
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

func readHead(src store.Source) (string, error) {
	rc, _, err := src.Open()
	if err != nil {
		return "", err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, HeadBytes))
	return string(b), err
}

// Load implements store.Store.
func (f *FailingStore) Load(ctx context.Context, key string, fn func(io.Reader) error) error {
	fl, err := f.arrive(ctx, Call{Op: Load, Key: key})
	if err != nil {
		return err
	}
	if fl == Partial {
		// Hand fn a body that breaks after 3 bytes.
		return f.inner.Load(ctx, key, func(r io.Reader) error {
			return fn(io.MultiReader(io.LimitReader(r, 3), errReader{failure(ctx, Load, key, fl)}))
		})
	}
	if err := failure(ctx, Load, key, fl); err != nil {
		return err
	}
	return f.inner.Load(ctx, key, fn)
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// Stat implements store.Store.
func (f *FailingStore) Stat(ctx context.Context, key string) (store.FileInfo, error) {
	if err := f.simple(ctx, Stat, key); err != nil {
		return store.FileInfo{}, err
	}
	return f.inner.Stat(ctx, key)
}

// List implements store.Store. A fault strikes after the first object
// (before, when there is none), so a retry lists again what fn has seen.
func (f *FailingStore) List(ctx context.Context, prefix string, fn func(store.FileInfo) error) error {
	fl, err := f.arrive(ctx, Call{Op: List, Key: prefix})
	if err != nil {
		return err
	}
	n := 0
	err = f.inner.List(ctx, prefix, func(fi store.FileInfo) error {
		if n++; n == 2 && fl != None {
			return failure(ctx, List, prefix, fl)
		}
		return fn(fi)
	})
	if err == nil && n < 2 {
		err = failure(ctx, List, prefix, fl)
	}
	return err
}

// Remove implements store.Store.
func (f *FailingStore) Remove(ctx context.Context, key string) error {
	if err := f.simple(ctx, Remove, key); err != nil {
		return err
	}
	return f.inner.Remove(ctx, key)
}

// URI implements store.Store.
func (f *FailingStore) URI(key string) string { return f.inner.URI(key) }
