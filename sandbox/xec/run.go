package xec

import (
	"context"
	"errors"
	"fmt"
	"github.com/trajlab/traj/sandbox/xec/exit"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Command is a short-lived process that Run waits for: a build, a
// compiler, a test program.
type Command struct {
	// Path is the executable (looked up in PATH when it has no slash);
	// Args are its arguments (without argv[0]).
	Path string
	Args []string
	// Dir is the working directory; the caller's when empty.
	Dir string
	// Env is the complete environment; nil means the caller's environment.
	Env []string
	// Timeout ends the process group with SIGKILL; it must be positive.
	Timeout time.Duration
	// OutputLimit is how many bytes of stdout and of stderr are kept; the
	// rest is read and dropped, never refused (a refused write would kill
	// the child with SIGPIPE and hide the real outcome).
	OutputLimit int
	// CombineOutput sends stderr into stdout's buffer, interleaved as the
	// child wrote them; Result.Stderr stays empty.
	CombineOutput bool
	// Output, when set, receives stdout and stderr as the child writes
	// them (a long build's progress log) instead of the capture: Result's
	// Stdout and Stderr stay empty.
	Output io.Writer
	// ExtraFiles are open files the child gets as fds 3, 4, … (a pipe
	// holding a sandbox's arguments, off its command line).
	ExtraFiles []*os.File
}

// Result is how a Command ended (package exit, which runs nothing, so
// that code that only reads an outcome links no process runner).
type Result = exit.Result

// Run runs c in its own process group with the parent-death signal, waits
// for it, and returns how it ended. When the timeout or ctx ends first, the
// whole group gets SIGKILL; after the leader exits the group gets SIGKILL
// once more, so no grandchild outlives the command. The process is always
// reaped. The error is only for a command that could not start; an exit
// status, a signal or a timeout is in Result.
func Run(ctx context.Context, c Command) (Result, error) {
	if c.Timeout <= 0 {
		return Result{ExitCode: -1}, fmt.Errorf("run %s: no timeout", c.Path)
	}
	tctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	cmd := exec.CommandContext(tctx, c.Path, c.Args...)
	cmd.Dir = c.Dir
	cmd.Env = c.Env
	cmd.ExtraFiles = c.ExtraFiles
	cmd.SysProcAttr = GroupAttr()
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	// A grandchild that keeps the pipes open cannot hold Wait longer.
	cmd.WaitDelay = 2 * time.Second
	stdout := &cappedBuffer{limit: c.OutputLimit}
	stderr := stdout
	if !c.CombineOutput {
		stderr = &cappedBuffer{limit: c.OutputLimit}
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if c.Output != nil {
		cmd.Stdout, cmd.Stderr = c.Output, c.Output
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Result{ExitCode: -1}, fmt.Errorf("start %s: %w", c.Path, err)
	}
	pid := cmd.Process.Pid
	err := cmd.Wait()
	_ = syscall.Kill(-pid, syscall.SIGKILL) // stray grandchildren
	res := Result{Elapsed: time.Since(start), Stdout: stdout.String()}
	if !c.CombineOutput {
		res.Stderr = stderr.String()
	}
	res.TimedOut = errors.Is(tctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.Signal = ws.Signal()
			res.ExitCode = 128 + int(ws.Signal())
		} else {
			res.ExitCode = ee.ExitCode()
		}
	default:
		// exec.ErrWaitDelay: the process exited but a grandchild kept its
		// pipes open; report what it returned.
		res.ExitCode = -1
		if cmd.ProcessState != nil {
			res.ExitCode = cmd.ProcessState.ExitCode()
		}
	}
	return res, nil
}

// GroupAttr puts a child in a new process group (its pid is the group id)
// with the parent-death signal: how every child of traj starts.
func GroupAttr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	killWithParent(a)
	return a
}

// cappedBuffer keeps the first limit bytes written and drops the rest, so
// a program printing forever cannot exhaust memory; it never fails a write.
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
