package ccompiler

import "syscall"

// killWithParent has the kernel SIGKILL a build or test process when the
// process running the suite dies (a SIGKILL of `traj mcp` leaves no chance
// to kill the group), so a 300 s build.sh never outlives its caller.
func killWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
