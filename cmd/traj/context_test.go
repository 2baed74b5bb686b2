package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trajlab/traj/orchestrator/experiment/slurmtest"
	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/sandbox/opencode"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
)

// TestOneEvaluationContext: one artifact scored wherever traj scores a
// tree gets one per-case result. The agent (OpenCode, the scripted model,
// a real `traj run`) builds testdata/compilers/context.sh as its ./cc: it
// hashes what it can see of its context (nice, limits, folder, uid,
// /proc/1/cmdline, environment, cgroup limits, scratch size) and, by that
// hash, compiles each basics case or fails it, so any difference between
// two contexts flips about half of the 68 cases. The contexts: ground
// truth during the run (its entry in the run's evaluation cache, read back by
// replay evaluate from the cache), the agent's run_tests (the full
// answer in the trace), a fresh `traj replay evaluate --no-cache` from
// another folder at another priority, with other soft limits, other
// variables and open descriptors, and the Slurm
// array (`--executor slurm` on a copy of the trajectory without the
// cache) where a single-node Slurm can run here. All give the same
// passing cases, in bwrap and in a container.
func TestOneEvaluationContext(t *testing.T) {
	t.Parallel() // with the other recording tests: see main_test.go
	traj := trajExe(t)
	ocBin, err := opencode.ResolveBinary("")
	if err != nil {
		t.Fatalf("%v (make setup)", err)
	}
	cc, err := os.ReadFile(filepath.Join("testdata", "compilers", "context.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, provider := range []string{sandbox.ProviderBwrap, sandbox.ProviderContainer} {
		t.Run(provider, func(t *testing.T) {
			requireSandbox(t, provider)
			root := t.TempDir()
			st := filepath.Join(root, "store")
			id := "context-" + provider
			dir := filepath.Join(st, "trajectories", id)
			script := filepath.Join(root, "script.jsonl")
			writeFile := func(path, content string) map[string]any {
				return map[string]any{"name": "write", "args": map[string]any{"filePath": path, "content": content}}
			}
			var sb strings.Builder
			for _, l := range []map[string]any{
				{"text": "A compiler that depends on its context.", "tools": []any{writeFile("cc.sh", string(cc)),
					writeFile("build.sh", "#!/bin/sh\nset -e\ncp cc.sh cc\nchmod +x cc\n")}},
				{"tools": []any{map[string]any{"name": "tests_run_tests", "args": map[string]any{"test_path": "basics"}}}},
				{"text": "Done."},
			} {
				b, _ := json.Marshal(l)
				sb.Write(b)
				sb.WriteByte('\n')
			}
			write(t, script, sb.String())
			args := []string{"run", "--store", st, "--sandbox", provider, "--quiet", "--trajectory-id", id,
				"--task", "testdata/tasks/context", "--model", "scripted/demo", "--script", script,
				"--max-parts", "10", "--timeout", "8m"}
			cmd := exec.Command(traj, args...)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root, "LANG=C.UTF-8", "TRAJ_OPENCODE_BIN=" + ocBin}
			// The suites the replays below see (make test sets
			// TRAJ_TESTS_DIR): they are part of the environment version,
			// and so of every cache key.
			if d := os.Getenv("TRAJ_TESTS_DIR"); d != "" {
				cmd.Env = append(cmd.Env, "TRAJ_TESTS_DIR="+d)
			}
			out, err := cmd.CombinedOutput()
			if ee, ok := err.(*exec.ExitError); err != nil && !(ok && ee.ExitCode() == 3) {
				t.Fatalf("traj %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			tr := validatedTrace(t, traj, dir)
			final := tr.SessionEnd.FinalGitCommit
			results := map[string][]string{}

			// run_tests: the answer in the trace.
			for _, turn := range tr.Turns {
				for _, p := range turn.Parts {
					for _, c := range p.EnvoiCalls {
						results["run_tests"] = passingCases(t, c)
					}
				}
			}
			gts := slices.Clone(tr.SessionEnd.GroundTruth)
			for _, turn := range tr.Turns {
				for _, p := range turn.Parts {
					gts = append(gts, p.GroundTruth...)
				}
			}
			for _, g := range gts {
				t.Logf("ground truth of %s: %d of %d, key %s %s, error %q", g.Commit, g.Passed, g.Total, g.Key, g.KeyWhy, g.Error)
			}
			// Ground truth: its entry under the artifacts' key, served by
			// replay evaluate from the run's cache.
			gt := evaluateOut(t, exec.Command(traj, "replay", "evaluate", id, "--store", st, "--sandbox", provider), root, final)
			if !gt.cached {
				t.Errorf("replay evaluate did not find ground truth's entry in the cache")
			}
			results["ground truth"] = gt.passing
			// A fresh replay evaluate elsewhere: another folder, priority,
			// environment and temp folder.
			other := t.TempDir()
			re := exec.Command("sh", "-c", `ulimit -S -s unlimited; ulimit -S -n 4096; exec nice -n 5 "$@"`, "sh",
				traj, "replay", "evaluate", id, "--store", st, "--no-cache", "--sandbox", provider)
			re.Dir = other
			// An inherited descriptor (a shell's, a batch system's).
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer pr.Close()
			defer pw.Close()
			re.ExtraFiles = []*os.File{pr, pw}
			re.Env = append(os.Environ(), "LANG=fr_FR.UTF-8", "TZ=Pacific/Kiritimati", "TERM=dumb", "TMPDIR="+other, "LC_ALL=C")
			results["replay evaluate"] = evaluateOut(t, re, root, final).passing
			compare := func(t *testing.T) {
				first := results["run_tests"]
				if len(first) == 0 || len(first) == 68 {
					t.Fatalf("run_tests passed %d of the basics cases: the compiler should pass some and fail some", len(first))
				}
				for where, got := range results {
					t.Logf("%s: %d cases pass", where, len(got))
					if !slices.Equal(got, first) {
						t.Errorf("%s passes %v\nrun_tests passes %v", where, got, first)
					}
				}
			}
			compare(t)
			// The Slurm array, on a copy of the trajectory without the cache.
			t.Run("slurm", func(t *testing.T) {
				slurmtest.Need(t)
				c := slurmtest.Start(t)
				st2 := filepath.Join(root, "store2", "trajectories")
				if err := os.MkdirAll(st2, 0o755); err != nil {
					t.Fatal(err)
				}
				if out, err := exec.Command("cp", "-a", dir, st2+"/").CombinedOutput(); err != nil {
					t.Fatalf("copy the trajectory: %v %s", err, out)
				}
				// The same store secret: the nonces (and so a fixed
				// program's chance passes) are the store's, and this is a
				// copy of the same store without its cache.
				if out, err := exec.Command("cp", "-a", filepath.Join(st, store.EvalSecretName), filepath.Dir(st2)+"/").CombinedOutput(); err != nil {
					t.Fatalf("copy the store's secret: %v %s", err, out)
				}
				if err := os.Chmod(root, 0o755); err != nil {
					t.Fatal(err)
				}
				sl := exec.Command(traj, "replay", "evaluate", id, "--store", filepath.Dir(st2), "--sandbox", provider, "--executor", "slurm",
					"--tasks", "1", "--poll", "250ms", "--slurm-opt=--cpus-per-task=1")
				sl.Env = append(os.Environ(), c.Env...)
				sl.Dir = root
				results["slurm array"] = evaluateOut(t, sl, root, final).passing
				compare(t)
			})
		})
	}
}

// passingCases reads the passing cases of a run_tests answer.
func passingCases(t *testing.T, c trace.EnvoiCall) []string {
	t.Helper()
	var r struct {
		Cases []struct {
			Name   string `json:"name"`
			Passed bool   `json:"passed"`
			Phase  string `json:"phase"`
			Ms     int64  `json:"duration_ms"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(c.Result, &r); err != nil || len(r.Cases) == 0 {
		t.Fatalf("run_tests answer %s: %v (want every case: feedback full)", c.Result, err)
	}
	var out []string
	for _, k := range r.Cases {
		if k.Passed {
			out = append(out, k.Name)
		} else if k.Phase == "timeout" {
			// Where contexts differ, the reason is the first thing to know.
			t.Logf("run_tests: %s timed out (%d ms)", k.Name, k.Ms)
		}
	}
	slices.Sort(out)
	return out
}

type evaluated struct {
	passing []string
	cached  bool
}

// evaluateOut runs a replay evaluate (cmd, without --output) and reads
// commit's passing cases from its report.
func evaluateOut(t *testing.T, cmd *exec.Cmd, root, commit string) evaluated {
	t.Helper()
	dest := filepath.Join(root, "eval-"+time.Now().Format("150405.000000000")+".json")
	cmd.Args = append(cmd.Args, "--output", dest)
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	if cmd.Dir == "" {
		cmd.Dir = root
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	var ev replay.Output
	b, err := os.ReadFile(dest)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	ce := ev.CommitEvaluations[commit]
	if ce == nil || ce.Error != "" {
		t.Fatalf("%s: no result for %s: %+v\n%s", strings.Join(cmd.Args, " "), commit, ce, out)
	}
	var e evaluated
	for _, c := range ce.Suites["basics"].Cases {
		if c.Passed {
			e.passing = append(e.passing, c.Name)
		}
	}
	slices.Sort(e.passing)
	t.Logf("%s: %s, source %s", strings.Join(cmd.Args, " "), commit, ce.Source)
	e.cached = ce.Source == replay.SourceCache || ce.Source == replay.SourceArtifact
	return e
}
