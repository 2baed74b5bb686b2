package replay

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// ProgressBar draws evaluate's progress on w: on a terminal one bar
// redrawn as trees and test cases finish; otherwise one plain line per
// tree. It is safe for concurrent use.
type ProgressBar struct {
	w     io.Writer
	tty   bool
	start time.Time

	mu       sync.Mutex
	last     Progress
	cases    int
	lastDraw time.Time
}

// NewProgressBar returns a bar writing to w; tty selects the redrawn bar.
func NewProgressBar(w io.Writer, tty bool) *ProgressBar {
	return &ProgressBar{w: w, tty: tty, start: time.Now()}
}

// Tree records a finished tree (EvaluateOptions.Progress).
func (b *ProgressBar) Tree(p Progress) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.last = p
	if !b.tty {
		what := "commit " + short(p.Commit)
		if p.Commit == "" {
			what = "served by the cache"
		}
		fmt.Fprintf(b.w, "evaluate: %d/%d trees (%d cached) %s %s\n", p.Done, p.Total, p.Cached, b.elapsed(), what)
		return
	}
	b.draw()
	if p.Done == p.Total {
		fmt.Fprintln(b.w)
	}
}

// Case records a finished test case in any tree; on a terminal the bar
// shows the running count, redrawn at most ten times a second.
func (b *ProgressBar) Case() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cases++
	if b.tty && time.Since(b.lastDraw) >= 100*time.Millisecond && b.last.Done < b.last.Total {
		b.draw()
	}
}

func (b *ProgressBar) draw() {
	const width = 30
	p := b.last
	filled := 0
	if p.Total > 0 {
		filled = p.Done * width / p.Total
	}
	bar := strings.Repeat("█", filled) + strings.Repeat("░", width-filled)
	fmt.Fprintf(b.w, "\r\x1b[K[%s] %d/%d trees · %d cached · %d cases run · %s", bar, p.Done, p.Total, p.Cached, b.cases, b.elapsed())
	b.lastDraw = time.Now()
}

func (b *ProgressBar) elapsed() time.Duration {
	return time.Since(b.start).Round(100 * time.Millisecond)
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}
