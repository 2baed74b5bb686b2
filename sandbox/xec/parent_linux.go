package xec

import "syscall"

// killWithParent asks the kernel to SIGKILL the child when traj dies: a
// SIGKILL of traj leaves no chance to Stop, and an agent server must never
// outlive its recorder. (Pdeathsig follows the thread that started the
// child; the Go runtime does not end threads of unlocked goroutines.)
func killWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
