package replay_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/trajlab/traj/replay"
)

func TestProgressBar(t *testing.T) {
	var plain, tty bytes.Buffer
	for _, w := range []struct {
		buf *bytes.Buffer
		tty bool
	}{{&plain, false}, {&tty, true}} {
		bar := replay.NewProgressBar(w.buf, w.tty)
		bar.Tree(replay.Progress{Done: 1, Total: 4, Cached: 1, Commit: strings.Repeat("a", 40)})
		time.Sleep(110 * time.Millisecond)
		bar.Case()
		bar.Case()
		bar.Tree(replay.Progress{Done: 4, Total: 4, Cached: 1, Commit: strings.Repeat("b", 40)})
	}
	if lines := strings.Split(strings.TrimSpace(plain.String()), "\n"); len(lines) != 2 ||
		!strings.HasPrefix(lines[0], "evaluate: 1/4 trees (1 cached)") || !strings.Contains(lines[1], "commit bbbbbbbbbbbb") {
		t.Fatalf("plain progress:\n%s", plain.String())
	}
	out := tty.String()
	if !strings.Contains(out, "\r\x1b[K[") || !strings.Contains(out, "4/4 trees") || !strings.Contains(out, "1/4 trees · 1 cached · 1 cases run") || !strings.Contains(out, "2 cases run") || !strings.HasSuffix(out, "\n") || strings.Count(out, "\n") != 1 {
		t.Fatalf("terminal progress: %q", out)
	}
}
