// Package replaytest builds trajectories for replay's tests: a real git
// repository whose commits follow a script of parts, the trace that names
// them, a bundle written by the git CLI, and a tiny environment that
// builds the workspace with its build.sh and compiles cases with gcc through
// the workspace's ./cc, so results vary with each commit's files.
package replaytest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/gitstate"
)

// Git runs the git CLI in dir with a fixed identity and clock and returns
// its trimmed stdout.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_AUTHOR_NAME=traj", "GIT_AUTHOR_EMAIL=traj@example.invalid",
		"GIT_COMMITTER_NAME=traj", "GIT_COMMITTER_EMAIL=traj@example.invalid",
		"GIT_AUTHOR_DATE=2026-11-21T10:00:00Z", "GIT_COMMITTER_DATE=2026-11-21T10:00:00Z",
		"GIT_CONFIG_NOSYSTEM=1", "HOME="+dir,
	)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return strings.TrimSpace(string(out))
}

// Change is what one part does to the workspace: files to write and files
// to delete. A zero Change leaves the workspace as it is (the part makes no
// commit).
type Change struct {
	Write  map[string]string
	Delete []string
	// Calls are run_tests calls the agent made in this part.
	Calls []trace.EnvoiCall
}

// Trajectory is a built trajectory on disk.
type Trajectory struct {
	ID string
	// Dir holds agent_trace.json and repo.bundle.
	Dir        string
	TracePath  string
	BundlePath string
	Trace      *trace.Trace
	// Initial is the empty commit before part 1.
	Initial string
	// Commits is each part's effective commit, index 0 = part 1.
	Commits []string
	// Work is the git work tree the commits were made in.
	Work string
	// HistoryBundles are the per-part incremental bundles, in part order
	// (Spec.History).
	HistoryBundles []string
}

// Build makes a trajectory with one part per change, turnSize parts per
// turn, in a fresh temp dir. The trace has the original recorder's fields
// plus traj's when trajFields is set; without them it is in the original's
// shape, with repo_checkpoint null on parts that changed nothing.
func Build(t testing.TB, id string, changes []Change, turnSize int, trajFields bool) *Trajectory {
	t.Helper()
	return BuildSpec(t, Spec{ID: id, Changes: changes, TurnSize: turnSize, TrajFields: trajFields})
}

// Spec describes a trajectory for BuildSpec.
type Spec struct {
	ID         string
	Changes    []Change
	TurnSize   int
	TrajFields bool
	// EndReason defaults to part_limit; Model to scripted/tiny.
	EndReason string
	Model     string
	// MessagePrefix starts every commit message, so two specs with the
	// same changes reach the same trees through different commits.
	MessagePrefix string
	// GitCLIBundle writes repo.bundle with `git bundle create` instead of
	// trace/gitstate (the bundle traj itself writes).
	GitCLIBundle bool
	// History also writes, like the orchestrator, history/<part>.bundle
	// after each committed part: a full bundle first, then incremental
	// ones (trace/gitstate).
	History bool
}

// BuildSpec is Build with every knob.
func BuildSpec(t testing.TB, spec Spec) *Trajectory {
	t.Helper()
	id, changes, turnSize, trajFields := spec.ID, spec.Changes, spec.TurnSize, spec.TrajFields
	if spec.EndReason == "" {
		spec.EndReason = trace.EndPartLimit
	}
	if spec.Model == "" {
		spec.Model = "scripted/tiny"
	}
	root := t.TempDir()
	work := filepath.Join(root, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	Git(t, work, "init", "-q", "-b", "main")
	Git(t, work, "commit", "-q", "--allow-empty", "-m", "initial")
	initial := Git(t, work, "rev-parse", "HEAD")

	tr := &trace.Trace{
		TrajectoryID: id,
		SessionID:    "ses_" + id,
		Agent:        "opencode",
		AgentModel:   spec.Model,
		StartedAt:    "2026-11-21T10:00:00.000000Z",
		Artifacts:    map[string]string{},
	}
	if trajFields {
		tr.SchemaVersion = trace.SchemaVersion
		tr.Task = "c-compiler"
		tr.Environment = &trace.EnvironmentInfo{Name: "tiny", TestPaths: []string{"basics", "extra"}}
	}
	prev := initial
	var commits, history []string
	lastBundled := ""
	historyDir := filepath.Join(root, id, "history")
	var turn *trace.Turn
	for i, ch := range changes {
		part := i + 1
		if (part-1)%turnSize == 0 {
			tr.Turns = append(tr.Turns, trace.Turn{Turn: len(tr.Turns) + 1, Timestamp: ts(part), Prompt: "work on the compiler"})
		}
		turn = &tr.Turns[len(tr.Turns)-1]
		for name, content := range ch.Write {
			p := filepath.Join(work, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, name := range ch.Delete {
			if err := os.Remove(filepath.Join(work, name)); err != nil {
				t.Fatal(err)
			}
		}
		Git(t, work, "add", "-A")
		changed := Git(t, work, "diff", "--cached", "--name-only")
		cp := &trace.RepoCheckpoint{CommitBefore: prev, CommitAfter: prev, ChangedFiles: []string{}}
		if changed != "" {
			Git(t, work, "commit", "-q", "-m", fmt.Sprintf("%spart %d", spec.MessagePrefix, part))
			cp.CommitAfter = Git(t, work, "rev-parse", "HEAD")
			cp.Committed = true
			cp.ChangedFiles = strings.Split(changed, "\n")
			if spec.History {
				path := filepath.Join(historyDir, fmt.Sprintf("%08d.bundle", part))
				writeGitstateBundle(t, work, path, lastBundled)
				history = append(history, path)
				lastBundled = cp.CommitAfter
			}
		}
		calls := ch.Calls
		if calls == nil {
			calls = []trace.EnvoiCall{}
		}
		p := trace.Part{
			Part: part, Timestamp: ts(part), MessageID: fmt.Sprintf("msg_%03d", part),
			Sessions: nil, SessionIDs: []string{tr.SessionID}, NewMessages: nil,
			EnvoiCalls: calls, RepoCheckpoint: cp, GitCommit: cp.CommitAfter,
		}
		if !trajFields && !cp.Committed {
			// The original recorder writes repo_checkpoint null on a
			// part that changed nothing; git_commit is still set.
			p.RepoCheckpoint = nil
		}
		if trajFields {
			tok := trace.Tokens{Input: 1000, Output: 200}
			cost := 0.001
			p.Tokens, p.Cost, p.PartType = &tok, &cost, "tool"
		}
		if part == 1 || (part-1)%turnSize == 0 {
			p.Prompt = turn.Prompt
		}
		turn.Parts = append(turn.Parts, p)
		start, end := turn.Parts[0].Part, part
		turn.PartStart, turn.PartEnd = &start, &end
		prev = cp.CommitAfter
		commits = append(commits, prev)
	}
	tr.SessionEnd = &trace.SessionEnd{Reason: spec.EndReason, TotalParts: len(changes), TotalTurns: len(tr.Turns), FinalGitCommit: prev}
	if trajFields {
		tr.SessionEnd.EndedAt = ts(len(changes) + 1)
		tok := trace.Tokens{Input: int64(1000 * len(changes)), Output: int64(200 * len(changes))}
		cost := 0.001 * float64(len(changes))
		tr.SessionEnd.Tokens, tr.SessionEnd.Cost = &tok, &cost
	}

	dir := filepath.Join(root, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tj := &Trajectory{ID: id, Dir: dir, TracePath: filepath.Join(dir, "agent_trace.json"),
		BundlePath: filepath.Join(dir, "repo.bundle"), Trace: tr, Initial: initial, Commits: commits, Work: work, HistoryBundles: history}
	tr.Artifacts = map[string]string{trace.ArtifactTrace: "file://" + tj.TracePath, trace.ArtifactBundle: "file://" + tj.BundlePath}
	if trajFields {
		// traj's own shape: recorded with the real trace writer, read back.
		writeWithWriter(t, tj.TracePath, tr)
		f, err := os.Open(tj.TracePath)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if tj.Trace, err = trace.Read(f); err != nil {
			t.Fatal(err)
		}
	} else {
		// The original recorder's shape: plain JSON, no traj fields.
		data, err := json.MarshalIndent(tr, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(tj.TracePath, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if spec.GitCLIBundle {
		Git(t, work, "bundle", "create", "-q", tj.BundlePath, "--all")
	} else {
		writeGitstateBundle(t, work, tj.BundlePath, "")
	}
	return tj
}

// writeGitstateBundle writes the bundle of every ref of the repository in
// work with trace/gitstate: full when since is empty, else incremental.
func writeGitstateBundle(t testing.TB, work, path, since string) {
	t.Helper()
	ctx := context.Background()
	r, err := gitstate.OpenClone(ctx, work, gitstate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var from plumbing.Hash
	if since != "" {
		from = plumbing.NewHash(since)
	}
	if _, err := r.WriteHistoryBundle(ctx, f, from); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func writeWithWriter(t testing.TB, path string, tr *trace.Trace) {
	t.Helper()
	w, err := trace.Create(path, tr.Header(), trace.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, turn := range tr.Turns {
		if err := w.BeginTurn(trace.TurnStart{Turn: turn.Turn, Timestamp: turn.Timestamp, Prompt: turn.Prompt, SessionID: tr.SessionID}); err != nil {
			t.Fatal(err)
		}
		for i := range turn.Parts {
			if err := w.AppendPart(&turn.Parts[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.EndTurn(trace.TurnEnd{EndedAt: turn.Parts[len(turn.Parts)-1].Timestamp}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Finish(*tr.SessionEnd, tr.Artifacts); err != nil {
		t.Fatal(err)
	}
	if err := w.RemoveShadow(); err != nil {
		t.Fatal(err)
	}
}

func ts(part int) string {
	return trace.Timestamp(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC).Add(time.Duration(part) * time.Minute))
}

// BuildScript is a build.sh that makes ./cc, a wrapper around gcc that
// refuses any source file whose name contains a word listed in the
// workspace's broken.txt at build time: a bug a part can toggle.
const BuildScript = `#!/bin/sh
set -e
broken=$(cat broken.txt 2>/dev/null || true)
{
  echo '#!/bin/sh'
  for w in $broken; do
    echo "case \"\$*\" in *$w*) echo \"cc: cannot compile $w\" >&2; exit 1;; esac"
  done
  echo 'exec gcc -w "$@"'
} > cc
chmod +x cc
`

// Case is one tiny-environment test: a C program and its expected exit code.
type Case struct {
	Source string
	Exit   int
}

// Suites are the tiny environment's test paths and cases.
var Suites = map[string]map[string]Case{
	"basics": {
		"add":   {Source: "int main(void){int a=2,b=3;return a+b;}", Exit: 5},
		"ret42": {Source: "int main(void){return 42;}", Exit: 42},
	},
	"extra": {
		"loop": {Source: "int main(void){int s=0;for(int i=0;i<4;i++)s+=i;return s;}", Exit: 6},
	},
}

// TinyEnv is a replay.Evaluator over Suites: it runs the workspace's
// build.sh, then compiles and runs each case with ./cc.
type TinyEnv struct{ V string }

// Version implements replay.Evaluator.
func (e TinyEnv) Version() string {
	if e.V == "" {
		return "tiny-1"
	}
	return e.V
}

// Evaluate implements replay.Evaluator.
func (e TinyEnv) Evaluate(ctx context.Context, dir string, paths []string) (replay.Result, error) {
	res := replay.Result{Suites: map[string]replay.SuiteResult{}}
	buildErr := ""
	if _, err := os.Stat(filepath.Join(dir, "build.sh")); err != nil {
		buildErr = "build.sh is missing"
	} else {
		cmd := exec.CommandContext(ctx, "sh", "build.sh")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = "build.sh failed: " + string(out)
		}
	}
	for _, path := range paths {
		cases, ok := Suites[path]
		if !ok {
			return replay.Result{}, fmt.Errorf("unknown test path %q", path)
		}
		names := make([]string, 0, len(cases))
		for n := range cases {
			names = append(names, n)
		}
		sort.Strings(names)
		s := replay.SuiteResult{Error: buildErr}
		for _, n := range names {
			ok := buildErr == "" && runCase(ctx, dir, n, cases[n])
			s.Cases = append(s.Cases, replay.CaseResult{Name: n, Passed: ok})
			s.Total++
			if ok {
				s.Passed++
			} else {
				s.Failed++
			}
		}
		res.Suites[path] = s
	}
	return res, nil
}

func runCase(ctx context.Context, dir, name string, c Case) bool {
	tmp, err := os.MkdirTemp("", "tiny-case-*")
	if err != nil {
		return false
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, name+".c")
	if err := os.WriteFile(src, []byte(c.Source), 0o644); err != nil {
		return false
	}
	exe := filepath.Join(tmp, name)
	if err := exec.CommandContext(ctx, filepath.Join(dir, "cc"), src, "-o", exe).Run(); err != nil {
		return false
	}
	err = exec.CommandContext(ctx, exe).Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		return false
	}
	return code == c.Exit
}

// AttributionScript is a ten-part trajectory in which basics/add first
// passes at part 3, breaks at part 5 and is fixed at part 8, parts 2, 6 and 9
// change nothing, and part 8 restores part 4's tree exactly (a new commit
// with an old tree).
func AttributionScript() []Change { return AttributionScriptBreaking("add") }

// AttributionScriptBreaking is AttributionScript with part 5 breaking every
// case whose source file name contains word.
func AttributionScriptBreaking(word string) []Change {
	return []Change{
		{Write: map[string]string{"README.md": "a C compiler\n"}}, // 1: no build.sh: all fail
		{}, // 2: no change
		{Write: map[string]string{"build.sh": BuildScript, "broken.txt": ""}}, // 3: all pass
		{Write: map[string]string{"notes.txt": "v1\n"}},                       // 4
		{Write: map[string]string{"broken.txt": word + "\n"}},                 // 5: add breaks
		{}, // 6
		{Write: map[string]string{"notes.txt": "v2\n"}},                   // 7
		{Write: map[string]string{"broken.txt": "", "notes.txt": "v1\n"}}, // 8: fixed; tree of part 4
		{}, // 9
		{Write: map[string]string{"src/main.c": "/* the compiler */\n"}}, // 10
	}
}

// ControlFlowCases are the basics/control_flow case names of the
// C-compiler environment, as words for broken.txt.
var ControlFlowCases = []string{"break_continue", "do_while", "for_loop", "goto", "if_else", "nested_loops", "switch", "switch_fallthrough", "while_sum"}

// ProgressScript is a trajectory that fixes basics/control_flow cases over
// time: part 2 adds the build with every case broken, and each entry of
// fixes (part → words) rewrites broken.txt; a word prefixed with "+"
// breaks that case again. Other parts touch notes.txt every third part or
// change nothing.
func ProgressScript(parts int, fixes map[int][]string) []Change {
	broken := map[string]bool{}
	for _, w := range ControlFlowCases {
		broken[w] = true
	}
	list := func() string {
		var ws []string
		for _, w := range ControlFlowCases {
			if broken[w] {
				ws = append(ws, w)
			}
		}
		return strings.Join(ws, "\n") + "\n"
	}
	out := make([]Change, parts)
	for p := 1; p <= parts; p++ {
		ch := Change{}
		switch {
		case p == 1:
			ch.Write = map[string]string{"README.md": "a C compiler\n"}
		case p == 2:
			ch.Write = map[string]string{"build.sh": BuildScript, "broken.txt": list()}
		case fixes[p] != nil:
			for _, w := range fixes[p] {
				if strings.HasPrefix(w, "+") {
					broken[w[1:]] = true
				} else {
					delete(broken, w)
				}
			}
			ch.Write = map[string]string{"broken.txt": list()}
		case p%3 == 0:
			ch.Write = map[string]string{"notes.txt": fmt.Sprintf("notes at part %d\n", p)}
		}
		out[p-1] = ch
	}
	return out
}

// PermutedRewrite is the adversarial checkpoint of a line diff: part 1
// writes big.c, lines distinct lines, and part 2 rewrites it as a
// seeded permutation of the same lines (go-git's diff took 124 s of CPU
// on 160,000 lines).
func PermutedRewrite(lines int) []Change {
	a := make([]string, lines)
	for i := range a {
		a[i] = fmt.Sprintf("int v%d = %d;\n", i, i*7)
	}
	b := append([]string(nil), a...)
	rand.New(rand.NewPCG(uint64(lines), 40)).Shuffle(len(b), func(i, j int) { b[i], b[j] = b[j], b[i] })
	return []Change{{Write: map[string]string{"big.c": strings.Join(a, "")}}, {Write: map[string]string{"big.c": strings.Join(b, "")}}}
}
