package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeNotRun are the README's shell lines TestREADMEBlocksRun does not
// run, by prefix, and why. Each must still name a line of the README (a
// stale entry fails the test); everything else in a ```sh block is run.
var readmeNotRun = map[string]string{
	"make ":                           "make targets: CI runs them (the parse test checks each names a target)",
	"export ":                         "sets the shell's variables; the test sets them itself",
	"traj run ":                       "records a trajectory: real harness and model for minutes (orchestrator e2e tests, make demo; TestForkInheritsScript runs the README's fork line as written)",
	"bin/traj run ":                   "records a trajectory (TestAdversarialAgent runs the container provider)",
	"traj model serve ":               "a server that runs until stopped (sandbox/scripted tests)",
	"traj view ":                      "a server that runs until stopped (replay/view tests)",
	"traj mcp ":                       "an MCP stdio server (environment/mcp tests)",
	"traj experiment ":                "needs the user's sweep.yaml and runs trajectories (orchestrator/experiment tests)",
	"traj gc ":                        "acts on finished experiments' sandboxes (orchestrator/experiment tests)",
	"traj report --experiment ":       "needs an experiment (orchestrator/experiment tests)",
	"traj sweep ":                     "forks a trajectory many times for minutes (orchestrator/sweep: TestSweepLocal, TestSweepSlurm runs traj sweep --executor slurm)",
	"traj replay rerun ":              "re-executes a trajectory for minutes (TestHarnessConformance reruns each harness's, TestFork forks one)",
	"traj replay evaluate ":           "evaluates the 50 parts' trees: 13 min on 2 loaded cores (TestEveryCommandTakesREF runs it on a small trajectory); --executor slurm|kube need a cluster (TestEvaluateOnSlurm starts a Slurm, TestEvaluateKubeManifest checks the manifest)",
	"git --git-dir runs/sandboxes/":   "the sandbox is not kept with the demo fixture (orchestrator tests read the checkpoint history with git)",
	"traj env test basics/smoke":      "run on the demo's checkout below, with its own workspace",
	"traj export REF… --format atif ": "run below with the parquet export's REF",
}

// TestREADMEBlocksRun pastes the README's shell blocks into sh, as a new
// user would, on the demo trajectory (replay/export/testdata/demo, what
// `make demo` records) in a store that TRAJ_STORE names: every line not in
// readmeNotRun must exit 0, with placeholders filled (REF: the demo's id,
// P: a part, DIR and FILE: fresh paths) and optional [groups] taken with
// their first alternative. The SQL example then runs in DuckDB on the
// Parquet export and must return rows.
func TestREADMEBlocksRun(t *testing.T) {
	traj := trajExe(t)
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	repo, _ := filepath.Abs("../..")
	root := t.TempDir()
	bin := filepath.Join(root, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(traj, filepath.Join(bin, "traj")); err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join(root, "runs")
	demo := filepath.Join(runs, "trajectories", "demo")
	if err := os.MkdirAll(demo, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"agent_trace.json", "repo.bundle", "evaluation.json"} {
		b, err := os.ReadFile(filepath.Join(repo, "replay/export/testdata/demo", name))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(demo, name), b)
	}
	work := filepath.Join(root, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	// Lines that name the repository's task folders
	// (environment/harbor/testdata/…) run as pasted from its root.
	if err := os.Symlink(filepath.Join(repo, "environment"), filepath.Join(work, "environment")); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "TRAJ_STORE="+runs, "XDG_CACHE_HOME="+filepath.Join(root, "cache"))
	optional := regexp.MustCompile(`\[([^\[\]]*)\]`)
	used := map[string]bool{}
	var sql string
	n := 0
	for _, block := range readmeBlocks(string(readme)) {
		if block.lang == "sql" {
			sql = block.text
			continue
		}
		if block.lang != "sh" {
			continue
		}
		for _, line := range strings.Split(strings.ReplaceAll(block.text, "\\\n", " "), "\n") {
			line = strings.TrimSpace(line)
			if i := strings.Index(line, " #"); i >= 0 {
				line = strings.TrimSpace(line[:i])
			}
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			skip := ""
			for prefix := range readmeNotRun {
				if strings.HasPrefix(line+" ", prefix) {
					skip = prefix
				}
			}
			if skip != "" {
				used[skip] = true
				continue
			}
			for optional.MatchString(line) {
				line = optional.ReplaceAllStringFunc(line, func(g string) string {
					alt, _, _ := strings.Cut(g[1:len(g)-1], "|")
					return alt
				})
			}
			n++
			dir := filepath.Join(root, "out", fmt.Sprintf("%s-%d", strings.Fields(line)[1], n))
			args := strings.NewReplacer("REF…", "demo", "REF", "demo", " P ", " 10 ", "DIR", dir, "FILE", filepath.Join(root, "file.json"),
				"URL", runs).Replace(line + " ")
			cwd := work // outputs named relative (report.html) land there
			if strings.Contains(args, "--trace agent_trace.json") {
				cwd = demo // the form that names the files, run beside them
			}
			if strings.HasPrefix(args, "bin/traj ") {
				args = strings.TrimPrefix(args, "bin/")
			}
			out, code := shell(t, cwd, env, args)
			t.Logf("$ %s\n%s", args, firstLines(out, 4))
			if code != 0 {
				t.Errorf("README line %q: exit %d\n%s", line, code, out)
			}
			if strings.HasPrefix(args, "traj export ") && strings.Contains(args, "--format parquet") {
				if sql != "" {
					t.Fatal("the SQL example comes before the export")
				}
				atif := strings.Replace(args, "--format parquet", "--format atif", 1)
				atif = strings.Replace(atif, dir, dir+"-atif", 1)
				if out, code := shell(t, cwd, env, atif); code != 0 {
					t.Errorf("%s: exit %d\n%s", atif, code, out)
				}
				used["traj export REF… --format atif "] = true
				defer func(dir string) { checkSQL(t, sql, dir) }(dir)
			}
			if strings.HasPrefix(args, "traj replay checkout-part demo ") {
				if out, code := shell(t, work, env, "traj env test basics/smoke --workspace "+dir+" --json"); code != 0 {
					t.Errorf("traj env test on the demo's part 10: exit %d\n%s", code, out)
				}
				used["traj env test basics/smoke"] = true
			}
		}
	}
	if n < 8 {
		t.Fatalf("ran only %d README lines", n)
	}
	for prefix := range readmeNotRun {
		if !used[prefix] {
			t.Errorf("readmeNotRun names %q, which no README line starts with any more", prefix)
		}
	}
	// The SQL check runs in the deferred call above, once sql is read.
}

// checkSQL runs the README's SQL example on the Parquet export in dir with
// the pinned DuckDB and fails when it returns no rows.
func checkSQL(t *testing.T, sql, dir string) {
	t.Helper()
	if sql == "" {
		t.Fatal("the README has no SQL example")
	}
	duck, _ := filepath.Abs("../../replay/export/testdata/duckdb")
	q := strings.TrimSuffix(strings.TrimSpace(strings.ReplaceAll(sql, "DIR", dir)), ";")
	in, _ := json.Marshal([]string{"SELECT count(*) AS n FROM (" + q + ")"})
	cmd := exec.Command("node", "query.mjs")
	cmd.Dir, cmd.Stdin = duck, bytes.NewReader(in)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("DuckDB (make setup installs it): %v\n%s", err, out)
	}
	var res [][]map[string]any
	if err := json.Unmarshal(out, &res); err != nil || len(res) != 1 || len(res[0]) != 1 {
		t.Fatalf("DuckDB answer %s: %v", out, err)
	}
	if n := res[0][0]["n"]; n == float64(0) || n == "0" {
		t.Errorf("the README's SQL example returns no rows on the demo's export")
	} else {
		t.Logf("the README's SQL example: %v rows", n)
	}
}

type readmeBlock struct{ lang, text string }

// readmeBlocks are the fenced code blocks of a Markdown text with their
// language.
func readmeBlocks(md string) []readmeBlock {
	var out []readmeBlock
	var cur *readmeBlock
	sc := bufio.NewScanner(strings.NewReader(md))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			if cur == nil {
				cur = &readmeBlock{lang: strings.TrimPrefix(line, "```")}
			} else {
				out = append(out, *cur)
				cur = nil
			}
			continue
		}
		if cur != nil {
			cur.text += line + "\n"
		}
	}
	return out
}

// shell runs line with sh in dir and returns its output and exit status.
func shell(t *testing.T, dir string, env []string, line string) (string, int) {
	t.Helper()
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("sh -c %q: %v", line, err)
	}
	return string(out), 0
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = append(lines[:n], "…")
	}
	return strings.Join(lines, "\n")
}
