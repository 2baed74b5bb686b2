package xec

// A guard stands between traj and a process whose whole tree must end
// when traj ends, also by SIGKILL, where the kernel's parent-death signal
// cannot promise it. Measured with bubblewrap (0.8.0; upstream unchanged
// since): bwrap clones the sandbox's PID-namespace init, which then blocks
// reading an eventfd until the outer bwrap has written its uid map; only
// after its whole setup does the init arm --die-with-parent. When traj is
// killed in that window, Pdeathsig kills the outer bwrap, and the init
// (ppid 1, pgrp of the outer bwrap, wchan eventfd_read) waits for a
// write that never comes: 10 of 20 kills right after a bwrap service
// started left it behind for good.
//
// The guard is traj's own binary (`traj sandbox-guard -- COMMAND…`). It
// makes itself a child subreaper, so every process orphaned in its tree
// becomes its child instead of init's; it starts the command with
// Pdeathsig SIGKILL, and it reads its lifeline: the read end of a pipe
// whose only write end traj holds (close-on-exec, so no other process
// inherits it). However traj ends, the kernel closes that write end and
// the read returns EOF; the guard then SIGKILLs every child it has, reaps
// them and repeats until it has none, so nothing of its tree is left. When
// the command exits by itself the guard does the same to whatever is left
// and exits with the command's status. SIGTERM, SIGINT and SIGHUP are
// passed on to the command. The guard has no Pdeathsig of its own: a
// SIGKILL would leave it no time to clean up; EOF is its signal.

// GuardCommand is the name under which the sandbox helper (and traj,
// hidden) runs as a guard: only Start runs it.
const GuardCommand = "sandbox-guard"

// guardFD is the guard's lifeline: the first of Cmd.ExtraFiles.
const guardFD = 3

// guardArgs is the guard's command line for path and args.
func guardArgs(path string, args []string) []string {
	return append([]string{GuardCommand, "--", path}, args...)
}
