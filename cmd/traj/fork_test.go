package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/trajlab/traj/replay/export"
	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/sandbox/agent"
	"github.com/trajlab/traj/sandbox/harness"
)

// TestFork records a two-turn OpenCode trajectory (bwrap, the scripted
// model), then forks it in turn 2, at its first command, with another
// script and a prompt (traj run --fork): the fork must inherit the
// source's parts 1..P (the command compares them, trees too, and says
// "reproduced P/P"), record forked_from, go on with the new script's parts
// and never the source's later ones, and open the next turn with the
// prompt.
func TestFork(t *testing.T) {
	t.Parallel() // with the other recording tests: see main_test.go
	traj := trajExe(t)
	requireSandbox(t, sandbox.ProviderBwrap)
	st := t.TempDir()
	task, _ := filepath.Abs("../../orchestrator/testdata/tasks/e2e")
	src, _ := filepath.Abs("testdata/fork/source.jsonl")
	newScript, _ := filepath.Abs("testdata/fork/fork.jsonl")
	out, code := trajRun(t, traj, "run", "--task", task, "--model", "scripted/demo", "--script", src, "--max-parts", "40",
		"--store", st, "--trajectory-id", "src", "--sandbox", "bwrap", "--quiet")
	if code != 0 && code != 3 { // 3: agent_error, the script ran out
		t.Fatalf("traj run: exit %d\n%s", code, out)
	}
	srcTrace := validatedTrace(t, traj, filepath.Join(st, "trajectories", "src"))
	if len(srcTrace.Turns) != 2 {
		t.Fatalf("the source has %d turns, want 2", len(srcTrace.Turns))
	}
	at := 0
	r := harness.Reader(srcTrace.Agent)
	for _, p := range srcTrace.Turns[1].Parts {
		if np, _ := r.Part(p.PartID, agent.Kind(p.PartType), p.Content); at == 0 && np.Tool != nil && strings.Contains(string(np.Tool.Input), "echo two") {
			at = p.Part
		}
	}
	if at == 0 {
		t.Fatal("the source's turn 2 has no 'echo two' command")
	}

	const hint = "Hint: mark the fork."
	out, code = trajRun(t, traj, "run", "--fork", "src", "--at-part", fmt.Sprint(at), "--script", newScript,
		"--prompt", hint, "--store", st, "--trajectory-id", "fork", "--quiet")
	if code != 3 {
		t.Fatalf("traj run --fork: exit %d, want 3 (the new script ran out)\n%s", code, out)
	}
	tr := validatedTrace(t, traj, filepath.Join(st, "trajectories", "fork"))
	ff := tr.ForkedFrom
	if ff == nil || ff.TrajectoryID != "src" || ff.Part < at || ff.Agent != srcTrace.Agent {
		t.Fatalf("forked_from %+v; want src at a part >= %d", ff, at)
	}
	if want := fmt.Sprintf("inherited parts reproduced %d/%d parts", ff.Part, ff.Part); !strings.Contains(out, want) {
		t.Fatalf("the fork does not say %q:\n%s", want, out)
	}
	var texts []string
	hinted := 0
	for _, turn := range tr.Turns {
		if len(turn.Parts) > 0 && strings.HasPrefix(turn.Parts[0].Prompt, hint) {
			hinted = turn.Parts[0].Part
		}
		for _, p := range turn.Parts {
			np, _ := r.Part(p.PartID, agent.Kind(p.PartType), p.Content)
			if p.Part <= ff.Part {
				continue
			}
			texts = append(texts, np.Text)
			if np.Tool != nil && strings.Contains(string(np.Tool.Input), "echo three") {
				t.Errorf("part %d is the source's own after the fork point: %s", p.Part, np.Tool.Input)
			}
		}
	}
	all := strings.Join(texts, "|")
	if !strings.Contains(all, "Forked here.") || !strings.Contains(all, "Hint taken.") {
		t.Errorf("the parts after the fork point are not the new script's: %q", all)
	}
	if hinted <= ff.Part {
		t.Errorf("no turn after part %d opens with the prompt (first part of the hinted turn: %d)", ff.Part, hinted)
	}

	// The lineage reaches Parquet: forked_from and fork_part.
	dir := filepath.Join(t.TempDir(), "parquet")
	if out, code := trajRun(t, traj, "export", "fork", "--store", st, "--format", "parquet", "--out", dir); code != 0 {
		t.Fatalf("export: exit %d\n%s", code, out)
	}
	files, _ := filepath.Glob(filepath.Join(dir, export.TableTrajectories, "*.parquet"))
	if len(files) != 1 {
		t.Fatalf("trajectories table files %v", files)
	}
	rows, err := parquet.ReadFile[export.TrajectoryRow](files[0])
	if err != nil || len(rows) != 1 {
		t.Fatalf("trajectories table: %d rows, %v", len(rows), err)
	}
	if r := rows[0]; r.ForkedFrom == nil || *r.ForkedFrom != "src" || r.ForkPart == nil || *r.ForkPart != int64(ff.Part) || r.RerunOf != nil {
		t.Errorf("Parquet lineage: forked_from %v, fork_part %v, rerun_of %v; want src, %d, null", r.ForkedFrom, r.ForkPart, r.RerunOf, ff.Part)
	}
}
