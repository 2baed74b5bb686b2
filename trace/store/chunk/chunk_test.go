package chunk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/chunk"
	"github.com/trajlab/traj/trace/store/local"
	"github.com/trajlab/traj/trace/tracetest"
)

// saveNow is an Enqueuer that saves at once, so each mutation is in the
// store when the writer returns.
type saveNow struct{ st store.Store }

func (s saveNow) Enqueue(key string, src store.Source) error {
	return s.st.Save(context.Background(), key, src)
}

type fixture struct {
	t     *testing.T
	st    *local.Store
	codec *chunk.Codec
	path  string
	w     *trace.Writer
}

const id = "traj-chunks"

func newFixture(t *testing.T) *fixture {
	st, err := local.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	codec, err := chunk.NewCodec()
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, st: st, codec: codec, path: filepath.Join(t.TempDir(), store.TraceName)}
	f.w, err = trace.Create(f.path, tracetest.Header(id), f.opts())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) opts() trace.WriterOptions {
	return trace.WriterOptions{OnChunk: f.codec.Forward(saveNow{f.st}, id, func(err error) { f.t.Error(err) })}
}

// check asserts the chunks rebuild the local trace exactly.
func (f *fixture) check(when string) {
	f.t.Helper()
	got, rep, err := f.codec.RebuildBytes(context.Background(), f.st, store.TrajectoryPrefix(id))
	if err != nil {
		f.t.Fatalf("%s: rebuild: %v", when, err)
	}
	want, err := os.ReadFile(f.path)
	if err != nil {
		f.t.Fatal(err)
	}
	if !bytes.Equal(got, want) || rep.Gap {
		f.t.Fatalf("%s: rebuilt trace differs (gap %v)\n got %q\nwant %q", when, rep.Gap, got, want)
	}
	if _, err := trace.Read(bytes.NewReader(got)); err != nil {
		f.t.Fatalf("%s: rebuilt trace does not parse: %v", when, err)
	}
}

func TestRebuildAfterEveryMutation(t *testing.T) {
	f := newFixture(t)
	f.check("header")
	for turn := 1; turn <= 3; turn++ {
		if err := f.w.BeginTurn(trace.TurnStart{Timestamp: tracetest.Time(turn), Prompt: "go"}); err != nil {
			t.Fatal(err)
		}
		f.check("turn start")
		for i := range 3 {
			n := f.w.LastPart() + 1
			if err := f.w.AppendPart(tracetest.RealisticPart(n, tracetest.Commit(n), 0)); err != nil {
				t.Fatal(err)
			}
			f.check("part")
			if i == 1 {
				if err := f.w.SetTrailingParts([]json.RawMessage{json.RawMessage(`{"type":"step-finish"}`)}); err != nil {
					t.Fatal(err)
				}
				f.check("trailing parts")
			}
		}
		if turn < 3 {
			if err := f.w.EndTurn(trace.TurnEnd{EndedAt: tracetest.Time(turn + 1)}); err != nil {
				t.Fatal(err)
			}
			f.check("turn end")
		}
	}
	if err := f.w.Finish(trace.SessionEnd{Reason: trace.EndPartLimit}, map[string]string{"agent_trace": "x"}); err != nil {
		t.Fatal(err)
	}
	f.check("finish (closes the open turn)")
	if err := f.w.Finish(trace.SessionEnd{Reason: trace.EndPartLimit}, map[string]string{"agent_trace": "y"}); err != nil {
		t.Fatal(err)
	}
	f.check("second finish (tail only)")
	f.w.Close()

	// Resumed by another process: chunks continue at the writer's offset.
	w, err := trace.OpenForAppend(f.path, f.opts())
	if err != nil {
		t.Fatal(err)
	}
	f.w = w
	w.Finish(trace.SessionEnd{Reason: trace.EndInterrupted}, nil)
	f.check("finish after resume")
	w.Close()
}

func TestRebuildStopsAtAGap(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.w.BeginTurn(trace.TurnStart{Timestamp: tracetest.Time(0), Prompt: "go"})
	for n := 1; n <= 6; n++ {
		f.w.AppendPart(tracetest.Part(n, tracetest.Commit(n)))
	}
	f.w.Close()
	// Lose part 4's chunk, as if its upload failed and the run died.
	var lost string
	f.st.List(ctx, store.ChunksPrefix(id), func(fi store.FileInfo) error {
		if strings.HasSuffix(fi.Key, "part-00000004.zst") {
			lost = fi.Key
		}
		return nil
	})
	if lost == "" {
		t.Fatal("no chunk for part 4")
	}
	f.st.Remove(ctx, lost)
	got, rep, err := f.codec.RebuildBytes(ctx, f.st, store.TrajectoryPrefix(id))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Gap || rep.GapEnd <= rep.GapStart {
		t.Fatalf("report %+v, want a gap", rep)
	}
	tr, err := trace.Read(bytes.NewReader(got))
	if err != nil {
		t.Fatalf("trace rebuilt up to the gap does not parse: %v\n%s", err, got)
	}
	if n := len(tr.Turns[0].Parts); n != 3 || *tr.Turns[0].PartEnd != 3 {
		t.Fatalf("rebuilt %d parts (part_end %v), want parts 1-3", n, tr.Turns[0].PartEnd)
	}
}

func TestRebuildErrors(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.w.BeginTurn(trace.TurnStart{Timestamp: tracetest.Time(0), Prompt: "go"})
	f.w.Close()
	if _, _, err := f.codec.RebuildBytes(ctx, f.st, store.TrajectoryPrefix("other")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("no chunks: got %v, want ErrNotFound", err)
	}
	var keys []string
	f.st.List(ctx, store.ChunksPrefix(id), func(fi store.FileInfo) error { keys = append(keys, fi.Key); return nil })
	// A corrupt chunk is an error, not a silently shorter trace.
	f.st.Save(ctx, keys[1], store.Bytes("not zstd"))
	if _, _, err := f.codec.RebuildBytes(ctx, f.st, store.TrajectoryPrefix(id)); err == nil || !store.IsPermanent(err) {
		t.Fatalf("corrupt chunk: got %v, want a permanent error", err)
	}
	f.st.Remove(ctx, keys[0])
	if _, _, err := f.codec.RebuildBytes(ctx, f.st, store.TrajectoryPrefix(id)); err == nil || !strings.Contains(err.Error(), "header chunk is missing") {
		t.Fatalf("missing header: got %v", err)
	}
}
