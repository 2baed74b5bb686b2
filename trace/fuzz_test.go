package trace_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/tracetest"
)

// fuzzSeeds are the golden traces, a trace that is still running, and cuts
// of them at a few byte offsets: the shapes a kill or a bad copy leaves.
func fuzzSeeds(f *testing.F) {
	f.Helper()
	var docs [][]byte
	for _, name := range []string{"trace_traj.json", "trace_original.json", "trace_running.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		docs = append(docs, b)
	}
	docs = append(docs, tracetest.OriginalTrace())
	for _, doc := range docs {
		f.Add(doc)
		for _, cut := range []int{0, 1, len(doc) / 3, len(doc) / 2, len(doc) - 2, len(doc) - 1} {
			if cut >= 0 && cut < len(doc) {
				f.Add(doc[:cut])
			}
		}
	}
	for _, s := range []string{
		`{}`, `[]`, `null`, `{"turns":[]}`, `{"turns":{}}`, `{"turns":[{"parts":[{"part":"x"}]}]}`,
		`{"turns":[{"turn":1,"parts":[{"part":1},{"part":3}]}],"session_end":null}`,
		`{"turns":[{"parts":[` + "\xff" + `]}]}`, `{"turns":[],"turns":[]}`, `{"a":1}{"b":2}`,
	} {
		f.Add([]byte(s))
	}
}

// FuzzRead: the reader and the validator never panic on any input, agree
// with each other, and accept only well-formed JSON.
func FuzzRead(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, readErr := trace.Read(bytes.NewReader(data))
		probs := trace.Validate(bytes.NewReader(data))
		if readErr == nil && !json.Valid(bytes.TrimSpace(data)) && !startsWithValidObject(data) {
			t.Fatalf("Read accepted input that is not a JSON document: %q", data)
		}
		if len(probs) == 0 && readErr != nil {
			t.Fatalf("Validate found no problem but Read failed: %v", readErr)
		}
		if readErr == nil && tr == nil {
			t.Fatal("Read returned neither a trace nor an error")
		}
		if readErr != nil && readErr.Error() == "" {
			t.Fatal("Read returned an empty error message")
		}
		var scanned int
		scanErr := trace.Scan(bytes.NewReader(data), trace.Visitor{OnPart: func(int, *trace.Part) error { scanned++; return nil }})
		if (scanErr == nil) != (readErr == nil) {
			t.Fatalf("Scan error %v but Read error %v", scanErr, readErr)
		}
		if readErr == nil {
			n := 0
			for _, turn := range tr.Turns {
				n += len(turn.Parts)
			}
			if n != scanned {
				t.Fatalf("Read kept %d parts, Scan visited %d", n, scanned)
			}
		}
	})
}

// startsWithValidObject reports whether data begins with one complete JSON
// value (the reader stops after the document, like json.Decoder).
func startsWithValidObject(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	var v json.RawMessage
	return dec.Decode(&v) == nil
}

// FuzzOpenForAppend: resuming any file either fails with an error and
// leaves the file untouched, or continues it so that after one more part
// the trace still reads, with that part numbered right after the last.
func FuzzOpenForAppend(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "agent_trace.json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		w, err := trace.OpenForAppend(path, trace.WriterOptions{})
		if err != nil {
			after, rerr := os.ReadFile(path)
			if rerr != nil || !bytes.Equal(after, data) {
				t.Fatalf("a refused resume changed the file (%v)", rerr)
			}
			return
		}
		defer w.Close()
		if w.Finished() {
			return
		}
		next := w.LastPart() + 1
		if !w.TurnOpen() {
			if err := w.BeginTurn(trace.TurnStart{Timestamp: tracetest.Time(next), Prompt: "continue", SessionID: "ses_root"}); err != nil {
				t.Fatalf("begin turn after resume: %v", err)
			}
		}
		if err := w.AppendPart(tracetest.Part(next, tracetest.Commit(next))); err != nil {
			t.Fatalf("append part %d after resume: %v", next, err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		out, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := trace.Read(bytes.NewReader(out))
		if err != nil {
			t.Fatalf("trace unreadable after resume and append: %v\ninput %q\noutput %q", err, data, out)
		}
		last := tr.Turns[len(tr.Turns)-1]
		if len(last.Parts) == 0 || last.Parts[len(last.Parts)-1].Part != next {
			t.Fatalf("appended part %d not last in %q", next, out)
		}
	})
}
