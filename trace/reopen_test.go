package trace_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/tracetest"
)

// TestReopenFinished: a trace finished as interrupted is reopened by a
// resumed run, continued with a new turn, and finished again; it validates
// at every point and keeps its parts numbered 1..N.
func TestReopenFinished(t *testing.T) {
	path := tracetest.Write(t, filepath.Join(t.TempDir(), "agent_trace.json"),
		tracetest.Spec{Turns: []int{2, 3}, End: trace.EndInterrupted, Artifacts: map[string]string{"agent_trace": "file:///x"}})
	w, err := trace.OpenForAppend(path, trace.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if !w.Finished() {
		t.Fatal("trace not seen as finished")
	}
	if err := w.BeginTurn(trace.TurnStart{Timestamp: tracetest.Time(9), Prompt: "continue"}); err == nil {
		t.Fatal("BeginTurn on a finished trace succeeded")
	}
	if err := w.Reopen(); err != nil {
		t.Fatal(err)
	}
	tr := readTrace(t, path)
	if tr.SessionEnd != nil || len(tr.Artifacts) != 0 || len(tr.Turns) != 2 {
		t.Fatalf("after Reopen: session_end %+v, artifacts %v, %d turns", tr.SessionEnd, tr.Artifacts, len(tr.Turns))
	}
	if err := w.BeginTurn(trace.TurnStart{Timestamp: tracetest.Time(9), Prompt: "continue"}); err != nil {
		t.Fatal(err)
	}
	if err := w.AppendPart(tracetest.Part(6, tracetest.Commit(6))); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(trace.SessionEnd{Reason: trace.EndPartLimit, EndedAt: tracetest.Time(10)}, nil); err != nil {
		t.Fatal(err)
	}
	tr = readTrace(t, path)
	if e := tr.SessionEnd; e == nil || e.Reason != trace.EndPartLimit || e.TotalParts != 6 || e.TotalTurns != 3 {
		t.Fatalf("session_end after resume = %+v", tr.SessionEnd)
	}
	if got := tr.Turns[2].Parts[0].Part; got != 6 {
		t.Fatalf("resumed part numbered %d, want 6", got)
	}
	// Reopen of an unfinished trace changes nothing.
	w2path := tracetest.Write(t, filepath.Join(t.TempDir(), "agent_trace.json"), tracetest.Spec{Turns: []int{1}})
	w2, err := trace.OpenForAppend(w2path, trace.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	b1, _ := os.ReadFile(w2path)
	if err := w2.Reopen(); err != nil {
		t.Fatal(err)
	}
	if b2, _ := os.ReadFile(w2path); !bytes.Equal(b1, b2) {
		t.Fatal("Reopen of an unfinished trace rewrote it")
	}
}

func readTrace(t *testing.T, path string) *trace.Trace {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if probs := trace.Validate(bytes.NewReader(b)); len(probs) > 0 {
		t.Fatalf("trace invalid: %v", probs)
	}
	tr, err := trace.Read(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}
