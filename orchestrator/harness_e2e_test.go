package orchestrator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/trajlab/traj/trace/store"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trajlab/traj/orchestrator"
	"github.com/trajlab/traj/orchestrator/folder"
	"github.com/trajlab/traj/orchestrator/progress"
	"github.com/trajlab/traj/sandbox/claudecode"
	"github.com/trajlab/traj/sandbox/codex"
	"github.com/trajlab/traj/sandbox/gateway/model"
	"github.com/trajlab/traj/trace"
)

// e2eRealKey is the "real" API key the harness tests give traj: the
// gateway sends it upstream (the scripted model ignores it); the scripts
// grep the workspace for it and dump the harness's environment.
const e2eRealKey = "sk-real-e2e-key-7d1f0b3a"

type harnessCase struct {
	agent, script string
	locate        func(string) (string, error)
	// parts per turn of the script, whether it starts a sub-agent, and
	// whether the harness reports usage per model call.
	turnParts    []int
	subAgent     bool
	perCallUsage bool
}

var harnessCases = []harnessCase{
	{claudecode.HarnessName, "testdata/e2e-claude-code.jsonl", claudecode.Binary.Locate, []int{12, 12, 1}, true, true},
	{codex.HarnessName, "testdata/e2e-codex.jsonl", codex.Binary.Locate, []int{9, 13, 1}, false, false},
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

// TestHarnessesEndToEnd records a trajectory with the real Claude Code and
// the real Codex, each through the model gateway to the scripted model,
// until the script is played: every part of the script is in the trace,
// contiguous, over three turns, with checkpoints, run_tests results and
// usage; Claude Code's sub-agent parts sit in a child session under the
// Agent call; the trace validates; the model-call record adds up to the
// trace's tokens and cost; the real key is nowhere the harness could see
// it and nowhere in the trajectory folder; checkout-part and evaluate work.
func TestHarnessesEndToEnd(t *testing.T) {
	t.Parallel()
	traj := needTraj(t)
	keyEnv := setKeyEnv(t, "TRAJ_E2E_REAL_KEY", e2eRealKey)
	for _, h := range harnessCases {
		t.Run(h.agent, func(t *testing.T) {
			t.Parallel()
			bin := needHarness(t, h)
			work := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			var events bytes.Buffer
			res, err := orchestrator.Run(ctx, orchestrator.Options{
				Task: "testdata/tasks/e2e", Agent: h.agent, AgentBin: bin, Model: "scripted/demo", Script: h.script,
				MaxParts: 100, Timeout: 150 * time.Second, Store: work, TrajBin: traj,
				APIKeyEnvs: []string{keyEnv}, Reporter: progress.NewJSON(&events), AbortGrace: 5 * time.Second,
			})
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			raw, err := os.ReadFile(filepath.Join(res.Dir, "agent_trace.json"))
			if err != nil {
				t.Fatal(err)
			}
			if probs := trace.Validate(bytes.NewReader(raw)); len(probs) > 0 {
				t.Fatalf("trace does not validate: %v", probs)
			}
			tr, err := trace.Read(bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(tr.Agent, h.agent+"@") || len(tr.Agent) <= len(h.agent)+1 {
				t.Errorf("agent %q, want %s@VERSION", tr.Agent, h.agent)
			}
			total := 0
			for _, n := range h.turnParts {
				total += n
			}
			checkHarnessTrace(t, h, tr, total)

			// The model-call record accounts for every token and the cost.
			tot, err := model.ReadRecord(filepath.Join(res.Dir, store.ModelCallsName), nil)
			if err != nil {
				t.Fatal(err)
			}
			var u trace.Usage
			for _, turn := range tr.Turns {
				for i := range turn.Parts {
					u.AddPart(&turn.Parts[i])
				}
			}
			u.End(tr.SessionEnd)
			if got := u.Tokens(); got == nil || *got != tot.Tokens || tot.Calls < total/2 {
				t.Errorf("trace tokens %+v, model-call record %+v over %d calls", got, tot.Tokens, tot.Calls)
			}
			if c := u.Cost(); c == nil || *c-tot.Cost > 1e-9 || tot.Cost-*c > 1e-9 {
				t.Errorf("trace cost %v, record %v", c, tot.Cost)
			}

			// The real key: not in the harness's environment, not found in
			// the workspace by the agent, not in the trajectory folder.
			env, err := os.ReadFile(filepath.Join(res.Workspace, "env.txt"))
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(env, []byte(e2eRealKey)) || !bytes.Contains(env, []byte("=traj-")) {
				t.Errorf("harness environment (real key present: %v):\n%s", bytes.Contains(env, []byte(e2eRealKey)), env)
			}
			for _, turn := range tr.Turns {
				for _, p := range turn.Parts {
					if strings.Contains(string(p.Content), "grep -rl sk-real-e2e-key") && !strings.Contains(string(p.Content), "no-key-found") {
						t.Errorf("part %d: the agent found the real key in its workspace", p.Part)
					}
				}
			}
			grepTree(t, res.Dir, e2eRealKey)
			grepTree(t, filepath.Join(work, folder.SandboxesDir), e2eRealKey)

			// Replay: the workspace at a part, and every state evaluated.
			dest := filepath.Join(t.TempDir(), "at5")
			out, err := exec.Command(traj, "replay", "checkout-part", res.Dir, "--part", "5", "--checkout-dest", dest).CombinedOutput()
			if err != nil {
				t.Fatalf("checkout-part: %v\n%s", err, out)
			}
			if _, err := os.Stat(filepath.Join(dest, "build.sh")); err != nil {
				t.Errorf("build.sh missing at part 5: %v", err)
			}
			evalOut := filepath.Join(t.TempDir(), "eval.json")
			out, err = exec.Command(traj, "replay", "evaluate", res.TrajectoryID, "--store", work,
				"--tests", "basics/smoke", "--output", evalOut).CombinedOutput()
			if err != nil {
				t.Fatalf("evaluate: %v\n%s", err, out)
			}
			var ev struct {
				PartToCommit map[string]string `json:"part_to_commit"`
			}
			b, _ := os.ReadFile(evalOut)
			if json.Unmarshal(b, &ev) != nil || len(ev.PartToCommit) != total {
				t.Errorf("evaluate mapped %d parts to commits, want %d", len(ev.PartToCommit), total)
			}
		})
	}
}

// checkHarnessTrace checks the parts of a harness run: contiguous,
// grouped in the script's turns, tool parts with their results, run_tests
// results recorded, usage present, checkpoints where files changed, and the
// sub-agent's parts in a child session of the Agent call.
func checkHarnessTrace(t *testing.T, h harnessCase, tr *trace.Trace, total int) {
	t.Helper()
	n, runTests, committed, withTokens := 0, 0, 0, 0
	var perTurn []int
	for _, turn := range tr.Turns {
		perTurn = append(perTurn, len(turn.Parts))
		for _, p := range turn.Parts {
			n++
			if p.Part != n {
				t.Fatalf("part %d at position %d", p.Part, n)
			}
			if len(p.EnvoiCalls) > 0 {
				runTests++
			}
			if p.RepoCheckpoint != nil && p.RepoCheckpoint.Committed {
				committed++
			}
			if p.Tokens != nil && p.Tokens.Total() > 0 {
				withTokens++
			}
		}
	}
	if n != total || len(tr.Turns) != len(h.turnParts) {
		t.Errorf("%d parts over turns %v, want %d over %v", n, perTurn, total, h.turnParts)
	}
	for i, want := range h.turnParts {
		if i < len(perTurn) && perTurn[i] != want {
			t.Errorf("turn %d has %d parts, want %d", i+1, perTurn[i], want)
		}
	}
	// Claude Code reports usage per model call (on the parts after each
	// call); Codex per turn, at its end (the turn's trailing usage).
	wantTokens := 2
	if !h.perCallUsage {
		wantTokens = 0
	}
	if runTests != 3 || committed < 8 || withTokens < wantTokens {
		t.Errorf("run_tests parts %d (want 3), checkpoints %d, parts with tokens %d", runTests, committed, withTokens)
	}
	if e := tr.SessionEnd; e == nil || e.Tokens == nil || e.Tokens.Total() == 0 || e.Cost == nil || *e.Cost <= 0 {
		t.Errorf("session_end without usage: %+v", e)
	}
	if !h.subAgent {
		return
	}
	// The sub-agent's session is named after the Agent call (its tool
	// call id, the part's id), and its parts come before the call's own
	// part, which completes when the sub-agent answered.
	var agentPart *trace.Part
	var child []int
	for _, turn := range tr.Turns {
		for i, p := range turn.Parts {
			if p.Tool == "Agent" || p.Tool == "Task" {
				agentPart = &turn.Parts[i]
			}
			if p.SessionID != tr.SessionID {
				child = append(child, p.Part)
			}
		}
	}
	if agentPart == nil || len(child) != 3 {
		t.Fatalf("Agent part %v, parts in a sub-agent session %v (want 3)", agentPart != nil, child)
	}
	for _, turn := range tr.Turns {
		for _, p := range turn.Parts {
			if p.SessionID != tr.SessionID && (p.SessionID != agentPart.PartID || p.Part > agentPart.Part) {
				t.Errorf("part %d: session %s, want the Agent call's %s before part %d", p.Part, p.SessionID, agentPart.PartID, agentPart.Part)
			}
		}
	}
}

// grepTree fails the test if secret appears in any file under dir.
func grepTree(t *testing.T, dir, secret string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(secret)) {
			t.Errorf("the real API key appears in %s", p)
		}
		return nil
	})
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
			// The record holds every call of both runs: at least the trace's tokens.
			tot, err := model.ReadRecord(filepath.Join(dir, store.ModelCallsName), nil)
			if err != nil {
				t.Fatal(err)
			}
			var u trace.Usage
			for _, turn := range tr.Turns {
				for i := range turn.Parts {
					u.AddPart(&turn.Parts[i])
				}
			}
			u.End(tr.SessionEnd)
			if got := u.Tokens(); got == nil || got.Total() > tot.Tokens.Total() {
				t.Errorf("trace tokens %+v exceed the model-call record's %+v", got, tot.Tokens)
			}
			out, err := exec.Command(traj, "replay", "verify", id, "--store", st).CombinedOutput()
			if err != nil {
				t.Errorf("replay verify: %v\n%s", err, out)
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
}
