package trace_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/tracetest"
)

const killChildEnv = "TRAJ_TRACE_KILL_CHILD"

// TestKillChild is the child process of TestKillAtRandomMoments: it opens
// (or creates) the trace named by the environment and appends parts as
// fast as it can, printing each acknowledged part number. It does nothing
// in a normal test run.
func TestKillChild(t *testing.T) {
	path := os.Getenv(killChildEnv)
	if path == "" {
		t.Skip("child process of TestKillAtRandomMoments")
	}
	opts := trace.WriterOptions{Sync: os.Getenv("TRAJ_TRACE_KILL_SYNC") == "1"}
	var w *trace.Writer
	var err error
	if _, serr := os.Stat(path); serr == nil {
		w, err = trace.OpenForAppend(path, opts)
	} else {
		w, err = trace.Create(path, tracetest.Header("traj-kill"), opts)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(3)
	}
	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), uint64(time.Now().UnixNano())))
	out := bufio.NewWriterSize(os.Stdout, 64)
	n := w.LastPart()
	// TestCrashResumeLarge: parts of at most maxSize bytes, and a child
	// that finishes the trace once it holds until parts.
	maxSize, until := 10_000, 0
	if v, err := strconv.Atoi(os.Getenv("TRAJ_TRACE_KILL_MAXSIZE")); err == nil {
		maxSize = v
	}
	if v, err := strconv.Atoi(os.Getenv("TRAJ_TRACE_KILL_UNTIL")); err == nil {
		until = v
	}
	if !w.TurnOpen() {
		if err := w.BeginTurn(trace.TurnStart{Prompt: "resumed"}); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(3)
		}
	}
	for {
		if until > 0 && n >= until {
			if err := w.EndTurn(trace.TurnEnd{EndedAt: tracetest.Time(n)}); err != nil {
				os.Exit(3)
			}
			if err := w.Finish(trace.SessionEnd{Reason: trace.EndPartLimit}, nil); err != nil {
				fmt.Fprintln(os.Stderr, "child:", err)
				os.Exit(3)
			}
			if err := w.Close(); err != nil {
				os.Exit(3)
			}
			os.Exit(0)
		}
		n++
		// Sizes from 100 B to 10 KB so writes cross page boundaries.
		p := tracetest.RealisticPart(n, tracetest.Commit(n), 100+rng.IntN(maxSize))
		if err := w.AppendPart(p); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(3)
		}
		fmt.Fprintln(out, n)
		out.Flush()
		if rng.IntN(40) == 0 {
			if err := w.EndTurn(trace.TurnEnd{EndedAt: tracetest.Time(n)}); err != nil {
				os.Exit(3)
			}
			if err := w.BeginTurn(trace.TurnStart{Prompt: "next"}); err != nil {
				os.Exit(3)
			}
		}
		if rng.IntN(60) == 0 {
			w.SetTrailingParts([]json.RawMessage{json.RawMessage(`{"type":"step-finish"}`)})
		}
	}
}

// TestKillAtRandomMoments kills a child that appends parts with SIGKILL
// at random moments, then checks the trace parses strictly and holds
// every acknowledged part, and resumes it in the next child.
func TestKillAtRandomMoments(t *testing.T) {
	if os.Getenv(killChildEnv) != "" {
		t.Skip("in the child")
	}
	const kills = 36
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	var dir, path string
	acked, total, rebuilt, added := 0, 0, 0, 0
	for i := range kills {
		if i%6 == 0 { // a fresh trace now and then keeps the files small
			dir = t.TempDir()
			path = filepath.Join(dir, "agent_trace.json")
			acked = 0
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestKillChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), killChildEnv+"="+path)
		if i%4 == 3 {
			cmd.Env = append(cmd.Env, "TRAJ_TRACE_KILL_SYNC=1")
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan int, 1<<16)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if n, err := strconv.Atoi(sc.Text()); err == nil {
					lines <- n
				}
			}
			close(lines)
		}()
		// Wait for the first ack so the kill lands while appending, then a
		// random while more.
		first, ok := <-lines
		if !ok {
			cmd.Wait()
			t.Fatalf("kill %d: child acknowledged nothing: %s", i, stderr.String())
		}
		last := first
		time.Sleep(time.Duration(rng.IntN(40_000)) * time.Microsecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		for n := range lines {
			last = n
		}
		werr := cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(werr, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("kill %d: child ended with %v, not SIGKILL: %s", i, werr, stderr.String())
		}
		if last <= acked {
			t.Fatalf("kill %d: acknowledged %d after %d", i, last, acked)
		}
		acked = last
		total++

		tr := strictParse(t, path)
		n := 0
		for ti, turn := range tr.Turns {
			for _, p := range turn.Parts {
				n++
				if p.Part != n {
					t.Fatalf("kill %d: turn %d holds part %d where %d belongs", i, ti, p.Part, n)
				}
			}
		}
		if n < acked {
			t.Fatalf("kill %d: the trace has parts 1..%d, but %d was acknowledged", i, n, acked)
		}
		// The part index the kill may have torn still serves every part.
		ix, err := trace.LoadPartIndex(path)
		if err != nil {
			t.Fatalf("kill %d: part index: %v", i, err)
		}
		checkPartIndex(t, path, ix, n)
		if ix.Rebuilt {
			rebuilt++
		}
		added += ix.Added
		if i%3 == 2 {
			checkValid(t, path)
		}
	}
	t.Logf("%d kills, last trace at %d acknowledged parts; part index rebuilt %d times, %d parts added from the tail", total, acked, rebuilt, added)
}
