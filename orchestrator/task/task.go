// Package task resolves what a trajectory asks of the agent: the prompt, the
// test environment that scores it and the test paths that must pass. Tasks
// are built in (embedded) or read from a folder with the same files.
//
// A task folder holds:
//
//	task.json   {"name": "…", "description": "…", "environment": "c-compiler",
//	             "test_paths": ["basics", …], "prompt": "prompt.md",
//	             "capture": {"exclude": ["/target/"], "max_file_bytes": 10485760},
//	             "feedback": "failures", "run_tests": true, "deny_c_compiler": false,
//	             "artifacts": ["cc"],
//	             "ground_truth": {"off": false, "stop_at_first": false,
//	                              "failing_tests": 10, "workers": 1, "wait": true,
//	                              "sample": {"size": 20, "seed": 1, "full_every": 10}}}
//	prompt.md   the first prompt, a text/template: {{.Name}}, {{.TestPaths}}
//	continue.md optional continuation prompt template: {{.Name}}, {{.TestPaths}},
//	            {{.Status}} (one line per required test path, unsolved first),
//	            {{.Source}} (where the status comes from: the agent's
//	            run_tests calls, or traj's evaluation of which part),
//	            {{.Turn}} (the turn about to start)
//
// "prompt" defaults to prompt.md. Built-in tasks live in builtin/<name>/.
//
// A folder holding task.toml instead is a Harbor task folder (harbor.go,
// environment/harbor): environment harbor.Name, the task's name as its one
// test path, instruction.md as the prompt (as written, not a template),
// no run_tests (its tests are hidden from the agent), ground truth in
// the verifier's room; the agent's room is the task's image
// (launch.TaskRoom).
//
// "feedback" is how much of a run_tests answer the agent is told: counts,
// failures (the default: failing case names, no phase, never the suites'
// expected outputs) or full; the trace keeps the full answer. "run_tests"
// false takes the tool away from the agent; "run_tests_calls" bounds its
// answers per trajectory (default 100, -1 none), as each carries bits the
// code under test chooses (environment/mcp's package doc). "ground_truth" is traj's own
// evaluation of every checkpoint in an evaluation sandbox, which decides
// "solved" and feeds the continuation prompt (per-suite counts, fixed and
// regressed tests since the last turn, up to failing_tests failing test
// names); "off" returns to version 1's rule (the agent's run_tests calls),
// "stop_at_first" ends the run at the first passing checkpoint, mid-turn.
//
// "ground_truth": {"sample": {"size": 20, "seed": 1, "full_every": 10}}
// scores the background curve on a sample: each required path that is a
// whole suite of more than size cases runs size of them, chosen by seed,
// stratified over the suite's groups (the environment's rule; for the C
// compiler: categories, chapters, part shards, in proportion, one per
// group where size allows). The sample is the same for every tree, so the
// curve stays comparable. The full paths run too for the final tree, each
// new best (a sampled result passing more cases than every earlier one,
// or all of its sample) and every full_every-th checkpoint. Every result
// in the trace says whether it was sampled and each path's sample size;
// "solved" is only decided on the full paths (a sampled 100 % queues the
// tree in full). Full results are cached under the key `traj replay
// evaluate` uses, so it evaluates afterwards only the trees never run in
// full.
//
// "ground_truth": {"wait": false} records without waiting for ground
// truth at turn ends: the next turn starts at once and its prompt reports
// the latest result that landed, saying which part's checkpoint it is
// from (and, when none has landed yet, that none has).
//
// "deny_c_compiler" enforces the C-compiler task's rule that the agent's
// compiler must not use a C compiler, in every room of the task: the
// agent's sandbox and each evaluation action (build, compile, program) of
// ground truth, run_tests and replay. What is denied (sandbox/deny.go):
//   - every C compiler the room would show is shown empty: the gcc, cc,
//     c89, c99, cpp and g++ drivers, gcc's cc1, cc1plus, lto1,
//     lto-wrapper and collect2, clang, tcc (the host's in bwrap, the
//     image's in a container). as, ld, crt*.o, libgcc and libc stay: a
//     compiler the agent writes emits assembly and links with them.
//   - a carried copy cannot run: no room shows a compiler to copy (the
//     agent's included), and in evaluation actions every place a
//     compile can write (/tmp, HOME, /dev/shm, /run, /var/tmp, its case
//     folder; /dev is read-only) is mounted noexec, so a front end
//     unpacked there can neither be executed nor mapped executable by
//     ld.so, and memfd_create is refused by a seccomp filter (bwrap
//     --seccomp; the engine's default profile without it), so no
//     anonymous file can hold one. What is left is a loader the agent
//     writes itself that maps a front end's bytes from ./cc; those bytes
//     would have to come from outside every room.
//
// It needs an isolated provider (bwrap, as root for its noexec scratch,
// or container); the trace records it in environment.version, so replay
// evaluate applies it too. The built-in task leaves it off because the
// scripted demo's agent writes a gcc wrapper; turn it on in a copy of the
// task folder for real runs.
//
// "artifacts" lists what the build produces and the compiles need
// (c-compiler: ["cc"]): every compile, in ground truth, run_tests and
// replay evaluate alike, is shown a folder holding only these, copied out
// of the built tree, so ./cc must not read the rest of the repository.
// A result then depends on their bytes alone and is kept under their
// digest: trees that change notes, plans or tests but build the same
// compiler are built, not tested again. The digest serves only when a
// sandbox shows the compiles nothing else and a second build of the tree
// gave the same artifacts; otherwise the tree's key serves, and the
// trace's ground_truth and evaluation.json say which and why. The trace
// records the list in environment.version, so replay evaluate applies it.
//
// "capture" decides what each checkpoint records (the agent's .gitignore
// files play no part): "exclude" lists gitignore-syntax patterns, relative
// to the workspace root, of build outputs the environment's build
// regenerates from the recorded sources, so replay rebuilds them the same
// way; "max_file_bytes" caps a recorded file (default DefaultMaxFileBytes),
// a larger one is recorded as a stub naming its size and SHA-256 and listed
// in the part's repo_checkpoint.stubbed_files. The rules are written into
// the trace header ("capture"). The built-in c-compiler task excludes
// /target/ (cargo's build folder: build.sh rebuilds it, and it grows to
// gigabytes) and /cc (the compiler build.sh must produce; the environment
// deletes it before every build, so live tests and replay both use the one
// build.sh made). To change the rules, copy the task folder and edit its
// task.json, then run with --task FOLDER.
package task

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"text/template"

	"github.com/trajlab/traj/environment/evaluation"
	"github.com/trajlab/traj/environment/harbor"
	"github.com/trajlab/traj/trace"
)

//go:embed builtin
var builtinFS embed.FS

// Task is a resolved task.
type Task struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Environment string   `json:"environment"`
	TestPaths   []string `json:"test_paths"`
	// PromptFile names the prompt template inside the task folder.
	PromptFile string `json:"prompt,omitempty"`
	// Capture decides what checkpoints record (see the package doc).
	Capture trace.CaptureRules `json:"capture"`
	// Feedback is how much of a run_tests result the agent is told:
	// "counts", "failures" (the default: failing case names, no phase,
	// never expected outputs) or "full". The trace keeps the full result.
	Feedback string `json:"feedback,omitempty"`
	// RunTests offers the agent the run_tests tool (default true).
	RunTests *bool `json:"run_tests,omitempty"`
	// RunTestsCalls bounds the run_tests answers of one trajectory
	// (default DefaultRunTestsCalls; -1: no bound): each answer carries a
	// few bits the code under test chooses (environment/mcp, "Channel
	// capacity"), so the bound caps what all of them can carry.
	RunTestsCalls int `json:"run_tests_calls,omitempty"`
	// GroundTruth configures traj's own evaluation of every checkpoint.
	GroundTruth GroundTruthSettings `json:"ground_truth"`
	// DenyCCompiler takes every C compiler out of every room of the task
	// (the agent's, and each evaluation's: ground truth, run_tests,
	// replay): a compiler that calls or carries one scores 0 (see the
	// package doc).
	DenyCCompiler bool `json:"deny_c_compiler,omitempty"`
	// Artifacts is what the build produces and the compiles need (paths
	// relative to the tree, a trailing "/" for a folder): every compile
	// is shown only these, and evaluations are kept under their digest
	// (see the package doc).
	Artifacts []string `json:"artifacts,omitempty"`
	// Source is "builtin:<name>" or the folder the task was read from.
	Source string `json:"-"`
	// Storage is the disk cap the task asks for, in bytes (a Harbor
	// task's [environment] storage; 0: none): the sandbox's unless the
	// user set one.
	Storage int64 `json:"-"`
	// instruction, when set, is the first prompt as written (a Harbor
	// task's instruction.md is not a template).
	instruction string

	prompt       *template.Template
	continuation *template.Template
}

// GroundTruthSettings configure ground truth during the run.
type GroundTruthSettings struct {
	// Off turns it off: "solved" then comes from the agent's run_tests
	// calls, as in version 1.
	Off bool `json:"off,omitempty"`
	// StopAtFirst ends the run at the first checkpoint that passes every
	// required path, mid-turn; otherwise at the end of that turn.
	StopAtFirst bool `json:"stop_at_first,omitempty"`
	// FailingTests caps the failing (and fixed, regressed) test names the
	// continuation prompt lists (default DefaultFailingTests; -1: none).
	FailingTests int `json:"failing_tests,omitempty"`
	// Workers evaluate trees at once (default 1: one tree's cases use
	// every core already).
	Workers int `json:"workers,omitempty"`
	// Sample, when set, scores the background curve on a fixed sample
	// of each required path's cases (see the package doc).
	Sample *SampleSettings `json:"sample,omitempty"`
	// Wait: a turn end waits for the ground truth of the workspace
	// (default true). False: the turn ends at once and the continuation
	// prompt reports the latest result landed, naming its part.
	Wait *bool `json:"wait,omitempty"`
}

// SampleSettings configure sampled ground truth.
type SampleSettings struct {
	// Size is the number of cases sampled from each required path that
	// is a whole suite of more cases (1 to MaxSampleSize).
	Size int `json:"size"`
	// Seed picks the sample (0 to MaxSampleSize); the same for every tree.
	Seed int64 `json:"seed,omitempty"`
	// FullEvery evaluates every k-th checkpoint on the full paths too
	// (0: only the final tree and each new best).
	FullEvery int `json:"full_every,omitempty"`
}

// MaxSampleSize bounds a sample's size and seed (the test path that
// names a sample writes them in at most 6 digits).
const MaxSampleSize = 999999

// WaitAtTurnEnd reports whether turn ends wait for ground truth.
func (g GroundTruthSettings) WaitAtTurnEnd() bool { return g.Wait == nil || *g.Wait }

// DefaultFailingTests is GroundTruthSettings.FailingTests's default.
const DefaultFailingTests = 10

// DefaultFeedback withholds the suites' expected outputs from the agent.
const DefaultFeedback = "failures"

// DefaultRunTestsCalls is RunTestsCalls's default: more than an agent
// testing its compiler needs in a long run (the demo makes 3 calls in 50
// parts), few enough to cap the feedback channel (at failures, 100 calls
// carry at most one bit per case per call).
const DefaultRunTestsCalls = 100

// AgentRunTests reports whether the agent gets the run_tests tool.
func (t *Task) AgentRunTests() bool { return t.RunTests == nil || *t.RunTests }

// ErrUnknown is returned for a name that is neither a built-in task nor a folder.
var ErrUnknown = errors.New("unknown task")

// DefaultMaxFileBytes caps a recorded file when the task names no cap.
const DefaultMaxFileBytes = 10 << 20

// nameRE with a length check (validName): a counted repetition ({0,63})
// compiles to 63 copies, at every process's start.
var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// validName: a task name, 1 to 64 of a-z, 0-9, '.', '_', '-', not
// starting with a punctuation mark.
func validName(s string) bool { return len(s) <= 64 && nameRE.MatchString(s) }

// Builtin lists the built-in task names.
func Builtin() []string {
	entries, _ := builtinFS.ReadDir("builtin")
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names
}

// Load resolves ref: a built-in task name, or a path to a task folder (a
// ref containing a path separator or naming an existing folder).
func Load(ref string) (*Task, error) {
	if ref == "" {
		return nil, fmt.Errorf("load task: empty task reference")
	}
	if !strings.ContainsRune(ref, filepath.Separator) && validName(ref) {
		if sub, err := fs.Sub(builtinFS, path.Join("builtin", ref)); err == nil {
			if _, err := fs.Stat(sub, "task.json"); err == nil {
				return load(sub, builtinPrefix+ref)
			}
		}
	}
	st, err := os.Stat(ref)
	if err == nil && st.IsDir() && harbor.IsTaskFolder(ref) {
		return loadHarbor(ref)
	}
	if err != nil || !st.IsDir() {
		return nil, fmt.Errorf("load task %q: %w (built-in tasks: %s; or give a task folder)",
			ref, ErrUnknown, strings.Join(Builtin(), ", "))
	}
	abs, err := filepath.Abs(ref)
	if err != nil {
		return nil, fmt.Errorf("load task %q: %w", ref, err)
	}
	return load(os.DirFS(abs), abs)
}

func load(fsys fs.FS, source string) (*Task, error) {
	raw, err := fs.ReadFile(fsys, "task.json")
	if err != nil {
		return nil, fmt.Errorf("load task %s: %w", source, err)
	}
	var t Task
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("load task %s: task.json: %w", source, err)
	}
	t.Source = source
	if err := t.validate(); err != nil {
		return nil, fmt.Errorf("load task %s: %w", source, err)
	}
	if t.PromptFile == "" {
		t.PromptFile = "prompt.md"
	}
	t.prompt, err = parseTemplate(fsys, t.PromptFile)
	if err != nil {
		return nil, fmt.Errorf("load task %s: %w", source, err)
	}
	if _, err := fs.Stat(fsys, "continue.md"); err == nil {
		t.continuation, err = parseTemplate(fsys, "continue.md")
		if err != nil {
			return nil, fmt.Errorf("load task %s: %w", source, err)
		}
	}
	return &t, nil
}

// EvalSettings are the task's settings of how its trees are evaluated,
// as the trace records them (trace.EnvironmentInfo).
func (t *Task) EvalSettings() evaluation.Settings {
	return evaluation.Settings{Artifacts: t.Artifacts, DenyCCompiler: t.DenyCCompiler}
}

func (t *Task) validate() error {
	if !validName(t.Name) {
		return fmt.Errorf("task.json: name %q: want lower-case letters, digits, '.', '_' or '-'", t.Name)
	}
	if t.Environment == "" {
		return errors.New("task.json: environment is required")
	}
	if len(t.TestPaths) == 0 {
		return errors.New("task.json: test_paths must list at least one test path")
	}
	seen := map[string]bool{}
	for _, p := range t.TestPaths {
		if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "..") || strings.ContainsAny(p, "\\\x00") {
			return fmt.Errorf("task.json: bad test path %q", p)
		}
		if seen[p] {
			return fmt.Errorf("task.json: test path %q listed twice", p)
		}
		seen[p] = true
	}
	if err := evaluation.CheckArtifacts(t.Artifacts); err != nil {
		return fmt.Errorf("task.json: artifacts: %w", err)
	}
	if t.Capture.MaxFileBytes < 0 {
		return fmt.Errorf("task.json: capture.max_file_bytes %d must be positive", t.Capture.MaxFileBytes)
	}
	if t.Capture.MaxFileBytes == 0 {
		t.Capture.MaxFileBytes = DefaultMaxFileBytes
	}
	for _, p := range t.Capture.Exclude {
		if strings.TrimSpace(p) == "" || strings.Contains(p, "..") || strings.ContainsAny(p, "\\\x00\n") {
			return fmt.Errorf("task.json: bad capture.exclude pattern %q", p)
		}
	}
	switch t.Feedback {
	case "":
		t.Feedback = DefaultFeedback
	case "counts", "failures", "full":
	default:
		return fmt.Errorf("task.json: feedback %q: want counts, failures or full", t.Feedback)
	}
	switch {
	case t.RunTestsCalls == 0:
		t.RunTestsCalls = DefaultRunTestsCalls
	case t.RunTestsCalls < -1:
		return fmt.Errorf("task.json: run_tests_calls %d: want -1 (no bound) or more", t.RunTestsCalls)
	}
	switch gt := &t.GroundTruth; {
	case gt.FailingTests == 0:
		gt.FailingTests = DefaultFailingTests
	case gt.FailingTests < -1:
		return fmt.Errorf("task.json: ground_truth.failing_tests %d: want -1 (none) or more", gt.FailingTests)
	}
	if sm := t.GroundTruth.Sample; sm != nil {
		switch {
		case sm.Size < 1 || sm.Size > MaxSampleSize:
			return fmt.Errorf("task.json: ground_truth.sample.size %d: want 1 to %d", sm.Size, MaxSampleSize)
		case sm.Seed < 0 || sm.Seed > MaxSampleSize:
			return fmt.Errorf("task.json: ground_truth.sample.seed %d: want 0 to %d", sm.Seed, MaxSampleSize)
		case sm.FullEvery < 0:
			return fmt.Errorf("task.json: ground_truth.sample.full_every %d: want 0 (never) or more", sm.FullEvery)
		}
	}
	if t.GroundTruth.Workers < 0 || t.GroundTruth.Workers > 64 {
		return fmt.Errorf("task.json: ground_truth.workers %d: want 1 to 64", t.GroundTruth.Workers)
	}
	if t.PromptFile != "" && (!fs.ValidPath(t.PromptFile) || strings.Contains(t.PromptFile, "/")) {
		return fmt.Errorf("task.json: prompt %q must be a file name inside the task folder", t.PromptFile)
	}
	return nil
}

func parseTemplate(fsys fs.FS, name string) (*template.Template, error) {
	raw, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	tmpl, err := template.New(name).Option("missingkey=error").Parse(string(raw))
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", name, err)
	}
	return tmpl, nil
}

// builtinPrefix starts a built-in task's Source.
const builtinPrefix = "builtin:"

// Folder is the folder t was read from, "" for a built-in task: what
// the registry opens a task's environment on (registry.Config.TaskDir).
func (t *Task) Folder() string {
	if strings.HasPrefix(t.Source, builtinPrefix) {
		return ""
	}
	return t.Source
}

// Prompt renders the first prompt.
func (t *Task) Prompt() (string, error) {
	if t.instruction != "" {
		return t.instruction, nil
	}
	var b strings.Builder
	if err := t.prompt.Execute(&b, struct {
		Name      string
		TestPaths []string
	}{t.Name, t.TestPaths}); err != nil {
		return "", fmt.Errorf("render prompt of task %s: %w", t.Name, err)
	}
	return b.String(), nil
}

// PathStatus is the latest known result of one required test path.
type PathStatus struct {
	Path   string
	Seen   bool // a run_tests result for this path exists
	Passed int
	Failed int
	Total  int
	Error  string
	// Sample is the number of cases of the path's sample when the result
	// is of a sample (0: the whole path ran); a sample never solves it.
	Sample int
}

// Solved reports whether every test of the path passed in its latest run
// of the whole path.
func (s PathStatus) Solved() bool {
	return s.Seen && s.Error == "" && s.Total > 0 && s.Failed == 0 && s.Passed == s.Total && s.Sample == 0
}

// String is one line for a continuation prompt.
func (s PathStatus) String() string {
	switch {
	case !s.Seen:
		return fmt.Sprintf("- %s: not run yet", s.Path)
	case s.Error != "":
		return fmt.Sprintf("- %s: error: %s", s.Path, s.Error)
	case s.Solved():
		return fmt.Sprintf("- %s: solved (%d/%d passed)", s.Path, s.Passed, s.Total)
	case s.Sample > 0:
		return fmt.Sprintf("- %s: %d/%d passed, %d failing (a fixed sample of %d of its cases; the whole suite decides)", s.Path, s.Passed, s.Total, s.Failed, s.Sample)
	default:
		return fmt.Sprintf("- %s: %d/%d passed, %d failing", s.Path, s.Passed, s.Total, s.Failed)
	}
}

// Standing is what a continuation prompt reports: the latest status of
// each required path and, from ground truth, which tests fail and what
// changed since the previous turn.
type Standing struct {
	Status []PathStatus
	// GroundTruth: Status is traj's evaluation of the checkpoint of Part;
	// otherwise it comes from the agent's run_tests calls.
	GroundTruth bool
	Part        int
	// Sampled: the ground truth ran a sample of some paths' cases.
	Sampled bool
	// Pending: no ground truth has landed yet (the turn end did not wait).
	Pending bool
	// Now is the part the workspace is at when the turn ended, when
	// later than Part (the turn end did not wait for its evaluation).
	Now int
	// Failing, Fixed and Regressed name tests (suite/case), capped;
	// the counts are the whole numbers.
	Failing, Fixed, Regressed                []string
	FailingCount, FixedCount, RegressedCount int
}

// Continuation renders the prompt for a later turn from the standing,
// unsolved paths first.
func (t *Task) Continuation(turn int, st Standing) (string, error) {
	ordered := make([]PathStatus, len(st.Status))
	copy(ordered, st.Status)
	sort.SliceStable(ordered, func(i, j int) bool {
		return !ordered[i].Solved() && ordered[j].Solved()
	})
	lines := make([]string, len(ordered))
	for i, s := range ordered {
		lines[i] = s.String()
	}
	statusText := strings.Join(lines, "\n")
	if st.GroundTruth {
		statusText += names("\n\nFixed since the last turn", st.Fixed, st.FixedCount) +
			names("\n\nRegressed since the last turn (passed before, fail now)", st.Regressed, st.RegressedCount) +
			names("\n\nFailing tests", st.Failing, st.FailingCount)
	}
	source := "from your run_tests calls"
	if st.GroundTruth {
		source = st.source()
	}
	if t.continuation == nil {
		return "Keep working on the task. Latest results of the required test paths " +
			"(" + source + "), unsolved first:\n" + statusText +
			"\n\nFix the failing tests, run the tests again, and continue until every " +
			"required test path passes.", nil
	}
	var b strings.Builder
	if err := t.continuation.Execute(&b, struct {
		Name      string
		TestPaths []string
		Status    string
		Source    string
		Turn      int
	}{t.Name, t.TestPaths, statusText, source, turn}); err != nil {
		return "", fmt.Errorf("render continuation of task %s: %w", t.Name, err)
	}
	return b.String(), nil
}

// source says where a ground-truth standing comes from: which part's
// checkpoint, whether it is the latest landed of an older one, and
// whether it is of a sample.
func (st Standing) source() string {
	if st.Pending {
		return "traj's evaluation of your workspace has not landed yet; it runs in the background"
	}
	out := fmt.Sprintf("traj's evaluation of your workspace at part %d", st.Part)
	if st.Now > st.Part {
		out += fmt.Sprintf(", the latest that landed; your workspace is now at part %d and is still being evaluated", st.Now)
	}
	if st.Sampled {
		out += "; on a fixed sample of each suite's cases"
	}
	return out
}

// names is a titled list of test names for a continuation prompt ("" for
// none), saying how many more there are than listed.
func names(title string, list []string, count int) string {
	if count == 0 {
		return ""
	}
	out := fmt.Sprintf("%s (%d):", title, count)
	for _, n := range list {
		out += "\n- " + n
	}
	if more := count - len(list); more > 0 {
		out += fmt.Sprintf("\n- … and %d more", more)
	}
	return out
}
