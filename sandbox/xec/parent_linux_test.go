package xec

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// parentEnv makes the test binary act as a traj stand-in that starts a
// supervised child and then waits to be killed.
const parentEnv = "XEC_TEST_PARENT"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == GuardCommand {
		os.Exit(GuardMain(os.Args[2:]))
	}
	if mode := os.Getenv(parentEnv); mode != "" {
		spec := Spec{Name: "child", Path: "/bin/sleep", Args: []string{"300"}}
		if mode == "guard" {
			// A tree Pdeathsig cannot reach: the grandchild left the
			// group and session and outlives its parent.
			spec = Spec{Name: "tree", Path: "/bin/sh", Args: []string{"-c", "setsid sleep 300 & exec sleep 300"}, Guard: os.Args[0]}
		}
		p, err := Start(context.Background(), spec)
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString(strconv.Itoa(p.PID()) + "\n")
		select {} // until SIGKILL
	}
	os.Exit(m.Run())
}

// TestChildDiesWithKilledParent: SIGKILL of the process that started a
// child (as when traj is killed -9 mid-run) takes the child down too; it is
// not left running as an orphan.
func TestChildDiesWithKilledParent(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), parentEnv+"=1")
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
		t.Fatalf("read the child's pid: %v", err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-child, syscall.SIGKILL) })
	if !GroupAlive(child) {
		t.Fatalf("child %d not running before the kill", child)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for GroupAlive(child) {
		if time.Now().After(deadline) {
			t.Fatalf("child %d still alive 5 s after its parent was killed", child)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
