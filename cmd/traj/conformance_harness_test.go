package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trajlab/traj/orchestrator/folder"
	"github.com/trajlab/traj/sandbox/gateway/model"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
)

// e2eRealKey is the "real" API key the conformance runs of Claude Code
// and Codex give traj (--api-key-env): the gateway would send it upstream
// (the scripted model ignores it); their scripts grep the workspace for it
// and dump the harness's environment into env.txt.
const (
	e2eRealKeyEnv = "TRAJ_E2E_REAL_KEY"
	e2eRealKey    = "sk-real-e2e-key-7d1f0b3a"
)

// harnessRun is what the conformance test knows of the script a harness
// plays: parts per turn, whether it starts a sub-agent, and whether the
// harness reports usage per model call. Nil for a script checked
// elsewhere (OpenCode's e2e.jsonl: the orchestrator's end-to-end tests).
type harnessRun struct {
	turnParts    []int
	subAgent     bool
	perCallUsage bool
}

// total is the script's parts over all its turns.
func (h harnessRun) total() int {
	n := 0
	for _, p := range h.turnParts {
		n += p
	}
	return n
}

// checkHarnessRun checks a Claude Code or Codex recording of its e2e
// script (these checks were the orchestrator's TestHarnessesEndToEnd,
// which recorded the same two trajectories): every part of the script is
// in the trace, contiguous, over three turns, with checkpoints, run_tests
// results and usage; Claude Code's sub-agent parts sit in a child session
// under the Agent call; the model-call record adds up to the trace's
// tokens and cost; the real key is nowhere the harness could see it and
// nowhere in the trajectory or sandbox folders.
func checkHarnessRun(t *testing.T, h harnessRun, tr *trace.Trace, st, id string) {
	t.Helper()
	dir := filepath.Join(st, "trajectories", id)
	total := h.total()
	checkHarnessTrace(t, h, tr, total)

	// The model-call record accounts for every token and the cost.
	tot, err := model.ReadRecord(filepath.Join(dir, store.ModelCallsName), nil)
	if err != nil {
		t.Fatal(err)
	}
	u := tr.Usage()
	if got := u.Tokens(); got == nil || *got != tot.Tokens || tot.Calls < total/2 {
		t.Errorf("trace tokens %+v, model-call record %+v over %d calls", got, tot.Tokens, tot.Calls)
	}
	if c := u.Cost(); c == nil || *c-tot.Cost > 1e-9 || tot.Cost-*c > 1e-9 {
		t.Errorf("trace cost %v, record %v", c, tot.Cost)
	}

	// The real key: not in the harness's environment, not found in the
	// workspace by the agent, not in the trajectory folder.
	sandboxes := filepath.Join(st, folder.SandboxesDir)
	env, err := os.ReadFile(filepath.Join(sandboxes, id, "workspace", "env.txt"))
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
	grepTree(t, dir, e2eRealKey)
	grepTree(t, sandboxes, e2eRealKey)
}

// checkHarnessTrace checks the parts of a harness run: contiguous,
// grouped in the script's turns, tool parts with their results, run_tests
// results recorded, usage present, checkpoints where files changed, and the
// sub-agent's parts in a child session of the Agent call.
func checkHarnessTrace(t *testing.T, h harnessRun, tr *trace.Trace, total int) {
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

// partsToCommit reads how many parts a replay evaluate output maps to a
// commit.
func partsToCommit(t *testing.T, evalOut string) int {
	t.Helper()
	var ev struct {
		PartToCommit map[string]string `json:"part_to_commit"`
	}
	b, err := os.ReadFile(evalOut)
	if err != nil || json.Unmarshal(b, &ev) != nil {
		t.Fatalf("evaluate output %s: %v", evalOut, err)
	}
	return len(ev.PartToCommit)
}
