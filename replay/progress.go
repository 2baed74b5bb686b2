package replay

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// ProgressBar returns a Progress callback drawing evaluate's progress on w:
// a redrawn bar when tty is set, otherwise one plain line per tree. It is
// safe for concurrent calls.
func ProgressBar(w io.Writer, tty bool) func(Progress) {
	var mu sync.Mutex
	start := time.Now()
	return func(p Progress) {
		mu.Lock()
		defer mu.Unlock()
		elapsed := time.Since(start).Round(100 * time.Millisecond)
		if !tty {
			fmt.Fprintf(w, "evaluate: %d/%d trees (%d cached) %s commit %s\n", p.Done, p.Total, p.Cached, elapsed, short(p.Commit))
			return
		}
		const width = 30
		filled := 0
		if p.Total > 0 {
			filled = p.Done * width / p.Total
		}
		bar := strings.Repeat("█", filled) + strings.Repeat("░", width-filled)
		fmt.Fprintf(w, "\r\x1b[K[%s] %d/%d trees · %d cached · %s", bar, p.Done, p.Total, p.Cached, elapsed)
		if p.Done == p.Total {
			fmt.Fprintln(w)
		}
	}
}

// IsTerminal reports whether w is a character device (a terminal).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}
