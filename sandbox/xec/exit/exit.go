// Package exit is how a process ended: the one type a runner of
// processes (sandbox/xec) returns and an evaluation reads. It runs
// nothing, so an environment's interfaces can name it without linking
// the runner (replay's readers import environment).
package exit

import (
	"syscall"
	"time"
)

// Result is how a Command ended.
type Result struct {
	// ExitCode is the exit status, 128+signal when a signal ended the
	// process, -1 when it is unknown.
	ExitCode int
	// Signal is the signal that ended the process, 0 if none did.
	Signal syscall.Signal
	// TimedOut: the Timeout ended the process (not the caller's context).
	TimedOut bool
	// Stdout and Stderr are the first OutputLimit bytes of each.
	Stdout, Stderr string
	// Elapsed is the time from start to reaping.
	Elapsed time.Duration
}
