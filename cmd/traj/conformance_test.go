package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/trajlab/traj/replay/export"
	"github.com/trajlab/traj/replay/view"
	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/sandbox/agent"
	"github.com/trajlab/traj/sandbox/harness"
	"github.com/trajlab/traj/trace"
)

// tmpPath matches host temporary paths a recorded trace may name.
var tmpPath = regexp.MustCompile(`/tmp/[A-Za-z0-9._/-]*`)

var updateFixtures = flag.Bool("update", false, "re-record the reader fixtures in sandbox/harness/testdata from this run")

// conformanceCase is one harness the conformance test records with the
// orchestrator's end-to-end task and its script for that harness, in
// bwrap, and what the test checks of that script's run (nil: OpenCode's,
// whose e2e.jsonl the orchestrator's end-to-end tests check).
type conformanceCase struct {
	agent, script string
	run           *harnessRun
}

var conformanceCases = []conformanceCase{
	{"opencode", "e2e.jsonl", nil},
	{"claude-code", "e2e-claude-code.jsonl", &harnessRun{turnParts: []int{12, 12, 1}, subAgent: true, perCallUsage: true}},
	{"codex", "e2e-codex.jsonl", &harnessRun{turnParts: []int{9, 13, 1}}},
}

// TestHarnessConformance is one body run over every harness: record a
// trajectory with the real harness and the scripted model, then read it
// with every reader — `traj trace show`, the viewer's API, the Parquet and
// ATIF exports — and replay it (checkout-part, evaluate). Every part whose
// harness-neutral record (the adapter's reader) has text, a tool name,
// input or output has it in the view, in Parquet and in ATIF, with equal
// counts; the ATIF document passes CheckATIF; ATIF's agent is the harness
// and its version; `traj report` lists it. The recorded trace is also the reader fixture of
// sandbox/harness: its normalized shape must equal the committed one
// (-update re-records it), so a fixture the writer no longer produces
// fails here. Claude Code and Codex run with a "real" API key
// (--api-key-env) and their runs are checked in full by checkHarnessRun:
// parts per turn, sub-agent, usage against the model-call record, the key
// nowhere the harness or the record could show it.
func TestHarnessConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("records three real trajectories")
	}
	t.Parallel() // with the other recording tests: see main_test.go
	exe := trajExe(t)
	for _, h := range conformanceCases {
		t.Run(h.agent, func(t *testing.T) {
			t.Parallel()
			if err := sandbox.BwrapWorks(t.Context()); err != nil {
				if os.Getenv("CI") != "" {
					t.Fatalf("bwrap unusable under CI: %v", err)
				}
				t.Skipf("bwrap unusable: %v", err)
			}
			st := t.TempDir()
			id := "conformance-" + h.agent
			// From the repository's root, where the harnesses' npm folders are.
			args := []string{"run", "--task", "orchestrator/testdata/tasks/e2e", "--agent", h.agent,
				"--model", "scripted/demo", "--script", "orchestrator/testdata/" + h.script, "--max-parts", "100",
				"--timeout", "3m", "--trajectory-id", id, "--store", st, "--sandbox", sandbox.ProviderBwrap, "--quiet"}
			run := exec.Command(exe, args...)
			if h.run != nil {
				// No disk image (TestDiskCap attacks it): the workspace
				// stays readable after the run, for checkHarnessRun to
				// read what the agent wrote of its environment.
				run.Args = append(run.Args, "--api-key-env", e2eRealKeyEnv, "--disk", "off")
				run.Env = append(os.Environ(), e2eRealKeyEnv+"="+e2eRealKey)
			}
			run.Dir = filepath.Join("..", "..")
			out, err := run.CombinedOutput()
			if _, missing := err.(*exec.ExitError); err != nil && !missing {
				t.Fatalf("traj run: %v\n%s", err, out)
			}
			if strings.Contains(string(out), "not found") && strings.Contains(string(out), "make setup") {
				if os.Getenv("CI") != "" {
					t.Fatalf("%s missing under CI:\n%s", h.agent, out)
				}
				t.Skipf("%s needed (make setup):\n%s", h.agent, out)
			}
			dir := filepath.Join(st, "trajectories", id)
			tr := readConformanceTrace(t, filepath.Join(dir, "agent_trace.json"), out)
			recorded := trace.ParseAgent(tr.Agent)
			name, version := recorded.Name, recorded.Version
			if name != h.agent || version == "" {
				t.Fatalf("trace agent %q: want %s@VERSION", tr.Agent, h.agent)
			}
			want := neutralCounts(tr)
			t.Logf("%s: %d parts; neutral: %+v", tr.Agent, want.parts, want)
			if want.text == 0 || want.tools == 0 || want.input != want.tools || want.output == 0 {
				t.Fatalf("the harness's reader reads too little of its own trace: %+v", want)
			}

			checkFixtureShape(t, h.agent, tr, dir, st)
			if h.run != nil {
				checkHarnessRun(t, *h.run, tr, st, id)
			}

			// traj trace show
			code, showOut, errOut := traj(t, "trace", "show", dir)
			if code != 0 || !strings.Contains(showOut, tr.Agent) || !strings.Contains(showOut, fmt.Sprint(want.parts)) {
				t.Fatalf("trace show: code %d\n%s%s", code, showOut, errOut)
			}

			// traj report
			rep := filepath.Join(t.TempDir(), "report.json")
			if code, o, e := traj(t, "report", "--store", st, "--json", rep); code != 0 {
				t.Fatalf("report: code %d\n%s%s", code, o, e)
			}
			if b, err := os.ReadFile(rep); err != nil || !bytes.Contains(b, []byte(`"`+tr.Agent+`"`)) {
				t.Fatalf("report does not list the %s trajectory: %v\n%.2000s", tr.Agent, err, b)
			}

			checkViewAPI(t, st, id, tr, want)
			checkParquet(t, st, id, want)
			checkATIF(t, st, id, name, version, tr, want)

			// checkout-part and evaluate
			last := lastCommitted(tr)
			dest := filepath.Join(t.TempDir(), "checkout")
			if code, o, e := traj(t, "replay", "checkout-part", id, "--store", st, "--part", fmt.Sprint(last), "--checkout-dest", dest); code != 0 {
				t.Fatalf("checkout-part %d: code %d\n%s%s", last, code, o, e)
			}
			if _, err := os.Stat(filepath.Join(dest, "build.sh")); err != nil {
				t.Fatalf("checkout-part %d: %v", last, err)
			}
			evalOut := filepath.Join(t.TempDir(), "eval.json")
			if code, o, e := traj(t, "replay", "evaluate", id, "--store", st, "--output", evalOut, "--workers", "1"); code != 0 {
				t.Fatalf("evaluate: code %d\n%s%s", code, o, e)
			}
			var ev struct {
				Commits int `json:"commits_evaluated"`
			}
			if b, err := os.ReadFile(evalOut); err != nil || json.Unmarshal(b, &ev) != nil || ev.Commits == 0 {
				t.Fatalf("evaluate evaluated no commit: %v", err)
			}
			if h.run != nil {
				// Every part maps to a commit; the workspace at part 5
				// has the build.sh the script writes first.
				if n := partsToCommit(t, evalOut); n != h.run.total() {
					t.Errorf("evaluate mapped %d parts to commits, want %d", n, h.run.total())
				}
				at5 := filepath.Join(t.TempDir(), "at5")
				if code, o, e := traj(t, "replay", "checkout-part", id, "--store", st, "--part", "5", "--checkout-dest", at5); code != 0 {
					t.Fatalf("checkout-part 5: code %d\n%s%s", code, o, e)
				}
				if _, err := os.Stat(filepath.Join(at5, "build.sh")); err != nil {
					t.Errorf("build.sh missing at part 5: %v", err)
				}
			}

			checkRerun(t, exe, st, id, tr, want.parts)
		})
	}
}

func readConformanceTrace(t *testing.T, path string, runOut []byte) *trace.Trace {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no trace: %v\n%s", err, runOut)
	}
	if probs := trace.Validate(bytes.NewReader(b)); len(probs) > 0 {
		t.Fatalf("trace invalid: %v", probs)
	}
	var tr trace.Trace
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatal(err)
	}
	return &tr
}

// counts are how many counted parts have each neutral field.
type counts struct {
	parts, text, tools, input, output, subAgents, modelCalls int
}

// neutralCounts reads every counted part with the harness's reader.
func neutralCounts(tr *trace.Trace) counts {
	var c counts
	r := harness.Reader(tr.Agent)
	for _, p := range allParts(tr) {
		c.parts++
		np, _ := r.Part(p.PartID, agent.Kind(p.PartType), p.Content)
		if np.Text != "" {
			c.text++
		}
		if t := np.Tool; t != nil && t.Name != "" {
			c.tools++
			if len(t.Input) > 0 && string(t.Input) != "null" {
				c.input++
			}
			if t.Output != "" || t.Error != "" {
				c.output++
			}
			if t.ChildSessionID != "" {
				c.subAgents++
			}
		}
		for _, m := range p.NewMessages {
			if mm, ok := r.Message(m); ok && mm.Call != nil {
				c.modelCalls++
			}
		}
	}
	return c
}

func allParts(tr *trace.Trace) []*trace.Part {
	var out []*trace.Part
	for i := range tr.Turns {
		for j := range tr.Turns[i].Parts {
			out = append(out, &tr.Turns[i].Parts[j])
		}
	}
	return out
}

func lastCommitted(tr *trace.Trace) int {
	last := 0
	for _, p := range allParts(tr) {
		if p.RepoCheckpoint != nil && p.RepoCheckpoint.Committed {
			last = p.Part
		}
	}
	return last
}

// checkViewAPI reads every part through the viewer's JSON API.
func checkViewAPI(t *testing.T, st, id string, tr *trace.Trace, want counts) {
	t.Helper()
	get := viewClient(t, st, "conformance")
	var got counts
	for _, p := range allParts(tr) {
		var d view.Detail
		get(fmt.Sprintf("/api/t/%s/parts/%d", id, p.Part), &d)
		got.parts++
		if d.Text != "" {
			got.text++
		}
		if d.Tool != "" && d.Kind == "tool" {
			got.tools++
			if d.Input != "" {
				got.input++
			}
			if d.Output != "" || d.ToolError != "" {
				got.output++
			}
		}
		if d.SubAgent != nil {
			got.subAgents++
			if d.SubAgent.First == 0 {
				t.Errorf("part %d: sub-agent session %s has no parts in the view", p.Part, d.SubAgent.ID)
			}
		}
		if d.Title == "" || strings.HasPrefix(d.Title, "{") || strings.HasPrefix(d.Title, "[") {
			t.Errorf("part %d (%s): title %q is not read from the part", p.Part, d.Kind, d.Title)
		}
		got.modelCalls += len(d.ModelCalls)
	}
	if got != want {
		t.Errorf("view: %+v, the harness's reader: %+v", got, want)
	}
}

// checkParquet exports the trajectory to Parquet and counts the parts
// table's filled columns.
func checkParquet(t *testing.T, st, id string, want counts) {
	t.Helper()
	out := t.TempDir()
	if code, o, e := traj(t, "export", id, "--store", st, "--format", "parquet", "--out", out); code != 0 {
		t.Fatalf("export parquet: code %d\n%s%s", code, o, e)
	}
	rows, err := parquet.ReadFile[export.PartRow](filepath.Join(out, export.TableParts, id+".parquet"))
	if err != nil {
		t.Fatal(err)
	}
	got := counts{modelCalls: want.modelCalls} // not a column of parts
	nonEmpty := func(s *string) bool { return s != nil && *s != "" }
	for _, r := range rows {
		got.parts++
		if nonEmpty(r.Text) {
			got.text++
		}
		if nonEmpty(r.Tool) && nonEmpty(r.PartType) && *r.PartType == "tool" {
			got.tools++
			if nonEmpty(r.ToolInput) {
				got.input++
			}
			if nonEmpty(r.ToolOutput) || nonEmpty(r.ToolError) {
				got.output++
			}
		}
		if nonEmpty(r.SubagentSession) {
			got.subAgents++
		}
	}
	if got != want {
		t.Errorf("parquet parts: %+v, the harness's reader: %+v", got, want)
	}
}

type atifDocument struct {
	Agent struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"agent"`
	Entries []struct {
		Source    string `json:"source"`
		Message   string `json:"message"`
		Reasoning string `json:"reasoning_content"`
		ToolCalls []struct {
			ID        string          `json:"tool_call_id"`
			Name      string          `json:"function_name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"tool_calls"`
		Observation *struct {
			Results []struct {
				Content string `json:"content"`
				Refs    []struct {
					TrajectoryID string `json:"trajectory_id"`
				} `json:"subagent_trajectory_ref"`
			} `json:"results"`
		} `json:"observation"`
	} `json:"steps"`
	Subagents []atifDocument `json:"subagent_trajectories"`
}

// checkATIF exports the trajectory to ATIF, checks it against the v1.7
// rules and counts what its entries hold.
func checkATIF(t *testing.T, st, id, name, version string, tr *trace.Trace, want counts) {
	t.Helper()
	out := t.TempDir()
	if code, o, e := traj(t, "export", id, "--store", st, "--format", "atif", "--out", out); code != 0 {
		t.Fatalf("export atif: code %d\n%s%s", code, o, e)
	}
	b, err := os.ReadFile(filepath.Join(out, id, export.ATIFName))
	if err != nil {
		t.Fatal(err)
	}
	probs, err := export.CheckATIF(bytes.NewReader(b))
	if err != nil || len(probs) > 0 {
		t.Fatalf("ATIF does not pass the v1.7 rules: %v %v", err, probs)
	}
	var doc atifDocument
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Agent.Name != name || doc.Agent.Version != version {
		t.Errorf("ATIF agent %s %s: want %s %s", doc.Agent.Name, doc.Agent.Version, name, version)
	}
	// Every text and reasoning of the trace is in an entry; every tool
	// call has its name, arguments and observation.
	var text strings.Builder
	var got counts
	var walk func(d atifDocument, sub bool)
	walk = func(d atifDocument, sub bool) {
		for i, s := range d.Entries {
			if sub && i == 0 && (s.Source != "user" || s.Message == "") {
				t.Errorf("sub-agent trajectory without its prompt: %+v", s)
			}
			if s.Source != "agent" {
				continue
			}
			text.WriteString(s.Message + "\n" + s.Reasoning + "\n")
			for _, c := range s.ToolCalls {
				if c.Name != "" {
					got.tools++
				}
				if len(c.Arguments) > 0 && string(c.Arguments) != `{"input":null}` {
					got.input++
				}
			}
			if s.Observation != nil {
				for _, r := range s.Observation.Results {
					if r.Content != "" {
						got.output++
					}
					got.subAgents += len(r.Refs)
				}
			}
		}
		for _, c := range d.Subagents {
			walk(c, true)
		}
	}
	walk(doc, false)
	r := harness.Reader(tr.Agent)
	for _, p := range allParts(tr) {
		np, _ := r.Part(p.PartID, agent.Kind(p.PartType), p.Content)
		if np.Text != "" {
			if strings.Contains(text.String(), np.Text) {
				got.text++
			} else {
				t.Errorf("ATIF: part %d's %s %q is in no entry", p.Part, np.Kind, np.Text)
			}
		}
	}
	got.parts, got.modelCalls = want.parts, want.modelCalls
	if got != want {
		t.Errorf("ATIF: %+v, the harness's reader: %+v", got, want)
	}
	if want.subAgents != len(doc.Subagents) {
		t.Errorf("ATIF: %d sub-agent trajectories, %d sub-agent calls", len(doc.Subagents), want.subAgents)
	}
}

// partShape is a part as the harness's reader sees it, without ids,
// times or sizes: what a reader fixture must keep showing.
func partShape(r agent.Reader, root string, p *trace.Part) string {
	np, _ := r.Part(p.PartID, agent.Kind(p.PartType), p.Content)
	s := fmt.Sprintf("%s kind=%s text=%t", p.PartType, np.Kind, np.Text != "")
	if t := np.Tool; t != nil {
		s += fmt.Sprintf(" tool=%s status=%s input=%t output=%t sub-agent=%t", t.Name, t.Status,
			len(t.Input) > 0, t.Output != "" || t.Error != "", t.ChildSessionID != "")
	}
	if len(np.Files) > 0 {
		s += fmt.Sprintf(" files=%d", len(np.Files))
	}
	if p.SessionID != "" && p.SessionID != root {
		s += " in-sub-agent"
	}
	return s
}

func traceShape(tr *trace.Trace) []string {
	r := harness.Reader(tr.Agent)
	var out []string
	for i, tu := range tr.Turns {
		for j := range tu.Parts {
			out = append(out, fmt.Sprintf("turn %d: %s", i+1, partShape(r, tr.SessionID, &tu.Parts[j])))
		}
	}
	return out
}

// checkFixtureShape compares the trace just recorded with the reader
// fixture committed for its harness (sandbox/harness/testdata/NAME):
// same agent, same parts in the same shape. -update replaces the fixture
// with this recording.
func checkFixtureShape(t *testing.T, name string, tr *trace.Trace, dir, st string) {
	t.Helper()
	fixture := filepath.Join("..", "..", "sandbox", "harness", "testdata", name, "agent_trace.json")
	if *updateFixtures {
		b, err := os.ReadFile(filepath.Join(dir, "agent_trace.json"))
		if err != nil {
			t.Fatal(err)
		}
		// The fixture is committed: no path of the machine that recorded it.
		b = bytes.ReplaceAll(b, []byte(st), []byte("/store"))
		b = tmpPath.ReplaceAll(b, []byte("/tmp/x"))
		wd, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		// The checkout's own folder stands for wherever this machine keeps its work.
		for _, p := range []string{"/home/", "/root/", filepath.Dir(filepath.Dir(wd))} {
			if bytes.Contains(b, []byte(p)) {
				t.Fatalf("the recorded trace names a host path under %s: not writing it as a fixture", p)
			}
		}
		if err := os.MkdirAll(filepath.Dir(fixture), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(fixture, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatalf("reader fixture: %v (record it: go test ./cmd/traj -run TestHarnessConformance -update)", err)
	}
	var old trace.Trace
	if err := json.Unmarshal(b, &old); err != nil {
		t.Fatal(err)
	}
	if old.Agent != tr.Agent {
		t.Errorf("the reader fixture was recorded by %s, the writer now records %s: re-record it (-update)", old.Agent, tr.Agent)
	}
	was, now := traceShape(&old), traceShape(tr)
	if strings.Join(was, "\n") != strings.Join(now, "\n") {
		t.Errorf("the reader fixture %s no longer matches what the writer records (re-record it with -update):\nfixture:\n  %s\nrecorded now:\n  %s",
			fixture, strings.Join(was, "\n  "), strings.Join(now, "\n  "))
	}
}

// TestFixtureShapeSeesDrift: the shape TestHarnessConformance compares
// changes when a harness's objects change under its reader (a field
// renamed in a new version, here a text part's "text"), so a committed
// fixture that the writer no longer produces cannot pass.
func TestFixtureShapeSeesDrift(t *testing.T) {
	for _, h := range conformanceCases {
		t.Run(h.agent, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("..", "..", "sandbox", "harness", "testdata", h.agent, "agent_trace.json"))
			if err != nil {
				t.Fatal(err)
			}
			var tr trace.Trace
			if err := json.Unmarshal(b, &tr); err != nil {
				t.Fatal(err)
			}
			before := strings.Join(traceShape(&tr), "\n")
			changed := false
			for _, p := range allParts(&tr) {
				if p.PartType == "text" && !changed {
					p.Content = bytes.Replace(p.Content, []byte(`"text":`), []byte(`"body":`), -1)
					changed = true
				}
			}
			if !changed {
				t.Fatal("the fixture has no text part")
			}
			if after := strings.Join(traceShape(&tr), "\n"); after == before {
				t.Fatal("a renamed text field leaves the shape unchanged")
			}
		})
	}
}

// checkRerun reruns the recorded trajectory from its model calls (traj
// replay rerun): every part and the trees at every model-response end
// must be reproduced (but what the agent wrote of its per-run
// environment, below). Then
// it perturbs one recorded response (the text "Writing build.sh." every
// e2e script opens with) in a copy of the trajectory: the rerun must name
// the part that text became as its first divergence, in the text.
func checkRerun(t *testing.T, exe, st, id string, tr *trace.Trace, parts int) {
	t.Helper()
	rerun := func(store, src, out string) (int, string) {
		cmd := exec.Command(exe, "replay", "rerun", src, "--store", store, "--trajectory-id", src+"-rerun",
			"--output", out, "--quiet")
		cmd.Dir = filepath.Join("..", "..")
		b, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, string(b)
	}
	readRep := func(p string) rerunReport {
		var r rerunReport
		b, err := os.ReadFile(p)
		if err != nil || json.Unmarshal(b, &r) != nil {
			t.Fatalf("rerun.json %s: %v", p, err)
		}
		return r
	}
	// The Claude Code and Codex scripts dump the sandbox's environment
	// into env.txt: its model token and gateway ports are the run's own,
	// so that response's tree must differ, and nothing before it.
	envPart := 0
	r := harness.Reader(tr.Agent)
	for _, p := range allParts(tr) {
		if np, _ := r.Part(p.PartID, agent.Kind(p.PartType), p.Content); envPart == 0 && np.Tool != nil && strings.Contains(string(np.Tool.Input), "env | sort") {
			envPart = p.Part
		}
	}
	out := filepath.Join(t.TempDir(), "rerun.json")
	code, o := rerun(st, id, out)
	rep := readRep(out)
	switch {
	case envPart == 0 && (code != 0 || !strings.Contains(o, fmt.Sprintf("reproduced %d/%d parts", parts, parts))):
		t.Fatalf("rerun of %s: exit %d, want 0 and reproduced %d/%d parts:\n%s", id, code, parts, parts, o)
	case envPart == 0 && (rep.Boundaries == 0 || rep.FirstTree != nil || rep.RerunParts != parts):
		t.Fatalf("rerun report %+v", rep)
	case envPart > 0 && (code != 3 || rep.FirstPart != nil || rep.RerunParts != parts || rep.FirstTree == nil ||
		rep.FirstTree.Part < envPart || rep.Reproduced >= envPart || rep.Reproduced == 0):
		t.Fatalf("rerun of %s, whose part %d writes its environment into the workspace: exit %d, report %+v; want every part "+
			"reproduced and the first tree that differs at that response's end\n%s", id, envPart, code, rep, o)
	}
	rtr := readConformanceTrace(t, filepath.Join(st, "trajectories", id+"-rerun", "agent_trace.json"), []byte(o))
	if rtr.RerunOf == nil || rtr.RerunOf.TrajectoryID != id || rtr.Agent != tr.Agent {
		t.Fatalf("rerun trace: rerun_of %+v, agent %q; want %s, %q", rtr.RerunOf, rtr.Agent, id, tr.Agent)
	}
	t.Logf("rerun: %s", strings.TrimSpace(o[strings.LastIndex(o, "reproduced"):]))

	// One response perturbed.
	st2 := t.TempDir()
	dst := filepath.Join(st2, "trajectories", id)
	if err := os.CopyFS(dst, os.DirFS(filepath.Join(st, "trajectories", id))); err != nil {
		t.Fatal(err)
	}
	calls := filepath.Join(dst, "model_calls.jsonl")
	b, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	perturbed := false
	for i, l := range lines {
		var c map[string]any
		if json.Unmarshal([]byte(l), &c) != nil {
			continue
		}
		resp, _ := c["response"].(string)
		if !perturbed && strings.Contains(resp, "build.sh.") {
			c["response"] = strings.ReplaceAll(resp, "build.sh.", "BUILD.sh.") // every copy: a stream repeats the text in its closing events
			nb, _ := json.Marshal(c)
			lines[i] = string(nb) + "\n"
			perturbed = true
		}
	}
	if !perturbed {
		t.Fatal("no recorded response holds the text build.sh.")
	}
	if err := os.WriteFile(calls, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, p := range allParts(tr) {
		if np, _ := r.Part(p.PartID, agent.Kind(p.PartType), p.Content); want == 0 && strings.Contains(np.Text, "Writing build.sh.") {
			want = p.Part
		}
	}
	out2 := filepath.Join(t.TempDir(), "rerun.json")
	code, o = rerun(st2, id, out2)
	rep = readRep(out2)
	if code != 3 || rep.FirstPart == nil || rep.FirstPart.Part != want || rep.FirstPart.Field != "text" ||
		!strings.Contains(rep.FirstPart.Rerun, "BUILD.sh.") || rep.Reproduced != want-1 {
		t.Fatalf("perturbed rerun: exit %d, report %+v; want exit 3 and the first divergence at part %d (text)\n%s", code, rep, want, o)
	}
}

// rerunReport is what the test reads of rerun.json.
type rerunReport struct {
	SourceParts int `json:"source_parts"`
	RerunParts  int `json:"rerun_parts"`
	Reproduced  int `json:"reproduced"`
	Boundaries  int `json:"boundaries"`
	FirstPart   *struct {
		Part  int    `json:"part"`
		Field string `json:"field"`
		Rerun string `json:"rerun"`
	} `json:"first_part"`
	FirstTree *struct {
		Part int `json:"part"`
	} `json:"first_tree"`
}
