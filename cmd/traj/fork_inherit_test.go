package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/sandbox/agent"
	"github.com/trajlab/traj/sandbox/harness"
	"github.com/trajlab/traj/trace"
)

// readmeForkLine is the README's fork of a recording with its own model:
// TestForkInheritsScript runs it as written there.
func readmeForkLine(t *testing.T) string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, block := range readmeBlocks(string(readme)) {
		for _, line := range strings.Split(block.text, "\n") {
			line, _, _ = strings.Cut(line, " #")
			line = strings.TrimSpace(line)
			if strings.HasPrefix(line, "traj run --fork ") && !strings.Contains(line, "--model") {
				return line
			}
		}
	}
	t.Fatal("the README has no `traj run --fork REF --at-part P` line without --model")
	return ""
}

// TestForkInheritsScript records an OpenCode trajectory with the demo
// script (bwrap, the scripted model), then runs the README's fork line on
// it at part 20 without --script: the fork must exit 0, inherit the
// source's parts, and go on with the source's script from where the source
// was (its parts after the fork point are the source's, not the script's
// first lines again), in the source's sandbox. A fork naming another task
// explicitly is refused (exit 2), even the flag's old default.
func TestForkInheritsScript(t *testing.T) {
	t.Parallel() // with the other recording tests: see main_test.go
	traj := trajExe(t)
	requireSandbox(t, sandbox.ProviderBwrap)
	st := t.TempDir()
	task, _ := filepath.Abs("../../orchestrator/testdata/tasks/e2e")
	script, _ := filepath.Abs("../../sandbox/scripted/demo/c-compiler.jsonl")
	out, code := trajRun(t, traj, "run", "--task", task, "--model", "scripted/demo", "--script", script, "--max-parts", "28",
		"--store", st, "--trajectory-id", "src", "--sandbox", "bwrap", "--memory", "3g", "--quiet")
	if code != 0 {
		t.Fatalf("traj run: exit %d\n%s", code, out)
	}
	srcTrace := validatedTrace(t, traj, filepath.Join(st, "trajectories", "src"))

	// The task flag given explicitly is not "not given".
	out, code = trajRun(t, traj, "run", "--fork", "src", "--at-part", "20", "--task", "c-compiler", "--store", st, "--quiet")
	if code != 2 || !strings.Contains(out, "cannot change the task") {
		t.Fatalf("traj run --fork src --task c-compiler: exit %d, want 2 and a refusal\n%s", code, out)
	}
	// So is it for a resume (before: the flag's default was ignored alike).
	out, code = trajRun(t, traj, "run", "--resume", "src", "--max-parts", "40", "--task", "c-compiler", "--store", st, "--quiet")
	if code == 0 || !strings.Contains(out, "a resume cannot change it") {
		t.Fatalf("traj run --resume src --task c-compiler: exit %d, want a refusal\n%s", code, out)
	}

	line := strings.NewReplacer("REF", "src", " P", " 20").Replace(readmeForkLine(t))
	args := append(strings.Fields(line)[1:], "--store", st, "--trajectory-id", "fork", "--quiet")
	out, code = trajRun(t, traj, args...)
	if code != 0 {
		t.Fatalf("%s: exit %d, want 0\n%s", line, code, out)
	}
	tr := validatedTrace(t, traj, filepath.Join(st, "trajectories", "fork"))
	ff := tr.ForkedFrom
	if ff == nil || ff.TrajectoryID != "src" || ff.Part < 20 {
		t.Fatalf("forked_from %+v; want src at a part >= 20", ff)
	}
	if want := fmt.Sprintf("inherited parts reproduced %d/%d parts", ff.Part, ff.Part); !strings.Contains(out, want) {
		t.Fatalf("the fork does not say %q:\n%s", want, out)
	}
	if tr.AgentModel != srcTrace.AgentModel || tr.Task != srcTrace.Task {
		t.Errorf("the fork ran %s on %s; its source %s on %s", tr.AgentModel, tr.Task, srcTrace.AgentModel, tr.Task)
	}
	// After the fork point the script goes on: the fork's parts are the
	// source's (the same script lines, answered live).
	r := harness.Reader(srcTrace.Agent)
	neutral := func(tr *trace.Trace) map[int]string {
		m := map[int]string{}
		for _, turn := range tr.Turns {
			for _, p := range turn.Parts {
				np, _ := r.Part(p.PartID, agent.Kind(p.PartType), p.Content)
				s := string(np.Kind) + "|" + np.Text
				if np.Tool != nil {
					s += "|" + np.Tool.Name + "|" + string(np.Tool.Input)
				}
				m[p.Part] = s
			}
		}
		return m
	}
	src, fork := neutral(srcTrace), neutral(tr)
	after := 0
	for p := ff.Part + 1; p <= len(src); p++ {
		if fork[p] == "" {
			break
		}
		after++
		if fork[p] != src[p] {
			t.Errorf("part %d after the fork point: %q, the source's %q (the script did not go on where it was)", p, fork[p], src[p])
		}
	}
	if after == 0 {
		t.Fatalf("the fork recorded no part after its fork point %d (%d parts)", ff.Part, len(fork))
	}
	// The sandbox is the source's (run.json keeps the options asked for).
	rs := func(id string) []byte {
		b, err := os.ReadFile(filepath.Join(st, "trajectories", id, "run.json"))
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			Sandbox json.RawMessage `json:"sandbox"`
		}
		if err := json.Unmarshal(b, &v); err != nil || !bytes.Contains(v.Sandbox, []byte(`"memory"`)) {
			t.Fatalf("%s's run.json: sandbox %s, %v", id, v.Sandbox, err)
		}
		return v.Sandbox
	}
	if a, b := rs("src"), rs("fork"); !bytes.Equal(a, b) {
		t.Errorf("the fork's sandbox %s, its source's %s", b, a)
	}
}
