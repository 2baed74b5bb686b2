package progress

import (
	"io"
	"log/slog"
)

// View is how a command shows a run's progress.
type View struct {
	// JSON: events as JSON lines on Stdout. Quiet: no progress, only
	// warnings. Terminal: Stderr is a terminal (a live status line), else
	// log lines.
	JSON, Quiet, Terminal bool
	Stdout, Stderr        io.Writer
	// Level and Logger are the command's log level and logger.
	Level  slog.Level
	Logger *slog.Logger
}

// Open is v's sink and logger, and what closes them (the status line).
// Below the status line, and when quiet, only warnings are logged: the
// line is the progress.
func (v View) Open() (Sink, *slog.Logger, func()) {
	quiet := func(w io.Writer) *slog.Logger {
		return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: max(v.Level, slog.LevelWarn)}))
	}
	switch {
	case v.JSON:
		return NewJSON(v.Stdout), v.Logger, func() {}
	case v.Quiet:
		return Discard{}, quiet(v.Stderr), func() {}
	case v.Terminal:
		line := NewLine(v.Stderr)
		return line, quiet(line.LogWriter()), line.Close
	}
	return Log{L: v.Logger}, v.Logger, func() {}
}
