// Package progress shows a run's progress: one live status line on a
// terminal, plain log lines otherwise, and JSON-lines events for programs.
//
// JSON events (one object per line, field "type"):
//
//	run_started   trajectory_id, dir (local trajectory folder), attach (the
//	              `opencode attach` command), max_parts, model, task
//	turn_started  turn, part (parts so far)
//	tool_started  tool, session_id, part (parts so far), turn: a tool began
//	part          part, max_parts, turn, session_id, part_type, tool,
//	              committed, git_commit, tokens (total so far), cost
//	tests         part, tests {path, passed, failed, total, error}
//	ground_truth  part (whose checkpoint), ground_truth {passed, failed,
//	              total, solved, error, sampled}: traj's own evaluation
//	              landed (sampled: of a fixed sample of the suites' cases)
//	turn_ended    turn, part
//	warning       message
//	run_ended     reason, part, turn, git_commit, tokens, cost, artifacts,
//	              message (detail)
//
// Every event has "time" (RFC 3339) and "elapsed_ms" since the run started.
package progress

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Event types.
const (
	RunStarted  = "run_started"
	TurnStarted = "turn_started"
	ToolStarted = "tool_started"
	PartDone    = "part"
	Tests       = "tests"
	GroundTruth = "ground_truth"
	TurnEnded   = "turn_ended"
	Warning     = "warning"
	Finishing   = "finishing"
	RunEnded    = "run_ended"
)

// Event is one progress report.
type Event struct {
	Type         string            `json:"type"`
	Time         time.Time         `json:"time"`
	ElapsedMs    int64             `json:"elapsed_ms"`
	TrajectoryID string            `json:"trajectory_id,omitempty"`
	Task         string            `json:"task,omitempty"`
	Model        string            `json:"model,omitempty"`
	Dir          string            `json:"dir,omitempty"`
	Attach       string            `json:"attach,omitempty"`
	Turn         int               `json:"turn,omitempty"`
	Part         int               `json:"part,omitempty"`
	MaxParts     int               `json:"max_parts,omitempty"`
	SessionID    string            `json:"session_id,omitempty"`
	PartType     string            `json:"part_type,omitempty"`
	Tool         string            `json:"tool,omitempty"`
	Committed    bool              `json:"committed,omitempty"`
	GitCommit    string            `json:"git_commit,omitempty"`
	TokensTotal  int64             `json:"tokens,omitempty"`
	Cost         float64           `json:"cost,omitempty"`
	Tests        *TestStatus       `json:"tests,omitempty"`
	GroundTruth  *GroundTruthScore `json:"ground_truth,omitempty"`
	Reason       string            `json:"reason,omitempty"`
	Message      string            `json:"message,omitempty"`
	Artifacts    map[string]string `json:"artifacts,omitempty"`
}

// TestStatus is one run_tests result in brief.
type TestStatus struct {
	Path   string `json:"path"`
	Passed int    `json:"passed"`
	Failed int    `json:"failed"`
	Total  int    `json:"total"`
	Error  string `json:"error,omitempty"`
}

func (t *TestStatus) String() string {
	if t == nil {
		return "-"
	}
	if t.Error != "" {
		return t.Path + " error"
	}
	return fmt.Sprintf("%s %d/%d", t.Path, t.Passed, t.Total)
}

// GroundTruthScore is one ground-truth result in brief.
type GroundTruthScore struct {
	Passed int64  `json:"passed"`
	Failed int64  `json:"failed"`
	Total  int64  `json:"total"`
	Solved bool   `json:"solved"`
	Error  string `json:"error,omitempty"`
	// Sampled: the counts are of a fixed sample of the suites' cases.
	Sampled bool `json:"sampled,omitempty"`
}

func (g *GroundTruthScore) String() string {
	switch {
	case g == nil:
		return ""
	case g.Error != "":
		return " · truth error"
	case g.Solved:
		return fmt.Sprintf(" · truth %d/%d solved", g.Passed, g.Total)
	case g.Sampled:
		return fmt.Sprintf(" · truth %d/%d sampled", g.Passed, g.Total)
	}
	return fmt.Sprintf(" · truth %d/%d", g.Passed, g.Total)
}

// Sink receives events. Implementations are safe for concurrent use.
type Sink interface {
	Report(ev Event)
}

// Multi fans events out to several sinks.
type Multi []Sink

// Report implements Sink.
func (m Multi) Report(ev Event) {
	for _, s := range m {
		s.Report(ev)
	}
}

// Discard drops every event.
type Discard struct{}

// Report implements Sink.
func (Discard) Report(Event) {}

// JSON writes each event as one JSON line.
type JSON struct {
	mu sync.Mutex
	w  io.Writer
}

// NewJSON returns a JSON-lines sink writing to w.
func NewJSON(w io.Writer) *JSON { return &JSON{w: w} }

// Report implements Sink.
func (j *JSON) Report(ev Event) {
	b, err := json.Marshal(ev)
	if err != nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	_, _ = j.w.Write(append(b, '\n'))
}

// Log writes events as slog lines (for logs and non-terminals). Part
// events are logged at debug level except every tenth, so long runs stay
// readable.
type Log struct{ L *slog.Logger }

// Report implements Sink.
func (l Log) Report(ev Event) {
	switch ev.Type {
	case RunStarted:
		l.L.Info("run started", "trajectory_id", ev.TrajectoryID, "task", ev.Task, "model", ev.Model,
			"max_parts", ev.MaxParts, "dir", ev.Dir)
		if ev.Attach != "" {
			l.L.Info("follow the agent live", "command", ev.Attach)
		}
	case TurnStarted:
		l.L.Info("turn started", "turn", ev.Turn, "parts", ev.Part)
	case ToolStarted:
		l.L.Debug("tool started", "tool", ev.Tool, "session", ev.SessionID, "parts", ev.Part)
	case PartDone:
		lvl := slog.LevelDebug
		if ev.Committed || ev.Part%10 == 0 || ev.Part == ev.MaxParts {
			lvl = slog.LevelInfo
		}
		l.L.Log(context.Background(), lvl, "part", "part", ev.Part, "max_parts", ev.MaxParts, "turn", ev.Turn,
			"type", ev.PartType, "tool", ev.Tool, "committed", ev.Committed, "tokens", ev.TokensTotal)
	case GroundTruth:
		g := ev.GroundTruth
		l.L.Info("ground truth", "part", ev.Part, "passed", g.Passed, "failed", g.Failed, "total", g.Total,
			"solved", g.Solved, "sampled", g.Sampled, "error", g.Error)
	case Tests:
		l.L.Info("tests", "part", ev.Part, "path", ev.Tests.Path, "passed", ev.Tests.Passed,
			"failed", ev.Tests.Failed, "total", ev.Tests.Total, "error", ev.Tests.Error)
	case TurnEnded:
		l.L.Info("turn ended", "turn", ev.Turn, "parts", ev.Part)
	case Warning:
		l.L.Warn(ev.Message)
	case Finishing:
		l.L.Warn(ev.Message)
	case RunEnded:
		l.L.Info("run ended", "reason", ev.Reason, "parts", ev.Part, "turns", ev.Turn,
			"final_git_commit", ev.GitCommit, "tokens", ev.TokensTotal, "detail", ev.Message)
	}
}

// Line keeps one live status line on a terminal:
//
//	part 12/40 · turn 2 · bash · tests basics 7/20 · 18.2k tok · 1m12s
//
// Notable events (run start, attach command, warnings, end) are printed
// above it. Close stops the clock and ends the line.
type Line struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
	now   func() time.Time
	state Event
	best  *TestStatus
	// truth is the ground truth of the newest checkpoint evaluated.
	truth     *GroundTruthScore
	truthPart int
	lastLen   int
	started   bool // run_started seen
	ended     bool // run_ended seen: nothing more to draw
	stop      chan struct{}
	done      chan struct{}
}

// NewLine starts a status line on w, redrawn at least every second.
func NewLine(w io.Writer) *Line {
	l := &Line{w: w, start: time.Now(), now: time.Now, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-t.C:
				l.mu.Lock()
				l.draw()
				l.mu.Unlock()
			}
		}
	}()
	return l
}

// Report implements Sink.
func (l *Line) Report(ev Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch ev.Type {
	case RunStarted:
		l.started = true
		l.state.MaxParts = ev.MaxParts
		l.printAbove(fmt.Sprintf("trajectory %s → %s", ev.TrajectoryID, ev.Dir))
		if ev.Attach != "" {
			l.printAbove("follow the agent live: " + ev.Attach)
		}
	case TurnStarted:
		l.state.Turn = ev.Turn
	case ToolStarted:
		l.state.Tool = ev.Tool + "…"
	case PartDone:
		l.state.Part, l.state.Turn = ev.Part, ev.Turn
		l.state.TokensTotal = ev.TokensTotal
		l.state.Tool = ev.Tool
		if ev.Tool == "" {
			l.state.Tool = ev.PartType
		}
	case GroundTruth:
		// The newest checkpoint's result, not the best: a regression shows.
		if l.truthPart <= ev.Part {
			l.truthPart, l.truth = ev.Part, ev.GroundTruth
		}
	case Tests:
		t := *ev.Tests
		if l.best == nil || t.Error == "" && t.Passed >= l.best.Passed {
			l.best = &t
		}
	case Warning:
		l.printAbove("warning: " + ev.Message)
	case Finishing:
		l.printAbove(ev.Message)
	case RunEnded:
		l.state.Part = ev.Part
		l.draw()
		l.ended = true
		l.printAbove(fmt.Sprintf("run ended: %s after %d parts, %d turns", ev.Reason, ev.Part, ev.Turn))
		return
	}
	l.draw()
}

func (l *Line) printAbove(s string) {
	fmt.Fprintf(l.w, "\r%s\r%s\n", strings.Repeat(" ", l.lastLen), s)
	l.lastLen = 0
	l.draw()
}

func (l *Line) draw() {
	if l.ended {
		return
	}
	s := l.state
	elapsed := l.now().Sub(l.start).Truncate(time.Second)
	if !l.started {
		l.put(fmt.Sprintf("starting the sandbox and the agent server · %s", elapsed))
		return
	}
	l.put(fmt.Sprintf("part %d/%d · turn %d · %s · tests %s%s · %s tok · %s",
		s.Part, s.MaxParts, s.Turn, orDash(s.Tool), l.best.String(), l.truth.String(), humanCount(s.TokensTotal), elapsed))
}

// put replaces the status line with line.
func (l *Line) put(line string) {
	pad := ""
	if n := len([]rune(line)); n < l.lastLen {
		pad = strings.Repeat(" ", l.lastLen-n)
	}
	fmt.Fprintf(l.w, "\r%s%s", line, pad)
	l.lastLen = len([]rune(line))
}

// LogWriter returns a writer whose output (log lines) is printed above the
// status line instead of through it.
func (l *Line) LogWriter() io.Writer { return lineLog{l} }

type lineLog struct{ l *Line }

func (w lineLog) Write(p []byte) (int, error) {
	w.l.mu.Lock()
	defer w.l.mu.Unlock()
	w.l.printAbove(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Close stops redrawing and ends the status line.
func (l *Line) Close() {
	close(l.stop)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.ended {
		fmt.Fprintln(l.w)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func humanCount(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}
