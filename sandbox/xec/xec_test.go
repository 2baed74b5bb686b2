package xec

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// live lists the non-zombie processes of group pgid.
func live(pgid int) []Member {
	var out []Member
	for _, m := range GroupMembers(pgid) {
		if m.State != 'Z' {
			out = append(out, m)
		}
	}
	return out
}

// startTree starts a shell that spawns two sleeps (grandchildren of the
// test) and waits until all three are visible in /proc.
func startTree(t *testing.T, ctx context.Context, script string, grace time.Duration, guard string) *Process {
	t.Helper()
	p, err := Start(ctx, Spec{
		Name: "tree", Path: "/bin/sh", Args: []string{"-c", script},
		LogPath: filepath.Join(t.TempDir(), "logs", "tree.log"), Grace: grace, Guard: guard,
	})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(live(p.PID())) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("process tree did not start: %+v", live(p.PID()))
		}
		time.Sleep(10 * time.Millisecond)
	}
	return p
}

func assertGone(t *testing.T, p *Process, pids []Member) {
	t.Helper()
	if l := live(p.PID()); len(l) != 0 {
		t.Fatalf("processes left in group %d: %+v", p.PID(), l)
	}
	for _, m := range pids {
		if st, ok := readStat(m.PID); ok && st.State != 'Z' && st.PGID == p.PID() {
			t.Fatalf("process %d (%s) still running", m.PID, m.Comm)
		}
	}
	select {
	case <-p.Done():
	default:
		t.Fatal("leader not reaped")
	}
}

func TestStopKillsWholeGroup(t *testing.T) {
	tests := []struct {
		name   string
		script string
		grace  time.Duration
		maxDur time.Duration
		guard  bool
	}{
		{"sigterm", "sleep 300 & sleep 300 & wait", 5 * time.Second, 4 * time.Second, false},
		{"ignores sigterm", `trap "" TERM; sleep 300 & sleep 300 & wait; wait`, 300 * time.Millisecond, 4 * time.Second, false},
		{"guarded sigterm", "sleep 300 & sleep 300 & wait", 5 * time.Second, 4 * time.Second, true},
		{"guarded ignores sigterm", `trap "" TERM; sleep 300 & sleep 300 & wait; wait`, 300 * time.Millisecond, 4 * time.Second, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			guard := ""
			if tt.guard {
				guard = os.Args[0]
			}
			p := startTree(t, context.Background(), tt.script, tt.grace, guard)
			members := live(p.PID())
			start := time.Now()
			if err := p.Stop(); err != nil {
				t.Fatalf("stop: %v", err)
			}
			if d := time.Since(start); d > tt.maxDur {
				t.Errorf("stop took %v", d)
			}
			assertGone(t, p, members)
			if err := p.Stop(); err != nil {
				t.Fatalf("second stop: %v", err)
			}
		})
	}
}

func TestContextCancelStopsGroup(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := startTree(t, ctx, "sleep 300 & sleep 300 & wait", time.Second, "")
	members := live(p.PID())
	cancel()
	select {
	case <-p.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("leader not reaped after cancel")
	}
	deadline := time.Now().Add(3 * time.Second)
	for len(live(p.PID())) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	assertGone(t, p, members)
}

func TestExitOnItsOwn(t *testing.T) {
	log := filepath.Join(t.TempDir(), "x.log")
	p, err := Start(context.Background(), Spec{Name: "quick", Path: "/bin/sh", Args: []string{"-c", "echo out; echo err >&2; exit 3"}, LogPath: log})
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if p.Err() == nil || !strings.Contains(p.Err().Error(), "exit status 3") {
		t.Fatalf("Err = %v, want exit status 3", p.Err())
	}
	if err := p.Stop(); err == nil || !strings.Contains(err.Error(), "quick exited") {
		t.Fatalf("Stop = %v, want the exit error", err)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); !strings.Contains(got, "out\n") || !strings.Contains(got, "err\n") {
		t.Fatalf("log = %q, want stdout and stderr", got)
	}
	fi, _ := os.Stat(log)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("log mode %v, want 0600", fi.Mode().Perm())
	}
}

func TestStartErrors(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want string
	}{
		{"no path", Spec{Name: "a"}, "no executable"},
		{"missing binary", Spec{Name: "b", Path: "/nonexistent/bin"}, "start b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Start(context.Background(), tt.spec)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestReadStatSelf(t *testing.T) {
	m, ok := readStat(os.Getpid())
	if !ok || m.PID != os.Getpid() || m.State == 'Z' {
		t.Fatalf("readStat(self) = %+v, %v", m, ok)
	}
	if want := strconv.Itoa(os.Getppid()); strconv.Itoa(m.PPID) != want {
		t.Fatalf("ppid %d, want %s", m.PPID, want)
	}
}
