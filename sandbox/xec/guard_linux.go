package xec

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// GuardMain runs the guard (see guard.go): args are "--" and the command;
// fd 3 is traj's lifeline. It returns the command's exit status, or 137
// when traj is gone.
func GuardMain(args []string) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, GuardCommand+": usage: "+GuardCommand+" -- COMMAND… (fd 3: traj's lifeline)")
		return 2
	}
	var st unix.Stat_t
	if err := unix.Fstat(guardFD, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		fmt.Fprintln(os.Stderr, GuardCommand+": fd 3 is not traj's lifeline (a pipe); only traj starts a guard")
		return 2
	}
	// The command must not hold the lifeline (it is traj's, not the sandbox's).
	syscall.CloseOnExec(guardFD)
	lifeline := os.NewFile(guardFD, "lifeline")
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, GuardCommand+": become a subreaper:", err)
		return 1
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, GuardCommand+":", err)
		return 127
	}
	// Handled (not ignored) signals are reset to their defaults in the
	// command by execve.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	proc, err := os.StartProcess(path, args, &os.ProcAttr{
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, GuardCommand+":", err)
		return 127
	}
	child := proc.Pid

	gone := make(chan struct{})
	go func() {
		buf := make([]byte, 64)
		for {
			if _, err := lifeline.Read(buf); err != nil { // EOF: traj's write end is closed
				close(gone)
				return
			}
		}
	}()
	// One reaper for every child, adopted ones included (os.Process.Wait
	// would miss those); none closes when the guard has no child left.
	exits := make(chan reaped)
	none := make(chan struct{})
	go func() {
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, 0, nil)
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				close(none)
				return
			}
			exits <- reaped{pid, ws}
		}
	}()

	for {
		select {
		case e := <-exits:
			if e.pid == child {
				killTree(exits, none)
				return mirror(e.ws)
			}
		case <-none:
			return 1 // unreachable: the command's own exit comes first
		case s := <-sigs:
			_ = syscall.Kill(child, s.(syscall.Signal))
		case <-gone:
			fmt.Fprintln(os.Stderr, GuardCommand+": traj is gone; killing every process it started here")
			killTree(exits, none)
			return 137
		}
	}
}

type reaped struct {
	pid int
	ws  syscall.WaitStatus
}

// killTree SIGKILLs every child of the guard until it has none. Orphans
// of the tree are adopted by the guard (it is their subreaper) when their
// parent dies, so each round may find new ones; a tick catches adoptions
// whose old parent was not the guard's child.
func killTree(exits <-chan reaped, none <-chan struct{}) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	self := os.Getpid()
	for {
		for _, m := range ChildrenOf(self) {
			if m.State != 'Z' {
				_ = syscall.Kill(m.PID, syscall.SIGKILL)
			}
		}
		select {
		case <-exits:
		case <-none:
			return
		case <-tick.C:
		}
	}
}

// mirror ends the guard the way the command ended: its exit code, or the
// same terminating signal (others, which the Go runtime handles itself,
// become 128+n as a shell reports them).
func mirror(ws syscall.WaitStatus) int {
	switch {
	case ws.Exited():
		return ws.ExitStatus()
	case ws.Signaled():
		sig := ws.Signal()
		switch sig {
		case syscall.SIGKILL, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP:
			signal.Reset(sig)
			_ = syscall.Kill(os.Getpid(), sig)
			time.Sleep(100 * time.Millisecond)
		}
		return 128 + int(sig)
	}
	return 1
}
