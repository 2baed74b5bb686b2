package record

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trajlab/traj/orchestrator"
	"github.com/trajlab/traj/orchestrator/folder"
	"github.com/trajlab/traj/orchestrator/launch"
	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/sandbox/agent"
	"github.com/trajlab/traj/trace"
)

// sourceStore lays out trajectory "src" in a store folder as traj run
// leaves it: the trace (the OpenCode fixture recorded by the current
// writer, task e2e), its model calls and run.json st.
func sourceStore(t *testing.T, st folder.RunState) (storeDir string) {
	t.Helper()
	storeDir = t.TempDir()
	dir := filepath.Join(storeDir, "trajectories", "src")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tr, err := os.ReadFile("../../../sandbox/harness/testdata/opencode/agent_trace.json")
	if err != nil {
		t.Fatal(err)
	}
	tr = []byte(strings.Replace(string(tr), `"trajectory_id":"conformance-opencode"`, `"trajectory_id":"src"`, 1))
	rs, _ := json.Marshal(st)
	for name, b := range map[string][]byte{"agent_trace.json": tr, "model_calls.jsonl": nil, "run.json": rs} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return storeDir
}

// TestForkGivenFlags attacks the fork's merge with flags given at the
// value that means "nothing" and with flags a fork cannot change: a flag
// given explicitly overrides the source (--cpus 0 is no CPU limit,
// --max-tokens 0 no token budget, never the source's), a flag not given
// inherits it, the defaults apply last; another task or harness is
// refused (before: a given flag equal to its zero value, or to the old
// default of --task, counted as not given and the source's was run).
func TestForkGivenFlags(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "demo.jsonl")
	if err := os.WriteFile(script, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	task, _ := filepath.Abs("../../testdata/tasks/e2e")
	sb, _ := json.Marshal(launch.SandboxOptions{Provider: sandbox.ProviderBwrap, Network: sandbox.NetworkGateways,
		Limits: sandbox.Limits{CPUs: 2, Memory: 3 << 30}, Disk: 2 << 30})
	st := sourceStore(t, folder.RunState{TrajectoryID: "src", Task: "e2e", TaskSource: task, Model: "scripted/demo", MaxParts: 28,
		TimeoutSec: 180, Script: script, Agent: "opencode", MaxTokens: 1000, MaxCost: 2, Price: &agent.Price{Input: 1, Output: 2},
		Sandbox: sb})
	src, err := OpenSource(t.Context(), "src", st)
	if err != nil {
		t.Fatal(err)
	}
	at := src.Parts
	fork := func(o orchestrator.Options, given ...string) (orchestrator.Options, error) {
		g := orchestrator.Given{}
		for _, f := range given {
			g[f] = true
		}
		o.Store = st
		return src.forkOptions(RunRequest{Fork: "src", AtPart: at, Options: o, Given: g})
	}

	inherited, err := fork(orchestrator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if o := inherited; o.Task != task || o.Model != "scripted/demo" || o.Script != script || !o.Rerun.ContinueScript ||
		o.MaxTokens != 1000 || o.MaxCost != 2 || o.Price == nil || o.Timeout != 180*time.Second || o.MaxParts != max(28, at+1) ||
		o.Sandbox.Limits.CPUs != 2 || o.Sandbox.Disk != 2<<30 || o.Sandbox.Provider != sandbox.ProviderBwrap || o.Agent != "opencode" {
		t.Errorf("nothing given: %+v\nwant every option the source's", o)
	}
	for _, c := range []struct {
		name  string
		opts  orchestrator.Options
		given []string
		check func(orchestrator.Options) bool
	}{
		{"--cpus 0: no CPU limit", orchestrator.Options{}, []string{"cpus"}, func(o orchestrator.Options) bool {
			return o.Sandbox.Limits.CPUs == 0 && o.Sandbox.Limits.Memory == 3<<30
		}},
		{"--max-tokens 0: no token budget", orchestrator.Options{}, []string{"max-tokens"}, func(o orchestrator.Options) bool {
			return o.MaxTokens == 0 && o.MaxCost == 2
		}},
		{"--timeout 0: the default, not the source's", orchestrator.Options{}, []string{"timeout"}, func(o orchestrator.Options) bool {
			return o.Timeout == 0
		}},
		{"--cpus 4", orchestrator.Options{Sandbox: launch.SandboxOptions{Limits: sandbox.Limits{CPUs: 4}}}, nil, func(o orchestrator.Options) bool {
			return o.Sandbox.Limits.CPUs == 4 && o.Sandbox.Network == sandbox.NetworkGateways
		}},
		{"another model: no script, budget or price of the source's", orchestrator.Options{Model: "other/m"}, nil, func(o orchestrator.Options) bool {
			return o.Script == "" && !o.Rerun.ContinueScript && o.MaxTokens == 0 && o.Price == nil && o.Timeout == 180*time.Second
		}},
		{"--task the source's folder", orchestrator.Options{Task: "../../testdata/tasks/e2e"}, nil, func(o orchestrator.Options) bool {
			return o.Task == task
		}},
	} {
		o, err := fork(c.opts, c.given...)
		if err != nil || !c.check(o) {
			t.Errorf("%s: %+v, %v", c.name, o, err)
		}
	}
	for _, c := range []struct {
		name string
		opts orchestrator.Options
		want string
	}{
		{"--task c-compiler", orchestrator.Options{Task: "c-compiler"}, "a fork cannot change the task"},
		{"--agent claude-code", orchestrator.Options{Agent: "claude-code"}, "the fork reruns src's harness, opencode"},
		{"--at-part past the end", orchestrator.Options{MaxParts: 1 << 20}, "has"},
	} {
		r := RunRequest{Fork: "src", AtPart: at, Options: c.opts}
		if c.name == "--at-part past the end" {
			r.AtPart = at + 1
		}
		_, err := src.forkOptions(r)
		var bad *BadRequest
		if !errors.As(err, &bad) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a bad request saying %q", c.name, err, c.want)
		}
	}
}

// TestForkPointRaceLagged attacks the fork point with a source whose
// model calls' parts_before lag (failure injection: the harness asked for
// its next answer before traj recorded the part that ended, as Codex does
// under load). The trace attributes parts 1..4 to call 1, 5..6 to call 2,
// 7..9 to call 3; parts_before say 0, 2 (two short) and 5 (one short). A
// fork at part P branches at the end of P's response as the attribution
// says, and the fork's options carry the source trace that places the
// calls for its playback.
func TestForkPointRaceLagged(t *testing.T) {
	t.Parallel()
	st := sourceStore(t, folder.RunState{TrajectoryID: "src", Task: "e2e", Model: "scripted/demo", Agent: "opencode"})
	dir := filepath.Join(st, "trajectories", "src")
	b, err := os.ReadFile(filepath.Join(dir, "agent_trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tr trace.Trace
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatal(err)
	}
	attributed := []int{1, 1, 1, 1, 2, 2, 3, 3, 3}
	n := 0
	for ti := range tr.Turns {
		for pi := range tr.Turns[ti].Parts {
			tr.Turns[ti].Parts[pi].ModelCall = &trace.PartCall{Seq: attributed[n]}
			n++
		}
	}
	if n != len(attributed) {
		t.Fatalf("the fixture has %d parts, the test attributes %d", n, len(attributed))
	}
	b, _ = json.Marshal(tr)
	var lagged []byte
	for i, before := range []int{0, 2, 5} {
		l, _ := json.Marshal(map[string]any{"seq": i + 1, "status": 200, "method": "POST", "path": "/v1/chat/completions", "parts_before": before})
		lagged = append(append(lagged, l...), '\n')
	}
	for name, data := range map[string][]byte{"agent_trace.json": b, "model_calls.jsonl": lagged} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src, err := OpenSource(t.Context(), "src", st)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[int]int{1: 4, 3: 4, 4: 4, 5: 6, 6: 6, 7: 9, 9: 9} {
		if got, err := src.forkPoint(p); err != nil || got != want {
			t.Errorf("fork at part %d: point %d (%v), want %d", p, got, err, want)
		}
	}
	_, rr, err := src.Recorded("src", st)
	if err != nil {
		t.Fatal(err)
	}
	if rr.Trace != src.Trace || rr.Trace == "" {
		t.Errorf("the fork's rerun names trace %q, want the source's %q", rr.Trace, src.Trace)
	}
}
