package ccompiler

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// cappedBuffer keeps the first limit bytes written and drops the rest, so
// a program printing forever cannot exhaust memory; it never fails a write
// (the child would otherwise die of SIGPIPE and hide the real outcome).
type cappedBuffer struct {
	mu    sync.Mutex
	buf   []byte
	limit int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.limit - len(b.buf); room > 0 {
		b.buf = append(b.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (b *cappedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// procResult is the outcome of one child process.
type procResult struct {
	exitCode int // 128+signal when killed by a signal
	signal   syscall.Signal
	timedOut bool
	stdout   string
	stderr   string // empty when combined into stdout
	elapsed  time.Duration
	startErr error // the process could not start at all
}

// runProc runs name with args in dir, in its own process group, and kills
// the whole group (SIGKILL to -pgid) when the timeout or ctx ends, and once
// more after it exits so no grandchild outlives the case. With combine,
// stdout and stderr share one buffer (c-testsuite compares them together).
func runProc(ctx context.Context, timeout time.Duration, limit int, combine bool, dir, name string, args ...string) procResult {
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(tctx, name, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	killWithParent(cmd.SysProcAttr)
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = 2 * time.Second
	stdout := &cappedBuffer{limit: limit}
	stderr := stdout
	if !combine {
		stderr = &cappedBuffer{limit: limit}
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	start := time.Now()
	err := cmd.Start()
	if err != nil {
		return procResult{exitCode: -1, startErr: fmt.Errorf("start %s: %w", name, err)}
	}
	pid := cmd.Process.Pid
	err = cmd.Wait()
	_ = syscall.Kill(-pid, syscall.SIGKILL) // stray grandchildren
	res := procResult{elapsed: time.Since(start), stdout: stdout.String()}
	if !combine {
		res.stderr = stderr.String()
	}
	if errors.Is(tctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		res.timedOut = true
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		res.exitCode = 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.signal = ws.Signal()
			res.exitCode = 128 + int(ws.Signal())
		} else {
			res.exitCode = ee.ExitCode()
		}
	default:
		// exec.ErrWaitDelay or similar: the process exited but its pipes
		// stayed open; report what it returned.
		res.exitCode = -1
		if cmd.ProcessState != nil {
			res.exitCode = cmd.ProcessState.ExitCode()
		}
	}
	return res
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// clip returns the first n bytes of s, marked when cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…[truncated]"
}
