package trace_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/tracetest"
)

// strictParse decodes the file with encoding/json, refusing unknown fields.
func strictParse(t *testing.T, path string) *trace.Trace {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var tr trace.Trace
	if err := dec.Decode(&tr); err != nil {
		t.Fatalf("parse %s: %v\n%s", path, err, tail(b))
	}
	if dec.More() {
		t.Fatalf("%s: data after the document", path)
	}
	return &tr
}

func tail(b []byte) []byte {
	if len(b) > 400 {
		return b[len(b)-400:]
	}
	return b
}

// checkValid runs the full validator and the whole-document schema.
func checkValid(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if probs := trace.Validate(f); len(probs) > 0 {
		t.Fatalf("%s: %v", path, probs)
	}
}

func TestWriterEveryMutationLeavesAValidTrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent_trace.json")
	var chunks bytes.Buffer
	var lastTail, lastData []byte
	var lastOff int64
	w, err := trace.Create(path, tracetest.Header("traj-1"), trace.WriterOptions{
		OnChunk: func(c trace.Chunk) {
			if int64(chunks.Len()) != c.Offset {
				t.Errorf("chunk at offset %d, have %d bytes", c.Offset, chunks.Len())
			}
			chunks.Write(c.Data)
			lastTail = append(lastTail[:0], c.Tail...)
			lastData, lastOff = append(lastData[:0], c.Data...), c.Offset
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	after := func(what string) {
		t.Helper()
		tr := strictParse(t, path)
		checkValid(t, path)
		disk, _ := os.ReadFile(path)
		if got := append(bytes.Clone(chunks.Bytes()), lastTail...); !bytes.Equal(got, disk) {
			t.Fatalf("after %s: chunks+tail differ from the file:\n%s\n---\n%s", what, got, disk)
		}
		shadow, _ := os.ReadFile(trace.ShadowPath(path))
		if !bytes.Equal(shadow, disk) {
			t.Fatalf("after %s: shadow differs from the trace", what)
		}
		// Written hands the recorder the same chunk the callback got.
		if c := w.Written(); c.Offset != lastOff || !bytes.Equal(c.Data, lastData) || !bytes.Equal(c.Tail, lastTail) {
			t.Fatalf("after %s: Written() is the chunk at %d (%d+%d bytes), the callback's at %d (%d+%d)",
				what, c.Offset, len(c.Data), len(c.Tail), lastOff, len(lastData), len(lastTail))
		}
		if n := countParts(tr); n != w.LastPart() {
			t.Fatalf("after %s: file has %d parts, writer says %d", what, n, w.LastPart())
		}
	}
	after("create")
	spec := tracetest.Spec{TrajectoryID: "traj-1", Turns: []int{3, 0, 2}, End: trace.EndPartLimit,
		EnvoiCalls: map[int][]trace.EnvoiCall{2: {tracetest.RunTests("basics", 4, 6)}},
		Artifacts:  map[string]string{trace.ArtifactTrace: "file:///x/agent_trace.json"}}
	n := 0
	for i, count := range spec.Turns {
		if err := w.BeginTurn(trace.TurnStart{Timestamp: tracetest.Time(n), Prompt: "prompt " + string(rune('1'+i)), SessionID: "ses_root"}); err != nil {
			t.Fatal(err)
		}
		after("begin turn")
		for range count {
			n++
			p := tracetest.Part(n, tracetest.Commit(n))
			if c := spec.EnvoiCalls[n]; c != nil {
				p.EnvoiCalls = c
			}
			if err := w.AppendPart(p); err != nil {
				t.Fatal(err)
			}
			after("append part")
		}
		if i == 1 {
			if err := w.SetTrailingParts([]json.RawMessage{json.RawMessage(`{"type":"step-finish","id":"prt_x"}`)}); err != nil {
				t.Fatal(err)
			}
			after("trailing parts")
		}
		if err := w.EndTurn(trace.TurnEnd{EndedAt: tracetest.Time(n)}); err != nil {
			t.Fatal(err)
		}
		after("end turn")
	}
	if err := w.Finish(trace.SessionEnd{Reason: trace.EndPartLimit, EndedAt: tracetest.Time(n + 1)}, nil); err != nil {
		t.Fatal(err)
	}
	after("finish")
	if err := w.Finish(trace.SessionEnd{Reason: trace.EndPartLimit, EndedAt: tracetest.Time(n + 1)}, spec.Artifacts); err != nil {
		t.Fatal(err)
	}
	after("finish again")

	tr := strictParse(t, path)
	want := tracetest.Build(spec)
	want.Turns[1].TrailingParts = []json.RawMessage{json.RawMessage(`{"type":"step-finish","id":"prt_x"}`)}
	if !reflect.DeepEqual(normalize(t, tr), normalize(t, want)) {
		got, _ := json.MarshalIndent(tr, "", " ")
		exp, _ := json.MarshalIndent(want, "", " ")
		t.Fatalf("written trace differs from the built one:\n%s\n---\n%s", got, exp)
	}
	f, _ := os.Open(path)
	defer f.Close()
	read, err := trace.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(normalize(t, read), normalize(t, tr)) {
		t.Fatal("trace.Read differs from encoding/json")
	}
}

// normalize round-trips through JSON so nil and empty compare equal the
// way they serialize.
func normalize(t *testing.T, tr *trace.Trace) any {
	t.Helper()
	b, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func countParts(tr *trace.Trace) int {
	n := 0
	for _, t := range tr.Turns {
		n += len(t.Parts)
	}
	return n
}

func TestWriterRefusesBadCalls(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent_trace.json")
	w, err := trace.Create(path, tracetest.Header("traj-1"), trace.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := trace.Create(path, tracetest.Header("traj-1"), trace.WriterOptions{}); err == nil {
		t.Fatal("Create over an existing trace succeeded")
	}
	c1 := strings.Repeat("c1", 20)
	if err := w.AppendPart(tracetest.Part(1, c1)); err == nil || !strings.Contains(err.Error(), "no open turn") {
		t.Fatalf("append without a turn: %v", err)
	}
	if err := w.BeginTurn(trace.TurnStart{}); err != nil {
		t.Fatal(err)
	}
	if err := w.AppendPart(tracetest.Part(2, strings.Repeat("c2", 20))); err == nil || !strings.Contains(err.Error(), "the next part is 1") {
		t.Fatalf("append part 2 first: %v", err)
	}
	if err := w.AppendPart(tracetest.Part(1, c1)); err != nil {
		t.Fatal(err)
	}
	if err := w.AppendPart(tracetest.Part(1, c1)); err == nil {
		t.Fatal("appending part 1 twice succeeded")
	}
	if err := w.BeginTurn(trace.TurnStart{Turn: 1}); err == nil {
		t.Fatal("turn 1 twice succeeded")
	}
	if err := w.Finish(trace.SessionEnd{Reason: trace.EndSolved}, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.BeginTurn(trace.TurnStart{}); !errors.Is(err, trace.ErrFinished) {
		t.Fatalf("begin turn after finish: %v", err)
	}
	tr := strictParse(t, path)
	if tr.SessionEnd.TotalParts != 1 || tr.SessionEnd.TotalTurns != 1 || tr.SessionEnd.FinalGitCommit != c1 {
		t.Fatalf("session_end = %+v", tr.SessionEnd)
	}
	if tr.Turns[0].EndedAt == "" && tr.Turns[0].PartEnd == nil {
		t.Fatal("finish did not close the open turn")
	}
	checkValid(t, path)
}

func TestOpenForAppend(t *testing.T) {
	tests := []struct {
		name  string
		spec  tracetest.Spec
		open  bool // last turn still open after reopen
		parts int
	}{
		{"open turn with parts", tracetest.Spec{Turns: []int{2, 3}}, true, 5},
		{"open turn without parts", tracetest.Spec{Turns: []int{2, 0}}, true, 2},
		{"only an empty open turn", tracetest.Spec{Turns: []int{0}}, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tracetest.WriteDir(t, t.TempDir(), tt.spec)
			w, err := trace.OpenForAppend(path, trace.WriterOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if w.TurnOpen() != tt.open || w.LastPart() != tt.parts || w.Turns() != len(tt.spec.Turns) {
				t.Fatalf("reopened: open=%v last part=%d turns=%d", w.TurnOpen(), w.LastPart(), w.Turns())
			}
			if w.Header().TrajectoryID != "traj-test" {
				t.Fatalf("header = %+v", w.Header())
			}
			// Continue in the open turn, then in a new turn.
			if err := w.AppendPart(tracetest.Part(tt.parts+1, strings.Repeat("cd", 20))); err != nil {
				t.Fatal(err)
			}
			checkValid(t, path)
			if err := w.BeginTurn(trace.TurnStart{Prompt: "resumed"}); err != nil {
				t.Fatal(err)
			}
			if err := w.AppendPart(tracetest.Part(tt.parts+2, strings.Repeat("ce", 20))); err != nil {
				t.Fatal(err)
			}
			if err := w.Finish(trace.SessionEnd{Reason: trace.EndInterrupted}, nil); err != nil {
				t.Fatal(err)
			}
			tr := strictParse(t, path)
			checkValid(t, path)
			if countParts(tr) != tt.parts+2 || len(tr.Turns) != len(tt.spec.Turns)+1 {
				t.Fatalf("after resume: %d parts, %d turns", countParts(tr), len(tr.Turns))
			}
			if got := tr.Turns[len(tr.Turns)-1].Turn; got != len(tt.spec.Turns)+1 {
				t.Fatalf("resumed turn number %d", got)
			}
		})
	}

	t.Run("closed trace reopens finished", func(t *testing.T) {
		path := tracetest.WriteDir(t, t.TempDir(), tracetest.Spec{Turns: []int{1}, End: trace.EndSolved})
		w, err := trace.OpenForAppend(path, trace.WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if !w.Finished() {
			t.Fatal("not finished")
		}
		if err := w.BeginTurn(trace.TurnStart{}); !errors.Is(err, trace.ErrFinished) {
			t.Fatalf("begin turn: %v", err)
		}
		if err := w.Finish(trace.SessionEnd{Reason: trace.EndSolved}, map[string]string{trace.ArtifactBundle: "file:///b"}); err != nil {
			t.Fatal(err)
		}
		tr := strictParse(t, path)
		if tr.Artifacts[trace.ArtifactBundle] != "file:///b" || tr.Turns[0].EndedAt == "" {
			t.Fatalf("refinished: %+v", tr)
		}
		checkValid(t, path)
	})

	t.Run("original layout is refused untouched", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "agent_trace.json")
		orig := tracetest.OriginalTrace()
		// An unfinished original trace: drop session_end.
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(orig, &doc); err != nil {
			t.Fatal(err)
		}
		delete(doc, "session_end")
		b, _ := json.Marshal(doc) // keys sorted: artifacts before turns
		os.WriteFile(path, b, 0o644)
		if _, err := trace.OpenForAppend(path, trace.WriterOptions{}); err == nil || !strings.Contains(err.Error(), "cannot be continued") {
			t.Fatalf("OpenForAppend: %v", err)
		}
		after, _ := os.ReadFile(path)
		if !bytes.Equal(after, b) {
			t.Fatal("refused trace was modified")
		}
	})

	t.Run("truncated trace is refused", func(t *testing.T) {
		path := tracetest.WriteDir(t, t.TempDir(), tracetest.Spec{Turns: []int{2}})
		b, _ := os.ReadFile(path)
		os.WriteFile(path, b[:len(b)/2], 0o644)
		if _, err := trace.OpenForAppend(path, trace.WriterOptions{}); err == nil || !strings.Contains(err.Error(), "byte offset") {
			t.Fatalf("OpenForAppend: %v", err)
		}
	})
}

func TestWriterSync(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent_trace.json")
	w, err := trace.Create(path, tracetest.Header("traj-sync"), trace.WriterOptions{Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.BeginTurn(trace.TurnStart{})
	for n := 1; n <= 5; n++ {
		if err := w.AppendPart(tracetest.RealisticPart(n, tracetest.Commit(n), 0)); err != nil {
			t.Fatal(err)
		}
	}
	if tr := strictParse(t, path); countParts(tr) != 5 {
		t.Fatalf("%d parts", countParts(tr))
	}
	checkValid(t, path)
}

// TestAppendPartAllocations guards the bounded-memory promise: appending
// does not copy the trace, so the bytes allocated per part stay far below
// the trace size.
func TestAppendPartAllocations(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent_trace.json")
	w, err := trace.Create(path, tracetest.Header("allocs"), trace.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.BeginTurn(trace.TurnStart{})
	p := tracetest.RealisticPart(1, tracetest.Commit(1), 4096)
	const parts = 1000
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for n := 1; n <= parts; n++ {
		p.Part = n
		if err := w.AppendPart(p); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	st, _ := os.Stat(path)
	perPart := (after.TotalAlloc - before.TotalAlloc) / parts
	// The trace is ~4 MB by the end; a copy per part would show as MBs.
	if perPart > 16<<10 {
		t.Fatalf("%d bytes allocated per appended part (trace is %d bytes)", perPart, st.Size())
	}
}

func TestSecondWriterIsRefused(t *testing.T) {
	path := tracetest.WriteDir(t, t.TempDir(), tracetest.Spec{Turns: []int{2}})
	w, err := trace.OpenForAppend(path, trace.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	if _, err := trace.OpenForAppend(path, trace.WriterOptions{}); !errors.Is(err, trace.ErrLocked) {
		t.Fatalf("second OpenForAppend: %v", err)
	}
	if err := w.AppendPart(tracetest.Part(3, strings.Repeat("c3", 20))); err != nil {
		t.Fatalf("first writer after the refused one: %v", err)
	}
	shadow, _ := os.ReadFile(trace.ShadowPath(path))
	after, _ := os.ReadFile(path)
	if !bytes.Equal(shadow, after) || len(after) <= len(before) {
		t.Fatal("the refused writer disturbed the files")
	}
	w.Close()
	w2, err := trace.OpenForAppend(path, trace.WriterOptions{})
	if err != nil {
		t.Fatalf("reopen after Close: %v", err)
	}
	w2.Close()
}
