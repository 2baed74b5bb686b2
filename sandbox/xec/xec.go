// Package xec owns every child process traj starts: each runs in its own
// process group with the parent-death signal and is always reaped.
// Services (OpenCode, an MCP server) are Start-ed: stdout and stderr go to
// one log file, and Stop sends SIGTERM to the whole group, waits a grace
// period, then sends SIGKILL, so grandchildren (a shell's sleep, an MCP
// server OpenCode spawned) go too. A service with a Guard (bwrap) runs
// behind the sandbox helper (cmd/traj-sandbox) as its guard instead of
// with Pdeathsig: a subreaper that ends its whole tree when traj is gone
// (guard.go says why Pdeathsig is not enough there). Short commands (a
// build, a compiler, a test program) are Run: output captured up to a
// cap, the group killed at a timeout.
//
// Run also serves the bwrap probe, the container engine's commands
// (image.Engine.Run; Command.Output streams a build's progress), a
// harness's --version, Slurm's commands and `traj run --help`. GroupAttr
// is the one place a child's process group and Pdeathsig are set, except
// a guarded service's (Spec.Guard). Two children start outside this
// package, each saying why: sandbox/relay (the command inherits the
// relay's stdio inside the sandbox) and orchestrator/experiment/runner.go
// (a `traj run` read as a live event stream and stopped by SIGTERM alone;
// it still takes GroupAttr). Tests and test helpers may use os/exec.
package xec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// DefaultGrace is how long Stop waits after SIGTERM before SIGKILL.
const DefaultGrace = 5 * time.Second

// Spec describes a process to start.
type Spec struct {
	// Name identifies the process in errors.
	Name string
	// Path is the executable; Args are its arguments (without argv[0]).
	Path string
	Args []string
	// Dir is the working directory; the caller's when empty.
	Dir string
	// Env is the complete environment; nil means the caller's environment.
	Env []string
	// LogPath receives stdout and stderr (appended, created 0600 with its
	// folder). Empty discards the output.
	LogPath string
	// Grace between SIGTERM and SIGKILL on Stop; DefaultGrace when zero.
	Grace time.Duration
	// Guard is traj's own binary: when set, the process runs behind a
	// guard (GuardMain) that kills its whole tree, adopted orphans
	// included, as soon as traj is gone, however traj ended. For
	// processes whose descendants Pdeathsig cannot reach (bwrap).
	Guard string
}

// Process is a started, supervised process group.
type Process struct {
	spec Spec
	cmd  *exec.Cmd
	pgid int
	log  *os.File
	// lifeline is the write end of the guard's lifeline (nil without a
	// guard): the guard kills its tree when the last write end closes.
	lifeline *os.File
	done     chan struct{}
	err      error // exit status, set before done closes
	// signalled is set before the first signal we send; selfExit records
	// that the leader had exited before that.
	signalled atomic.Bool
	selfExit  bool
	once      sync.Once
	stopc     chan struct{}
	stopd     chan struct{}
}

// Start starts the process in a new process group. When ctx is cancelled
// the group is stopped (SIGTERM, grace, SIGKILL) and reaped.
func Start(ctx context.Context, spec Spec) (*Process, error) {
	if spec.Path == "" {
		return nil, fmt.Errorf("start %s: no executable", spec.Name)
	}
	if spec.Grace <= 0 {
		spec.Grace = DefaultGrace
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("start %s: %w", spec.Name, err)
	}
	var out io.Writer
	var logf *os.File
	if spec.LogPath != "" {
		if err := os.MkdirAll(filepath.Dir(spec.LogPath), 0o755); err != nil {
			return nil, fmt.Errorf("start %s: log folder: %w", spec.Name, err)
		}
		f, err := os.OpenFile(spec.LogPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("start %s: open log: %w", spec.Name, err)
		}
		logf, out = f, f
	}
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.SysProcAttr = GroupAttr()
	var lifeR, lifeW *os.File
	if spec.Guard != "" {
		// os.Pipe's ends are close-on-exec: only the guard gets the read
		// end (as fd 3), and no child ever holds the write end.
		var err error
		if lifeR, lifeW, err = os.Pipe(); err != nil {
			if logf != nil {
				logf.Close()
			}
			return nil, fmt.Errorf("start %s: lifeline: %w", spec.Name, err)
		}
		cmd = exec.Command(spec.Guard, guardArgs(spec.Path, spec.Args)...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		// No Pdeathsig: the guard must outlive traj long enough to kill
		// its tree (the lifeline's EOF tells it).
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.ExtraFiles = []*os.File{lifeR}
	}
	cmd.Dir = spec.Dir
	cmd.Env = spec.Env
	// An *os.File (or nil) is handed to the child directly, so Wait never
	// blocks on a grandchild that keeps the output open.
	if out != nil {
		cmd.Stdout, cmd.Stderr = out, out
	}
	err := cmd.Start()
	if lifeR != nil {
		lifeR.Close()
	}
	if err != nil {
		if logf != nil {
			logf.Close()
		}
		if lifeW != nil {
			lifeW.Close()
		}
		return nil, fmt.Errorf("start %s: %w", spec.Name, err)
	}
	p := &Process{
		spec:     spec,
		cmd:      cmd,
		pgid:     cmd.Process.Pid, // Setpgid with Pgid 0: the group id is the pid
		log:      logf,
		lifeline: lifeW,
		done:     make(chan struct{}),
		stopc:    make(chan struct{}),
		stopd:    make(chan struct{}),
	}
	go p.wait()
	go p.supervise(ctx)
	return p, nil
}

func (p *Process) wait() {
	err := p.cmd.Wait()
	if p.log != nil {
		p.log.Close()
	}
	if p.lifeline != nil {
		p.lifeline.Close()
	}
	p.err = err
	p.selfExit = !p.signalled.Load()
	close(p.done)
}

// supervise stops the group when ctx is cancelled or Stop is called.
func (p *Process) supervise(ctx context.Context) {
	defer close(p.stopd)
	select {
	case <-ctx.Done():
	case <-p.stopc:
	case <-p.done:
		// The leader exited by itself; its group may still hold
		// children. Wait for a stop request to clean those up too.
		select {
		case <-ctx.Done():
		case <-p.stopc:
		}
	}
	p.terminate()
}

// terminate sends SIGTERM to the group, waits until the leader is reaped
// and the group is empty or the grace period ends, then sends SIGKILL.
func (p *Process) terminate() {
	p.signalled.Store(true)
	_ = syscall.Kill(-p.pgid, syscall.SIGTERM)
	deadline := time.NewTimer(p.spec.Grace)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-deadline.C:
			_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
			<-p.done
			p.waitGroupGone(2 * time.Second)
			return
		case <-tick.C:
			if p.exited() && !GroupAlive(p.pgid) {
				return
			}
		}
	}
}

// waitGroupGone polls until no process is left in the group or d passes.
func (p *Process) waitGroupGone(d time.Duration) {
	end := time.Now().Add(d)
	for GroupAlive(p.pgid) && time.Now().Before(end) {
		time.Sleep(10 * time.Millisecond)
	}
}

func (p *Process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop stops the process group (SIGTERM, grace, SIGKILL) and returns once
// the leader is reaped and the group is gone. It returns the leader's exit
// error only when the process had exited on its own before Stop; a process
// ended by Stop is not an error. Safe to call more than once.
func (p *Process) Stop() error {
	p.once.Do(func() { close(p.stopc) })
	<-p.stopd
	<-p.done
	if p.selfExit && p.err != nil {
		return fmt.Errorf("%s exited: %w", p.spec.Name, p.err)
	}
	return nil
}

// Done is closed when the leader process has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the leader's exit error once Done is closed (nil for exit 0; a
// signal error when Stop or a cancelled context ended it).
func (p *Process) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// PID is the leader's process id, which is also the process group id.
func (p *Process) PID() int { return p.pgid }

// Name is the Spec's name.
func (p *Process) Name() string { return p.spec.Name }

// LogPath is where stdout and stderr go.
func (p *Process) LogPath() string { return p.spec.LogPath }

// GroupAlive reports whether any process (zombies aside, which the kernel
// may still list until their parent reaps them) is in process group pgid.
func GroupAlive(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	if err == nil {
		return !onlyZombies(pgid)
	}
	return !errors.Is(err, syscall.ESRCH)
}
