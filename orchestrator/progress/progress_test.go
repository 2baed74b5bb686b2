package progress

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestJSONLines(t *testing.T) {
	var buf bytes.Buffer
	j := NewJSON(&buf)
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	j.Report(Event{Type: RunStarted, Time: at, TrajectoryID: "t1", MaxParts: 40, Attach: "opencode attach http://127.0.0.1:1"})
	j.Report(Event{Type: PartDone, Time: at, Part: 1, MaxParts: 40, Tool: "bash", TokensTotal: 1234})
	j.Report(Event{Type: Tests, Time: at, Part: 2, Tests: &TestStatus{Path: "basics", Passed: 3, Total: 5, Failed: 2}})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), buf.String())
	}
	var ev map[string]any
	if err := json.Unmarshal([]byte(lines[2]), &ev); err != nil {
		t.Fatal(err)
	}
	if ev["type"] != "tests" || ev["tests"].(map[string]any)["passed"] != 3.0 {
		t.Errorf("tests event = %v", ev)
	}
	if !strings.Contains(lines[0], `"attach":"opencode attach`) || !strings.Contains(lines[1], `"tokens":1234`) {
		t.Errorf("events = %s", buf.String())
	}
}

func TestLineStatus(t *testing.T) {
	var buf bytes.Buffer
	l := NewLine(&buf)
	at := time.Now()
	l.Report(Event{Type: RunStarted, Time: at, TrajectoryID: "t1", Dir: "/runs/t1", MaxParts: 40, Attach: "opencode attach URL"})
	l.Report(Event{Type: PartDone, Time: at, Part: 12, MaxParts: 40, Turn: 2, Tool: "bash", TokensTotal: 18200})
	l.Report(Event{Type: Tests, Time: at, Tests: &TestStatus{Path: "basics", Passed: 7, Total: 20, Failed: 13}})
	l.Close()
	out := buf.String()
	for _, want := range []string{"follow the agent live: opencode attach URL", "part 12/40 · turn 2 · bash · tests basics 7/20 · 18.2k tok"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%q", want, out)
		}
	}
}

func TestLogLines(t *testing.T) {
	var buf bytes.Buffer
	l := Log{L: slog.New(slog.NewTextHandler(&buf, nil))}
	l.Report(Event{Type: RunEnded, Reason: "part_limit", Part: 7, Turn: 1})
	if !strings.Contains(buf.String(), "reason=part_limit") || !strings.Contains(buf.String(), "parts=7") {
		t.Errorf("log = %s", buf.String())
	}
}

func TestLineLogWriter(t *testing.T) {
	var buf bytes.Buffer
	l := NewLine(&buf)
	l.Report(Event{Type: RunStarted, Time: time.Now(), TrajectoryID: "t1", MaxParts: 5})
	log := slog.New(slog.NewTextHandler(l.LogWriter(), nil))
	log.Warn("upload slow")
	l.Close()
	out := buf.String()
	i := strings.Index(out, "level=WARN msg=\"upload slow\"\n")
	if i < 0 || !strings.Contains(out[i:], "part 0/5") {
		t.Errorf("log line not printed above the status line:\n%q", out)
	}
}

// TestGroundTruthScoreString: the status line says when a result is of a
// sample, and never calls one solved.
func TestGroundTruthScoreString(t *testing.T) {
	for _, tt := range []struct {
		g    *GroundTruthScore
		want string
	}{
		{nil, ""},
		{&GroundTruthScore{Passed: 3, Total: 5}, " · truth 3/5"},
		{&GroundTruthScore{Passed: 5, Total: 5, Solved: true}, " · truth 5/5 solved"},
		{&GroundTruthScore{Passed: 10, Total: 10, Sampled: true}, " · truth 10/10 sampled"},
		{&GroundTruthScore{Error: "build timed out"}, " · truth error"},
	} {
		if got := tt.g.String(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.g, got, tt.want)
		}
	}
}
