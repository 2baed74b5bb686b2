package xec

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// alive: pid is a process that has not exited (zombies count as gone).
func alive(pid int) bool {
	m, ok := readStat(pid)
	return ok && m.State != 'Z'
}

// TestGuardKillsTreeWhenTrajDies: SIGKILL of traj (a stand-in) ends the
// whole tree behind a guard, also a grandchild in its own session, which
// Pdeathsig alone leaves running.
func TestGuardKillsTreeWhenTrajDies(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), parentEnv+"=guard")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("read the guard's pid: %v", err)
	}
	guard, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	// guard → sh (exec'd into sleep) → setsid sleep
	var tree []Member
	deadline := time.Now().Add(10 * time.Second)
	for {
		tree = nil
		for _, c := range ChildrenOf(guard) {
			tree = append(tree, c)
			tree = append(tree, ChildrenOf(c.PID)...)
		}
		if len(tree) == 2 && tree[1].PGID != guard {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("guarded tree did not start: %+v", tree)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Cleanup(func() {
		for _, m := range tree {
			syscall.Kill(m.PID, syscall.SIGKILL)
		}
	})
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	deadline = time.Now().Add(10 * time.Second)
	for _, m := range append(tree, Member{PID: guard, Comm: "guard"}) {
		for alive(m.PID) {
			if time.Now().After(deadline) {
				t.Fatalf("%s (pid %d) outlived traj by 10 s", m.Comm, m.PID)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// TestGuardedExit: a guarded process reports its own exit status (code or
// signal), and what it left running is gone once it is Done.
func TestGuardedExit(t *testing.T) {
	tests := []struct {
		name, script, want string
	}{
		{"code", "sleep 300 & echo $!; exit 3", "exit status 3"},
		{"signal", "sleep 300 & echo $!; kill -TERM $$", "signal: terminated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "g.log")
			p, err := Start(context.Background(), Spec{Name: "g", Path: "/bin/sh", Args: []string{"-c", tt.script}, LogPath: log, Guard: os.Args[0]})
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-p.Done():
			case <-time.After(30 * time.Second):
				p.Stop()
				t.Fatal("guarded process did not end")
			}
			if p.Err() == nil || !strings.Contains(p.Err().Error(), tt.want) {
				t.Fatalf("Err = %v, want %q", p.Err(), tt.want)
			}
			b, _ := os.ReadFile(log)
			left, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatalf("log %q: want the background sleep's pid", b)
			}
			if alive(left) {
				syscall.Kill(left, syscall.SIGKILL)
				t.Fatalf("background sleep %d outlived its guarded parent", left)
			}
		})
	}
}

// TestGuardNeedsLifeline: run by hand (no pipe as fd 3), the guard
// refuses and starts nothing.
func TestGuardNeedsLifeline(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	out, err := exec.Command(os.Args[0], GuardCommand, "--", "/bin/sh", "-c", "touch "+marker).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "lifeline") {
		t.Fatalf("guard without a lifeline: %v, %q; want exit 2 naming the lifeline", err, out)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the guard ran its command without a lifeline")
	}
}
