// Package upload is the orchestrator's asynchronous uploader: it takes
// objects to put in a store without ever blocking the per-part path on the
// network, uploads them in the background, and reports at the end what it
// could not upload.
//
// Promises:
//   - Enqueue returns at once. Memory is bounded: queued in-memory bodies
//     may total at most Options.MaxQueuedBytes; beyond that Enqueue refuses
//     the object (ErrQueueFull) and records it as not uploaded. File bodies
//     cost nothing until they are sent.
//   - Ordered per key: two versions of one key are never sent at once, and
//     the newer is sent last. Coalescing: a newer version replaces a queued
//     older one not yet started, so a key updated often is sent at most
//     twice in a row, not once per update.
//   - Across keys, uploads start in first-enqueued order.
//   - Failures (after the store's own retries, see package retry) are
//     kept; Flush tries each once more, waits for the queue, and returns a
//     Report naming every key still not uploaded. With Options.PendingFile
//     that list, with the local file behind each object when there is one,
//     is written to disk so Sync can upload it later.
package upload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/trajlab/traj/trace/store"
)

// ErrQueueFull is returned by Enqueue when in-memory bodies already queued
// reach Options.MaxQueuedBytes.
var ErrQueueFull = errors.New("upload queue full")

// ErrClosed is returned by Enqueue after Close.
var ErrClosed = errors.New("uploader closed")

// Options tune an Uploader. The zero value is usable.
type Options struct {
	// Workers uploading at once; default 2.
	Workers int
	// MaxQueuedBytes bounds queued in-memory (store.Bytes) bodies;
	// default 64 MiB.
	MaxQueuedBytes int64
	// PendingFile, if set, is where Flush records objects it could not
	// upload (and removes the file when there are none).
	PendingFile string
	// Logger gets one warning per failed object; nil logs nothing.
	Logger *slog.Logger
}

// Stats count what the uploader did.
type Stats struct {
	// Objects and Bytes uploaded successfully.
	Objects int64
	Bytes   int64
	// Attempts and AttemptBytes count every Save call and the bytes its
	// source announced, retries of Flush included (the store's own retries
	// are inside one Save).
	Attempts     int64
	AttemptBytes int64
	// Coalesced counts queued versions replaced by a newer one.
	Coalesced int64
	// Failures counts failed Saves (a later success may have fixed them).
	Failures int64
	// Refused counts objects refused by a full queue.
	Refused int64
}

// Failure is an object not uploaded.
type Failure struct {
	Key string `json:"key"`
	// LocalPath is the file behind the object, when it came from one.
	LocalPath string `json:"local_path,omitempty"`
	Err       string `json:"error"`
	At        string `json:"at"`

	src store.Source
}

// Report is Flush's answer.
type Report struct {
	Stats Stats
	// Failed lists objects not uploaded, by key.
	Failed []Failure
}

// Err summarises the failures, or is nil.
func (r Report) Err() error {
	if len(r.Failed) == 0 {
		return nil
	}
	var keys []string
	for _, f := range r.Failed[:min(len(r.Failed), 5)] {
		keys = append(keys, f.Key)
	}
	more := ""
	if len(r.Failed) > len(keys) {
		more = fmt.Sprintf(" and %d more", len(r.Failed)-len(keys))
	}
	return fmt.Errorf("%d objects not uploaded: %s%s (first error: %s)",
		len(r.Failed), strings.Join(keys, ", "), more, r.Failed[0].Err)
}

type job struct {
	key string
	src store.Source
	mem int64 // bytes held in memory by src
}

type keyState struct {
	pending *job // next version to send, not started
	running *job // version being sent
}

// Uploader uploads objects to a store in the background.
type Uploader struct {
	st     store.Store
	opts   Options
	ctx    context.Context // uploads run under it
	cancel context.CancelFunc

	mu       sync.Mutex
	cond     *sync.Cond
	keys     map[string]*keyState
	ready    []string // keys with a pending version and nothing running
	queued   int64    // in-memory bytes pending or running
	running  int
	closed   bool
	failures map[string]Failure
	stats    Stats
	wg       sync.WaitGroup
	now      func() time.Time
}

// New starts an uploader writing to st (normally wrapped in retry). Uploads
// run under ctx; cancel it to abandon them.
func New(ctx context.Context, st store.Store, opts Options) *Uploader {
	if opts.Workers <= 0 {
		opts.Workers = 2
	}
	if opts.MaxQueuedBytes <= 0 {
		opts.MaxQueuedBytes = 64 << 20
	}
	ctx, cancel := context.WithCancel(ctx)
	u := &Uploader{
		st: st, opts: opts, ctx: ctx, cancel: cancel,
		keys: map[string]*keyState{}, failures: map[string]Failure{}, now: time.Now,
	}
	u.cond = sync.NewCond(&u.mu)
	for range opts.Workers {
		u.wg.Add(1)
		go u.work()
	}
	return u
}

// Enqueue schedules src to be saved under key and returns at once.
func (u *Uploader) Enqueue(key string, src store.Source) error {
	if err := store.ValidateKey(key); err != nil {
		return err
	}
	var mem int64
	if b, ok := src.(store.Bytes); ok {
		mem = int64(len(b))
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return fmt.Errorf("enqueue %s: %w", key, ErrClosed)
	}
	ks := u.keys[key]
	var old int64
	if ks != nil && ks.pending != nil {
		old = ks.pending.mem
	}
	if u.queued-old+mem > u.opts.MaxQueuedBytes {
		u.stats.Refused++
		err := fmt.Errorf("enqueue %s (%d bytes): %w (%d bytes queued)", key, mem, ErrQueueFull, u.queued)
		u.fail(key, src, err)
		return err
	}
	j := &job{key: key, src: src, mem: mem}
	u.queued += mem - old
	switch {
	case ks == nil:
		u.keys[key] = &keyState{pending: j}
		u.ready = append(u.ready, key)
	case ks.pending != nil:
		ks.pending = j // keeps its place in the queue
		u.stats.Coalesced++
	default: // running: sent when the running version is done
		ks.pending = j
	}
	u.cond.Signal()
	return nil
}

// fail records a failure; u.mu is held.
func (u *Uploader) fail(key string, src store.Source, err error) {
	f := Failure{Key: key, Err: err.Error(), At: u.now().UTC().Format(time.RFC3339), src: src}
	if p, ok := src.(store.File); ok {
		f.LocalPath = string(p)
	}
	u.failures[key] = f
	u.stats.Failures++
	if u.opts.Logger != nil {
		u.opts.Logger.Warn("upload failed", "key", key, "err", err)
	}
}

func (u *Uploader) work() {
	defer u.wg.Done()
	u.mu.Lock()
	defer u.mu.Unlock()
	for {
		for len(u.ready) == 0 && !u.closed {
			u.cond.Wait()
		}
		if len(u.ready) == 0 {
			return // closed and drained
		}
		key := u.ready[0]
		u.ready = u.ready[1:]
		ks := u.keys[key]
		j := ks.pending
		ks.pending, ks.running = nil, j
		u.running++
		u.mu.Unlock()

		cs := &countingSource{Source: j.src}
		err := u.st.Save(u.ctx, key, cs)

		u.mu.Lock()
		u.running--
		ks.running = nil
		u.queued -= j.mem
		u.stats.Attempts += cs.opens
		u.stats.AttemptBytes += cs.announced
		if err != nil {
			u.fail(key, j.src, fmt.Errorf("save: %w", err))
		} else {
			u.stats.Objects++
			u.stats.Bytes += cs.size
			delete(u.failures, key)
		}
		if ks.pending != nil {
			u.ready = append(u.ready, key)
		} else {
			delete(u.keys, key)
		}
		u.cond.Broadcast()
	}
}

// countingSource records what the store opened.
type countingSource struct {
	store.Source
	opens, announced, size int64
}

func (c *countingSource) Open() (rc io.ReadCloser, size int64, err error) {
	rc, size, err = c.Source.Open()
	if err == nil {
		c.opens++
		c.announced += size
		c.size = size
	}
	return rc, size, err
}

// wait blocks until nothing is queued or running, or ctx ends.
func (u *Uploader) wait(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		u.mu.Lock()
		u.cond.Broadcast()
		u.mu.Unlock()
	})
	defer stop()
	u.mu.Lock()
	defer u.mu.Unlock()
	for len(u.ready) > 0 || u.running > 0 {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		u.cond.Wait()
	}
	return nil
}

// Flush waits for everything enqueued so far, gives each failed object one
// more try, and reports what is still not uploaded (ctx bounds the wait:
// objects still queued when it ends are reported too). With
// Options.PendingFile the report's failures are written there.
func (u *Uploader) Flush(ctx context.Context) (Report, error) {
	werr := u.wait(ctx)
	if werr == nil {
		u.mu.Lock()
		var again []Failure
		for _, f := range u.failures {
			if f.src != nil && u.keys[f.Key] == nil {
				again = append(again, f)
			}
		}
		u.mu.Unlock()
		sort.Slice(again, func(i, j int) bool { return again[i].Key < again[j].Key })
		for _, f := range again {
			u.Enqueue(f.Key, f.src) // a refusal is recorded as a failure
		}
		werr = u.wait(ctx)
	}
	u.mu.Lock()
	if werr != nil {
		for key, ks := range u.keys {
			switch {
			case ks.pending != nil:
				u.fail(key, ks.pending.src, fmt.Errorf("still queued when the flush ended: %w", werr))
			case ks.running != nil:
				u.fail(key, ks.running.src, fmt.Errorf("still uploading when the flush ended: %w", werr))
			}
		}
	}
	rep := Report{Stats: u.stats}
	for _, f := range u.failures {
		rep.Failed = append(rep.Failed, f)
	}
	u.mu.Unlock()
	sort.Slice(rep.Failed, func(i, j int) bool { return rep.Failed[i].Key < rep.Failed[j].Key })
	if u.opts.PendingFile != "" {
		if err := writePending(u.opts.PendingFile, u.st.URI(""), rep.Failed); err != nil {
			return rep, fmt.Errorf("record objects not uploaded: %w", err)
		}
	}
	return rep, nil
}

// Close flushes (see Flush), then stops the workers, abandoning uploads
// still running if ctx ended; later Enqueue calls fail with ErrClosed.
func (u *Uploader) Close(ctx context.Context) (Report, error) {
	rep, err := u.Flush(ctx)
	u.cancel()
	u.mu.Lock()
	u.closed = true
	u.ready = nil // anything left was reported by Flush
	u.cond.Broadcast()
	u.mu.Unlock()
	u.wg.Wait()
	return rep, err
}
