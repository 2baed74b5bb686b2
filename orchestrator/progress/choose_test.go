package progress

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestViewOpen: --json reports JSON lines on stdout, --quiet reports
// nothing and logs only warnings, otherwise (no terminal) progress goes
// to the command's logger.
func TestViewOpen(t *testing.T) {
	var out, errb, logb bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logb, nil))
	v := View{Stdout: &out, Stderr: &errb, Level: slog.LevelInfo, Logger: logger}
	ev := Event{Type: Warning, Message: "store down"}

	j := v
	j.JSON = true
	sink, log, closeView := j.Open()
	sink.Report(ev)
	closeView()
	if !strings.Contains(out.String(), `"store down"`) || log != logger {
		t.Errorf("--json: stdout %q", out.String())
	}

	q := v
	q.Quiet = true
	sink, log, closeView = q.Open()
	sink.Report(ev)
	log.Info("info line")
	log.Warn("warn line")
	closeView()
	if _, ok := sink.(Discard); !ok || strings.Contains(errb.String(), "info line") || !strings.Contains(errb.String(), "warn line") {
		t.Errorf("--quiet: sink %T, stderr %q", sink, errb.String())
	}

	sink, log, closeView = v.Open()
	sink.Report(ev)
	closeView()
	if _, ok := sink.(Log); !ok || log != logger || !strings.Contains(logb.String(), "store down") {
		t.Errorf("plain: sink %T, log %q", sink, logb.String())
	}
}
