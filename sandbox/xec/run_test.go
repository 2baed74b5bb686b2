package xec

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRun(t *testing.T) {
	sh := func(script string) Command {
		return Command{Path: "/bin/sh", Args: []string{"-c", script}, Timeout: 10 * time.Second, OutputLimit: 1 << 10}
	}
	combined := sh("echo out; echo err >&2")
	combined.CombineOutput = true
	capped := sh("yes | head -c 100000; yes no | head -c 100000 >&2")
	capped.OutputLimit = 10
	short := sh("echo started; sleep 30")
	short.Timeout = 200 * time.Millisecond
	inDir := sh("pwd; echo $XEC_RUN_TEST")
	inDir.Dir = t.TempDir()
	inDir.Env = []string{"XEC_RUN_TEST=only this"}
	cases := []struct {
		name string
		cmd  Command
		want Result
	}{
		{"exit 0", sh("echo hello; echo oops >&2"), Result{Stdout: "hello\n", Stderr: "oops\n"}},
		{"exit status", sh("exit 3"), Result{ExitCode: 3}},
		{"killed by a signal", sh("kill -TERM $$"), Result{ExitCode: 128 + int(syscall.SIGTERM), Signal: syscall.SIGTERM}},
		{"combined output", combined, Result{Stdout: "out\nerr\n"}},
		{"output capped, never refused", capped, Result{Stdout: "y\ny\ny\ny\ny\n", Stderr: "no\nno\nno\nn"}},
		{"timeout", short, Result{ExitCode: 128 + int(syscall.SIGKILL), Signal: syscall.SIGKILL, TimedOut: true, Stdout: "started\n"}},
		{"folder and environment", inDir, Result{Stdout: inDir.Dir + "\nonly this\n"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Run(context.Background(), c.cmd)
			if err != nil {
				t.Fatal(err)
			}
			got.Elapsed = 0
			if got != c.want {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

// TestRunKillsGroup: a grandchild left in the background dies with the
// command, whether the timeout, the caller's context or the leader's own
// exit ended it, and the leader is reaped.
func TestRunKillsGroup(t *testing.T) {
	cases := []struct {
		name     string
		script   string
		ctx      bool // the caller's context ends it, not the timeout
		timedOut bool
		signal   syscall.Signal
	}{
		{"timeout", "sleep 300 & echo $! > PID; wait", false, true, syscall.SIGKILL},
		{"context", "sleep 300 & echo $! > PID; wait", true, false, syscall.SIGKILL},
		{"leader exits", "sleep 300 >/dev/null 2>&1 & echo $! > PID; exit 0", false, false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "pid")
			cmd := Command{Path: "/bin/sh", Args: []string{"-c", strings.ReplaceAll(c.script, "PID", pidFile)},
				Timeout: 300 * time.Millisecond, OutputLimit: 1 << 10}
			ctx := context.Background()
			if c.ctx {
				cmd.Timeout = time.Hour
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, 300*time.Millisecond)
				defer cancel()
			}
			res, err := Run(ctx, cmd)
			if err != nil {
				t.Fatal(err)
			}
			if res.TimedOut != c.timedOut || res.Signal != c.signal {
				t.Fatalf("result %+v: want timed out %v, signal %v", res, c.timedOut, c.signal)
			}
			b, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatal(err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			// The sleeper was reparented when its shell was reaped; its
			// new parent reaps it, so give it a moment to leave /proc.
			deadline := time.Now().Add(5 * time.Second)
			for {
				m, ok := ReadStat(pid)
				if !ok || m.State == 'Z' {
					break
				}
				if time.Now().After(deadline) {
					syscall.Kill(pid, syscall.SIGKILL)
					t.Fatalf("background sleeper %d still running: %+v", pid, m)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

func TestRunErrors(t *testing.T) {
	cases := []struct {
		name string
		cmd  Command
		want string
	}{
		{"missing executable", Command{Path: "/nonexistent/cc", Timeout: time.Second}, "start /nonexistent/cc"},
		{"no timeout", Command{Path: "/bin/true"}, "no timeout"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := Run(context.Background(), c.cmd)
			if err == nil || !strings.Contains(err.Error(), c.want) || res.ExitCode != -1 {
				t.Fatalf("got %+v, %v; want exit -1 and an error with %q", res, err, c.want)
			}
		})
	}
}

// TestRunOutputStreams: with Output set, both streams reach it as the
// child writes them (a build's progress), nothing is captured.
func TestRunOutputStreams(t *testing.T) {
	var b strings.Builder
	res, err := Run(context.Background(), Command{Path: "/bin/sh", Args: []string{"-c", "echo out; echo err >&2; exit 2"},
		Timeout: 10 * time.Second, OutputLimit: 1 << 10, Output: &b})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 2 || res.Stdout != "" || res.Stderr != "" || b.String() != "out\nerr\n" {
		t.Fatalf("result %+v, output %q", res, b.String())
	}
}
