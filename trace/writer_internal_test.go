package trace

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriterFallbackWithoutExchange forces the temp-file+rename path used
// where renameat2(RENAME_EXCHANGE) is unsupported.
func TestWriterFallbackWithoutExchange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent_trace.json")
	var logs bytes.Buffer
	w, err := Create(path, Header{TrajectoryID: "fb"}, WriterOptions{noExchange: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.BeginTurn(TurnStart{}); err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 20; n++ {
		if err := w.AppendPart(&Part{Part: n, GitCommit: "c"}); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(path)
		var tr Trace
		if err := json.Unmarshal(b, &tr); err != nil {
			t.Fatalf("part %d: %v", n, err)
		}
		if got := len(tr.Turns[0].Parts); got != n {
			t.Fatalf("part %d: file has %d parts", n, got)
		}
	}
	if err := w.Finish(SessionEnd{Reason: EndSolved}, nil); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(path)
	defer f.Close()
	if p := Validate(f); p != nil {
		t.Fatal(p)
	}
	if strings.Count(logs.String(), "RENAME_EXCHANGE") != 1 {
		t.Fatalf("want one warning, got logs:\n%s", logs.String())
	}
	// No temp files left behind.
	ents, _ := os.ReadDir(filepath.Dir(path))
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Fatalf("left %s", e.Name())
		}
	}
}
