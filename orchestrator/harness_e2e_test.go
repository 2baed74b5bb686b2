package orchestrator_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trajlab/traj/orchestrator"
	"github.com/trajlab/traj/sandbox/claudecode"
	"github.com/trajlab/traj/sandbox/codex"
	"github.com/trajlab/traj/sandbox/gateway/model"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/chunk"
	"github.com/trajlab/traj/trace/store/local"
)

// harnessCase is a harness and its e2e script. The runs of these scripts
// are checked in full by cmd/traj's TestHarnessConformance (parts per
// turn, sub-agent, usage, the real API key); here they are killed and
// resumed, and held to a token budget.
type harnessCase struct {
	agent, script string
	locate        func(string) (string, error)
}

var harnessCases = []harnessCase{
	{claudecode.HarnessName, "testdata/e2e-claude-code.jsonl", claudecode.Binary.Locate},
	{codex.HarnessName, "testdata/e2e-codex.jsonl", codex.Binary.Locate},
}

func needHarness(t *testing.T, h harnessCase) string {
	t.Helper()
	bin, err := h.locate("")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s missing under CI: %v", h.agent, err)
		}
		t.Skipf("%s needed (make setup): %v", h.agent, err)
	}
	return bin
}

// TestHarnessesKillResume SIGKILLs `traj run` with each harness after some
// parts, resumes it, and checks that the run ends at exactly --max-parts
// with a valid, contiguous trace whose later turns continued the same
// harness session.
func TestHarnessesKillResume(t *testing.T) {
	t.Parallel()
	traj := needTraj(t)
	for _, h := range harnessCases {
		t.Run(h.agent, func(t *testing.T) {
			t.Parallel()
			bin := needHarness(t, h)
			root := t.TempDir()
			work, st := filepath.Join(root, "work"), filepath.Join(root, "store")
			id := "kill-" + h.agent
			common := []string{"--script", h.script, "--store", st, "--work-dir", work, "--json", "--agent-bin", bin}
			p := startTraj(t, traj, "", root, "run-1", append([]string{"run", "--task", "testdata/tasks/e2e", "--agent", h.agent,
				"--model", "scripted/demo", "--max-parts", "20", "--trajectory-id", id, "--timeout", "3m"}, common...)...)
			deadline := time.After(2 * time.Minute)
		wait:
			for {
				select {
				case <-p.done:
					t.Fatalf("run ended before the kill\n%s", p.logs())
				case <-deadline:
					p.cmd.Process.Kill()
					<-p.done
					t.Fatalf("no 6 parts in 2 minutes\n%s", p.logs())
				case <-time.After(20 * time.Millisecond):
					if p.ackedParts() >= 6 {
						break wait
					}
				}
			}
			acked := p.ackedParts()
			if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-p.done
			waitNoProcessesUnder(t, root, 10*time.Second)
			dir := filepath.Join(work, "trajectories", id)
			raw, err := os.ReadFile(filepath.Join(dir, "agent_trace.json"))
			if err != nil {
				t.Fatal(err)
			}
			killed, err := trace.Read(bytes.NewReader(raw))
			if err != nil {
				t.Fatalf("the trace does not parse after kill -9: %v", err)
			}
			if n := countParts(killed); n < acked {
				t.Errorf("after kill -9 the trace holds %d parts, %d were acknowledged", n, acked)
			}

			r := startTraj(t, traj, "", root, "run-2", append([]string{"run", "--resume", id}, common...)...)
			select {
			case <-r.done:
			case <-time.After(2 * time.Minute):
				r.cmd.Process.Kill()
				<-r.done
				t.Fatalf("resume did not finish\n%s", r.logs())
			}
			if code := r.exitCode(); code != 0 {
				t.Fatalf("resume exited %d\n%s", code, r.logs())
			}
			raw, err = os.ReadFile(filepath.Join(dir, "agent_trace.json"))
			if err != nil {
				t.Fatal(err)
			}
			if probs := trace.Validate(bytes.NewReader(raw)); len(probs) > 0 {
				t.Fatalf("resumed trace does not validate: %v", probs)
			}
			tr, err := trace.Read(bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			if n := countParts(tr); n != 20 || tr.SessionEnd == nil || tr.SessionEnd.Reason != trace.EndPartLimit {
				t.Errorf("resumed run: %d parts, end %+v; want exactly 20 and part_limit", n, tr.SessionEnd)
			}
			// The record holds every call of both runs, and they are the
			// trace's totals (seq going on across the resume).
			tot, err := model.ReadRecord(filepath.Join(dir, store.ModelCallsName), nil)
			if err != nil {
				t.Fatal(err)
			}
			u := tr.Usage()
			if got := u.Tokens(); got == nil || *got != tot.Tokens || tot.LastSeq != tot.Calls || tr.SessionEnd.ModelCalls != tot.Calls {
				t.Errorf("trace tokens %+v over %d calls, the model-call record's %+v over %d calls (last seq %d)",
					got, tr.SessionEnd.ModelCalls, tot.Tokens, tot.Calls, tot.LastSeq)
			}
			out, err := exec.Command(traj, "replay", "verify", id, "--store", st).CombinedOutput()
			if err != nil {
				t.Errorf("replay verify: %v\n%s", err, out)
			}
			// The gateway read the loop's part counter: each call's
			// parts_before is within the run, and it moved.
			most := 0
			if _, err := model.ReadRecord(filepath.Join(dir, store.ModelCallsName), func(c model.Call) error {
				if c.PartsBefore == nil || *c.PartsBefore < 0 || *c.PartsBefore > 20 {
					t.Errorf("call %d: parts_before %v, want 0..20", c.Seq, c.PartsBefore)
				} else {
					most = max(most, *c.PartsBefore)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if most < acked {
				t.Errorf("largest parts_before %d, %d parts were acknowledged before the kill", most, acked)
			}
		})
	}
}

func countParts(tr *trace.Trace) int {
	n := 0
	for _, turn := range tr.Turns {
		n += len(turn.Parts)
	}
	return n
}

// TestHarnessTokenBudget: --max-tokens ends a Claude Code run with
// token_limit once the model calls reach it; the gateway refused the call
// after the budget, so the record holds no call beyond it that was answered.
func TestHarnessTokenBudget(t *testing.T) {
	t.Parallel()
	traj := needTraj(t)
	h := harnessCases[0]
	bin := needHarness(t, h)
	work := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const budget = 50_000 // each call of this script sends about 20,000 tokens
	res, err := orchestrator.Run(ctx, orchestrator.Options{
		Task: "testdata/tasks/e2e", Agent: h.agent, AgentBin: bin, Model: "scripted/demo", Script: h.script,
		MaxParts: 100, MaxTokens: budget, Timeout: 90 * time.Second, Store: work, TrajBin: traj, AbortGrace: 5 * time.Second,
	})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if res.End.Reason != trace.EndTokenLimit || !strings.Contains(res.End.Detail, "--max-tokens") {
		t.Fatalf("end %q (%s), want token_limit", res.End.Reason, res.End.Detail)
	}
	var answered, refused int
	var total int64
	if _, err := model.ReadRecord(filepath.Join(res.Dir, store.ModelCallsName), func(c model.Call) error {
		switch {
		case c.Status == 200:
			if total >= budget {
				t.Errorf("call %d answered after the budget was reached (%d tokens)", c.Seq, total)
			}
			answered++
			if c.Tokens != nil {
				total += c.Tokens.Total()
			}
		case c.Status == 400:
			refused++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if answered < 2 || refused < 1 || total < budget {
		t.Errorf("%d calls answered (%d tokens), %d refused", answered, total, refused)
	}
	// The trace's totals are the budget's: the record's sums, the
	// refused calls unattributed.
	if e := res.End; e.Tokens == nil || e.Tokens.Total() != total || e.Unattributed == nil || len(e.Unattributed.Calls) < refused {
		t.Errorf("session_end tokens %+v unattributed %+v, the record's %d tokens and %d refused calls", e.Tokens, e.Unattributed, total, refused)
	}
}

// checkChunks rebuilds trajectory id's trace from the chunks in the store
// folder st alone and wants it byte for byte equal to final.
func checkChunks(t *testing.T, st, id string, final []byte) {
	t.Helper()
	ls, err := local.Open(st)
	if err != nil {
		t.Fatal(err)
	}
	codec, err := chunk.NewCodec()
	if err != nil {
		t.Fatal(err)
	}
	var rebuilt bytes.Buffer
	rep, err := codec.Rebuild(context.Background(), ls, store.TrajectoryPrefix(id), &rebuilt)
	if err != nil || rep.Gap || !bytes.Equal(rebuilt.Bytes(), final) {
		t.Errorf("trace rebuilt from %d chunks (%v, gap %v at %d): %d bytes, the trace has %d; equal: %v",
			rep.Chunks, err, rep.Gap, rep.GapStart, rebuilt.Len(), len(final), bytes.Equal(rebuilt.Bytes(), final))
	}
}
