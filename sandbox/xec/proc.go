package xec

import (
	"os"
	"strconv"
	"strings"
)

// Member is one process found in /proc.
type Member struct {
	PID   int
	PPID  int
	PGID  int
	State byte // R, S, D, Z, T, …
	Comm  string
}

// GroupMembers lists the processes of group pgid from /proc, zombies
// included (State 'Z'). Processes that vanish while /proc is read are
// skipped.
func GroupMembers(pgid int) []Member {
	return scan(func(m Member) bool { return m.PGID == pgid })
}

// ChildrenOf lists the processes whose parent is ppid, zombies included.
func ChildrenOf(ppid int) []Member {
	return scan(func(m Member) bool { return m.PPID == ppid })
}

// scan lists the processes in /proc that keep says to keep.
func scan(keep func(Member) bool) []Member {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []Member
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		m, ok := readStat(pid)
		if ok && keep(m) {
			out = append(out, m)
		}
	}
	return out
}

// ReadStat reads process pid from /proc (false when it is gone or
// unreadable); with Cmdline, the one /proc reader traj has.
func ReadStat(pid int) (Member, bool) { return readStat(pid) }

// readStat parses /proc/PID/stat: "pid (comm) state ppid pgrp …"; comm may
// hold spaces and parentheses, so fields are read after the last ')'.
func readStat(pid int) (Member, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Member{}, false
	}
	s := string(b)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return Member{}, false
	}
	f := strings.Fields(s[closing+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return Member{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		return Member{}, false
	}
	return Member{PID: pid, PPID: ppid, PGID: pgrp, State: f[0][0], Comm: s[open+1 : closing]}, true
}

func onlyZombies(pgid int) bool {
	for _, m := range GroupMembers(pgid) {
		if m.State != 'Z' {
			return false
		}
	}
	return true
}

// Cmdline reads process pid's command line from /proc, arguments joined
// by NUL (false when it is gone or unreadable).
func Cmdline(pid int) (string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return "", false
	}
	return string(b), true
}
