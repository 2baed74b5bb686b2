package export

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"

	"github.com/trajlab/traj/sandbox/agent"
	"github.com/trajlab/traj/sandbox/harness/recorded"
	"github.com/trajlab/traj/trace"
)

// The export's read of a trace: what trace.Scan gives, in the same order
// and with the same values, but each part decoded once and on all cores.
// One goroutine walks the file by byte offset (trace.ScanOffsets, at
// memory speed); batches of parts go to decoders, one per core, each
// decoding a part's trace fields (decodePart) and its harness objects
// (the part's view, sessions, messages); the export's own code then sees
// the parts in document order on one goroutine, as before. The trace's
// part index is not read: an export reads every part, and the walk that
// finds them costs less than checking an index against the trace.

// decodedPart is one part as the export reads it.
type decodedPart struct {
	trace.Part
	// view is the part's content as its harness's reader reads it.
	view partView
	// sessions are the session objects the reader could read; models
	// the models of the new messages it could read.
	sessions []agent.Session
	models   []messageRef
	// usage is the per-call usage of each of OtherParts the reader
	// found one in (only when readOptions.otherUsage).
	usage []usage
	// extra is what readOptions.extra made of the part.
	extra []byte
}

// messageRef is a new message's id and the model its call used.
type messageRef struct{ id, model string }

// traceVisitor receives a trace as readTrace walks it; the callbacks are
// trace.Visitor's, with the part decoded.
type traceVisitor struct {
	OnHeader func(h *trace.Header) error
	OnPart   func(turn int, d *decodedPart) error
	OnTurn   func(index int, t *trace.Turn) error
	OnEnd    func(t *trace.Trace) error
}

// readOptions say what each part's decoder reads besides its view.
type readOptions struct {
	// otherUsage reads the per-call usage in each part's other_parts.
	otherUsage bool
	// reuse says the visitor keeps nothing of a part (its bytes, its
	// Content, OtherParts, Sessions, NewMessages) after OnPart returns:
	// a batch's memory is then used again for a later batch. Fresh memory
	// is what an export pays most for after decoding (a page fault per
	// page touched).
	reuse bool
	// extra, when set, is run on each part by its decoder.
	extra func(p *trace.Part, turn int) ([]byte, error)
}

// prepare reads d's harness objects with r (what the export's code used
// to read one by one, part by part).
func (o readOptions) prepare(d *decodedPart, r agent.Reader) error {
	d.view = viewPart(&d.Part, r)
	if len(d.Content) > 0 && !d.view.read && !json.Valid(d.Content) {
		// trace.Scan refused a part whose content is not JSON; so do we
		// (a content the reader read was decoded, hence checked).
		return errors.New("content: invalid JSON")
	}
	for _, raw := range d.Sessions {
		if s, ok := r.Session(raw); ok {
			d.sessions = append(d.sessions, s)
		}
	}
	for _, raw := range d.NewMessages {
		if id, model := messageModel(raw, r); id != "" && model != "" {
			d.models = append(d.models, messageRef{id, model})
		}
	}
	if o.otherUsage {
		for _, raw := range d.OtherParts {
			if u, ok := modelCallUsage(raw, r); ok {
				d.usage = append(d.usage, u)
			}
		}
	}
	return nil
}

// readBatch is a run of consecutive items of the trace, decoded by one
// worker; done is closed when its parts are decoded.
type readBatch struct {
	items []readItem
	// arena holds the items' parts, copied out of the walk's window.
	arena []byte
	r     agent.Reader
	done  chan struct{}
}

type itemKind uint8

const (
	itemHeader itemKind = iota
	itemPart
	itemTurn
	itemEnd
)

// readItem is one callback's worth of the trace.
type readItem struct {
	kind   itemKind
	turn   int // part: its turn's position; turn: its position
	index  int // part: its position in its turn
	end    int64
	raw    []byte // part: its bytes, owned by the item
	header *trace.Header
	t      *trace.Turn
	doc    *trace.Trace
	part   decodedPart
	err    error
}

// Batches close at readBatchBytes of parts or readBatchItems items.
const (
	readBatchBytes = 256 << 10
	readBatchItems = 64
)

// readTrace walks the trace at path, calling v as trace.Scan would; the
// parts are decoded on up to workers goroutines (0: one per core).
func readTrace(ctx context.Context, path string, workers int, o readOptions, v traceVisitor) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pool := &batchPool{}
	jobs := make(chan *readBatch, workers)
	order := make(chan *readBatch, 2*workers+2)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range jobs {
				for i := range b.items {
					it := &b.items[i]
					if it.kind == itemPart {
						it.err = decodeItem(it, b.r, o)
					}
				}
				close(b.done)
			}
		}()
	}
	scanErr := make(chan error, 1)
	go func() {
		defer close(jobs)
		defer close(order)
		scanErr <- scanItems(ctx, f, fi.Size(), pool, func(b *readBatch) bool {
			select {
			case order <- b:
			case <-ctx.Done():
				return false
			}
			select {
			case jobs <- b:
				return true
			case <-ctx.Done():
				return false
			}
		})
	}()
	// The consumer: every item in document order, on this goroutine.
	var verr error
	for b := range order {
		select {
		case <-b.done:
		case <-ctx.Done():
			// Cancelled: the scan may stop between handing b to this
			// loop and to a decoder, so b.done may never close.
		}
		if ctx.Err() != nil {
			break
		}
		for i := range b.items {
			if verr = visitItem(&b.items[i], v); verr != nil {
				break
			}
		}
		if verr != nil {
			break
		}
		if o.reuse {
			clear(b.items)
			pool.put(b)
		}
	}
	cancel()
	for range order { // let the scan goroutine finish
	}
	serr := <-scanErr
	wg.Wait()
	if verr != nil {
		return verr
	}
	if err := parent.Err(); err != nil {
		return err
	}
	return serr
}

func visitItem(it *readItem, v traceVisitor) error {
	if it.err != nil {
		return it.err
	}
	switch it.kind {
	case itemHeader:
		if v.OnHeader != nil {
			return v.OnHeader(it.header)
		}
	case itemPart:
		if v.OnPart != nil {
			return v.OnPart(it.turn, &it.part)
		}
	case itemTurn:
		if v.OnTurn != nil {
			return v.OnTurn(it.turn, it.t)
		}
	case itemEnd:
		if v.OnEnd != nil {
			return v.OnEnd(it.doc)
		}
	}
	return nil
}

// decodeItem decodes a part item where trace.Scan would: its error is
// the ScanError Scan gave.
func decodeItem(it *readItem, r agent.Reader, o readOptions) error {
	path := "$.turns[" + strconv.Itoa(it.turn) + "].parts[" + strconv.Itoa(it.index) + "]"
	if err := decodePart(it.raw, &it.part.Part); err != nil {
		return &trace.ScanError{Path: path, Offset: it.end, Err: err}
	}
	if err := o.prepare(&it.part, r); err != nil {
		return &trace.ScanError{Path: path, Offset: it.end, Err: err}
	}
	if o.extra != nil {
		var err error
		if it.part.extra, err = o.extra(&it.part.Part, it.turn); err != nil {
			return &trace.ScanError{Path: path, Offset: it.end, Err: err}
		}
	}
	return nil
}

// scanItems walks the trace by byte offset and hands batches of items to
// send in document order (send false: stop). It decodes what trace.Scan
// decodes besides the parts: the header (at the turns key, from the
// fields before it), each turn's own fields, the whole top level at the
// end; and it refuses data after the trace object, as Scan does.
func scanItems(ctx context.Context, f *os.File, size int64, pool *batchPool, send func(*readBatch) bool) error {
	var (
		top, turnObj trace.ObjectBuilder
		headerDone   bool
		r            = recorded.Reader("")
		b            = pool.get()
		turnParts    int
		stopped      = errors.New("stopped")
	)
	flush := func() error {
		if len(b.items) == 0 {
			return nil
		}
		b.r = r
		if !send(b) {
			return stopped
		}
		b = pool.get()
		return ctx.Err()
	}
	add := func(it readItem) error {
		b.items = append(b.items, it)
		if len(b.items) >= readBatchItems || len(b.arena) >= readBatchBytes {
			return flush()
		}
		return nil
	}
	header := func() error {
		if headerDone {
			return nil
		}
		headerDone = true
		var h trace.Header
		if err := json.Unmarshal(top.Bytes(), &h); err != nil {
			return add(readItem{kind: itemHeader, err: &trace.ScanError{Path: "$", Err: err}})
		}
		// The parts after the header are read with its harness's reader,
		// as the export's code reads them (sessionMap.setAgent). The
		// items before are sent first: a batch has one reader.
		if err := flush(); err != nil {
			return err
		}
		r = recorded.Reader(h.Agent)
		return add(readItem{kind: itemHeader, header: &h})
	}
	turnEnd := func(ti int) error {
		var t trace.Turn
		if err := json.Unmarshal(turnObj.Bytes(), &t); err != nil {
			return add(readItem{kind: itemTurn, err: &trace.ScanError{Path: "$.turns[" + strconv.Itoa(ti) + "]", Err: err}})
		}
		return add(readItem{kind: itemTurn, turn: ti, t: &t})
	}
	err := trace.ScanOffsets(f, size, trace.ScanFrom{}, trace.OffsetVisitor{
		Field: func(key string, raw []byte) error {
			top.Add(key, raw)
			return nil
		},
		Turns: func() error {
			if err := header(); err != nil {
				return err
			}
			top.Add("turns", []byte("[]"))
			return nil
		},
		TurnBegin: func(int) error {
			turnParts = 0
			turnObj.Reset()
			return nil
		},
		TurnField: func(_ int, key string, raw []byte) error {
			turnObj.Add(key, raw)
			return nil
		},
		TurnParts: func(int) error {
			turnObj.Add("parts", []byte("[]"))
			return nil
		},
		TurnEnd: turnEnd,
		Part: func(ti int, off int64, raw []byte) error {
			// Parts are copied out of the walk's window into their
			// batch's arena, not one allocation each; a part that does
			// not fit goes into the next batch (never a grown arena: the
			// items before point into it).
			if cap(b.arena)-len(b.arena) < len(raw) {
				if len(b.arena) > 0 {
					if err := flush(); err != nil {
						return err
					}
				}
				if cap(b.arena) < len(raw) {
					b.arena = make([]byte, 0, len(raw))
				}
			}
			n := len(b.arena)
			b.arena = append(b.arena, raw...)
			it := readItem{kind: itemPart, turn: ti, index: turnParts, end: off + int64(len(raw)), raw: b.arena[n:len(b.arena):len(b.arena)]}
			turnParts++
			return add(it)
		},
		End: func(off int64) error {
			return checkTail(f, size, off)
		},
	})
	if errors.Is(err, stopped) {
		return ctx.Err()
	}
	if err != nil {
		var se *trace.ScanError
		if !errors.As(err, &se) {
			err = &trace.ScanError{Path: "$", Err: err}
		}
		return err
	}
	if err := header(); err != nil {
		return err
	}
	end := readItem{kind: itemEnd, doc: &trace.Trace{}}
	if derr := json.Unmarshal(top.Bytes(), end.doc); derr != nil {
		end = readItem{kind: itemEnd, err: &trace.ScanError{Path: "$", Offset: size, Err: derr}}
	}
	if err := add(end); err != nil {
		return err
	}
	return flush()
}

// batchPool keeps batches whose items were visited, for a visitor that
// keeps nothing of them (readOptions.reuse).
type batchPool struct {
	mu   sync.Mutex
	free []*readBatch
}

func (p *batchPool) get() *readBatch {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		b := p.free[n-1]
		p.free = p.free[:n-1]
		b.items, b.arena, b.done = b.items[:0], b.arena[:0], make(chan struct{})
		return b
	}
	return &readBatch{arena: make([]byte, 0, readBatchBytes), done: make(chan struct{})}
}

func (p *batchPool) put(b *readBatch) {
	if cap(b.arena) > 4*readBatchBytes {
		return // one huge part's: not kept
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free = append(p.free, b)
}

// readTurns calls fn with each turn's own fields, as trace.Scan's
// OnTurn would, walking the trace by byte offset without decoding a
// part.
func readTurns(path string, fn func(i int, t *trace.Turn) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	var obj trace.ObjectBuilder
	return trace.ScanOffsets(f, fi.Size(), trace.ScanFrom{}, trace.OffsetVisitor{
		TurnBegin: func(int) error { obj.Reset(); return nil },
		TurnField: func(_ int, key string, raw []byte) error { obj.Add(key, raw); return nil },
		TurnParts: func(int) error { obj.Add("parts", []byte("[]")); return nil },
		TurnEnd: func(ti int) error {
			var t trace.Turn
			if err := json.Unmarshal(obj.Bytes(), &t); err != nil {
				return &trace.ScanError{Path: "$.turns[" + strconv.Itoa(ti) + "]", Err: err}
			}
			return fn(ti, &t)
		},
	})
}

// checkTail refuses anything but white space after the trace object,
// which ends at byte off.
func checkTail(f *os.File, size, off int64) error {
	buf := make([]byte, 4096)
	for pos := off; pos < size; {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), size-pos)], pos)
		for i, c := range buf[:n] {
			if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
				return &trace.ScanError{Path: "$", Offset: pos + int64(i), Err: fmt.Errorf("unexpected data after the trace object")}
			}
		}
		if err != nil {
			return err
		}
		pos += int64(n)
	}
	return nil
}
