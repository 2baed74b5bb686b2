package trace_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/trajlab/traj/trace"
)

// TestCrashResumeLarge is the crash test at scale: a child appending
// parts with the real writer (part index beside the trace) is killed with
// SIGKILL mid-append once the trace holds TRAJ_CRASH_PARTS parts (20,000
// in make test; 100,000 in make stress), another child resumes it
// (OpenForAppend), appends 500 more and finishes it. After the kill and
// after the resume: the trace parses and holds every acknowledged part in
// order, the part index (checked, completed from the tail or rebuilt by
// LoadPartIndex) serves every part with its commit, and its digest (what
// a cached evaluate trusts instead of reading the trace) is the digest of
// an index rebuilt from nothing beside a copy of the trace.
func TestCrashResumeLarge(t *testing.T) {
	if os.Getenv(killChildEnv) != "" {
		t.Skip("in the child")
	}
	parts := 20_000
	if v := os.Getenv("TRAJ_CRASH_PARTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("TRAJ_CRASH_PARTS=%q: want a number > 0", v)
		}
		parts = n
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "agent_trace.json")
	rng := rand.New(rand.NewPCG(40, uint64(time.Now().UnixNano())))
	start := time.Now()

	// Append until killed, the kill landing a random while after part
	// `parts` was acknowledged.
	acked := runChild(t, path, nil, func(n int) bool { return n >= parts }, rng)
	t.Logf("killed at %d acknowledged parts after %s", acked, time.Since(start).Round(time.Millisecond))
	n := checkLarge(t, path, acked)

	// Resume and finish.
	until := n + 500
	if got := runChild(t, path, []string{"TRAJ_TRACE_KILL_UNTIL=" + strconv.Itoa(until)}, nil, rng); got != until {
		t.Fatalf("the resumed child acknowledged up to part %d, want %d", got, until)
	}
	checkValid(t, path)
	if got := checkLarge(t, path, until); got != until {
		t.Fatalf("the finished trace has %d parts, want %d", got, until)
	}
	t.Logf("%d parts, killed, resumed and checked in %s", until, time.Since(start).Round(time.Millisecond))
}

// runChild runs TestKillChild on path with env added and returns the last
// part it acknowledged. With kill, it is killed with SIGKILL a random
// while (up to 20 ms) after kill first holds for an acknowledged part;
// without, it must exit 0.
func runChild(t *testing.T, path string, env []string, kill func(int) bool, rng *rand.Rand) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillChild$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), killChildEnv+"="+path, "TRAJ_TRACE_KILL_MAXSIZE=400"), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	last, killed := 0, false
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		n, err := strconv.Atoi(sc.Text())
		if err != nil {
			continue
		}
		last = n
		if kill != nil && !killed && kill(n) {
			killed = true
			go func() {
				time.Sleep(time.Duration(rng.IntN(20_000)) * time.Microsecond)
				cmd.Process.Signal(syscall.SIGKILL)
			}()
		}
	}
	io.Copy(io.Discard, stdout)
	werr := cmd.Wait()
	var ee *exec.ExitError
	switch {
	case kill == nil && werr != nil:
		t.Fatalf("child: %v: %s", werr, stderr.String())
	case kill != nil && (!errors.As(werr, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL):
		t.Fatalf("child ended with %v, not SIGKILL: %s", werr, stderr.String())
	}
	return last
}

// checkLarge checks the trace at path after a crash or at its end, and
// returns its parts: at least acked, numbered in order; the part index
// LoadPartIndex gives serves each; the index digest is the one of an
// index rebuilt from nothing.
func checkLarge(t *testing.T, path string, acked int) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = trace.Scan(f, trace.Visitor{OnPart: func(_ int, p *trace.Part) error {
		if n++; p.Part != n {
			t.Fatalf("part %d where %d belongs", p.Part, n)
		}
		return nil
	}})
	f.Close()
	if err != nil {
		t.Fatalf("read the trace: %v", err)
	}
	if n < acked {
		t.Fatalf("the trace has parts 1..%d, but %d was acknowledged", n, acked)
	}
	ix, err := trace.LoadPartIndex(path)
	if err != nil {
		t.Fatalf("part index: %v", err)
	}
	checkPartIndex(t, path, ix, n)
	// The reference: an index built from nothing beside a copy of the
	// trace, saved as the writer keeps it.
	fresh := filepath.Join(t.TempDir(), filepath.Base(path))
	if err := copyFile(path, fresh); err != nil {
		t.Fatal(err)
	}
	ref, err := trace.LoadPartIndex(fresh)
	if err != nil || !ref.Rebuilt {
		t.Fatalf("index from nothing: rebuilt %v, %v", ref != nil && ref.Rebuilt, err)
	}
	if err := trace.SavePartIndex(ref, trace.PartIndexPath(fresh)); err != nil {
		t.Fatal(err)
	}
	want, wn, err := trace.PartIndexDigest(fresh)
	if err != nil || wn != n {
		t.Fatalf("digest of the index from nothing: %d parts, %v", wn, err)
	}
	// The stored index's digest is that one, or (the kill left the index
	// short of the trace's last parts) refused as stale: never another.
	digest, dn, err := trace.PartIndexDigest(path)
	switch {
	case errors.Is(err, trace.ErrStaleIndex) && ix.Added > 0:
		t.Logf("the index lacks the %d parts after the kill: its digest is refused (the reader reads the parts)", ix.Added)
	case err != nil:
		t.Fatalf("part index digest: %v", err)
	case dn != n || digest != want:
		t.Fatalf("part index digest %s of %d parts, the index from nothing %s of %d", digest, dn, want, n)
	}
	t.Logf("%d parts (%d acknowledged); part index rebuilt %v, %d parts added from the tail", n, acked, ix.Rebuilt, ix.Added)
	return n
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}
