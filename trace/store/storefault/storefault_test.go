package storefault_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/storefault"
)

// newFailing is a FailingStore holding l/a, l/b and l/c.
func newFailing(t *testing.T) *storefault.FailingStore {
	f, s := storefault.OnLocal(t)
	for _, k := range []string{"l/a", "l/b", "l/c"} {
		if err := s.Save(context.Background(), k, store.Bytes("body of "+k)); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// TestFaults: each fault shows as its caller meets it.
func TestFaults(t *testing.T) {
	ctx := context.Background()
	f := newFailing(t)

	f.Script(storefault.Save, storefault.SlowDown, storefault.Denied)
	err1 := f.Save(ctx, "k", store.Bytes("x"))
	err2 := f.Save(ctx, "k", store.Bytes("x"))
	err3 := f.Save(ctx, "k", store.Bytes("x"))
	if err1 == nil || store.IsPermanent(err1) || err2 == nil || !store.IsPermanent(err2) || err3 != nil {
		t.Fatalf("scripted saves: %v; %v; %v: want SlowDown, a permanent refusal, then success", err1, err2, err3)
	}
	if got := f.Saved()["k"]; got != 1 {
		t.Fatalf("saved %d times, want 1", got)
	}

	// A listing fails after its first object.
	f.Script(storefault.List, storefault.Error)
	var seen []string
	err := f.List(ctx, "l/", func(fi store.FileInfo) error { seen = append(seen, fi.Key); return nil })
	if err == nil || fmt.Sprint(seen) != "[l/a]" {
		t.Fatalf("faulty listing saw %v, err %v: want l/a, then the error", seen, err)
	}

	// A body cut mid-read.
	f.Script(storefault.Load, storefault.Partial)
	var got []byte
	err = f.Load(ctx, "l/a", func(r io.Reader) error {
		var err error
		got, err = io.ReadAll(r)
		return err
	})
	if !errors.Is(err, storefault.ErrPartial) || string(got) != "bod" {
		t.Fatalf("partial load read %q, err %v", got, err)
	}

	// Decide sees how often a key was tried.
	f.Decide(func(c storefault.Call) storefault.Fault {
		if c.Op == storefault.Stat && c.N == 1 {
			return storefault.Error
		}
		return storefault.None
	})
	if _, err := f.Stat(ctx, "l/b"); err == nil {
		t.Fatal("first stat of l/b went through")
	}
	if _, err := f.Stat(ctx, "l/b"); err != nil {
		t.Fatalf("second stat of l/b: %v", err)
	}
	want := map[storefault.Fault]int{storefault.SlowDown: 1, storefault.Denied: 1, storefault.Error: 2, storefault.Partial: 1}
	if got := f.Injected(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("injected %v, want %v", got, want)
	}
	if n := f.Calls(storefault.Save); n != 3 {
		t.Fatalf("%d saves logged, want 3", n)
	}
}

// TestGate: a held call waits for Release, or fails when its context
// ends; Head shows which body each Save carried.
func TestGate(t *testing.T) {
	f := newFailing(t)
	g := f.Hold(storefault.Save, "held")
	done := make(chan error)
	go func() { done <- f.Save(context.Background(), "held", store.Bytes("v1")) }()
	<-g.Reached()
	select {
	case err := <-done:
		t.Fatalf("held save returned before release: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	g.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	f.Hold(storefault.Save, "stuck") // never released
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := f.Save(ctx, "stuck", store.Bytes("v2")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("held save with an ended context: %v", err)
	}
	var heads []string
	for _, c := range f.Log() {
		heads = append(heads, c.Key+"="+c.Head)
	}
	if fmt.Sprint(heads) != "[held=v1 stuck=v2]" {
		t.Fatalf("log %v", heads)
	}
}
