package groundtruth

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trajlab/traj/environment"
	"github.com/trajlab/traj/environment/ccompiler"
	"github.com/trajlab/traj/environment/mcp"
	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/evalbox"
	"github.com/trajlab/traj/sandbox"
)

// TestBudgetSlots: evaluations run in the standard room whatever the
// agent's limits; the agent's share (memory, CPUs, disk) decides how many
// rooms run at once, at least one.
func TestBudgetSlots(t *testing.T) {
	for _, c := range []struct {
		name  string
		slots int
		agent sandbox.Limits
		disk  int64
		want  int
	}{
		{"defaults", 0, sandbox.Limits{}, 0, DefaultSlots},
		{"default disk", 0, sandbox.Limits{}, 4 << 30, 2},
		{"agent 2g", 2, sandbox.Limits{Memory: 2 << 30}, 0, 1},
		{"agent 2 cpus", 2, sandbox.Limits{CPUs: 2}, 0, 1},
		{"disk 1g", 2, sandbox.Limits{}, 1 << 30, 1},
		{"big agent", 8, sandbox.Limits{Memory: 64 << 30, CPUs: 32}, 100 << 30, 8},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := NewBudget(c.slots, c.agent, c.disk).Slots(); got != c.want {
				t.Errorf("slots %d, want %d", got, c.want)
			}
		})
	}
}

// gatedRunner is an evaluator held at a gate, answering one run per path
// (a fake for the budget's logic; real sandboxes are tested elsewhere).
type gatedRunner struct {
	gate    chan struct{}
	started atomic.Int32
}

func (g *gatedRunner) Version() string { return "gated-1" }

func (g *gatedRunner) Evaluate(ctx context.Context, dir string, paths []string) (replay.Result, error) {
	p, err := g.EvaluateDetailed(ctx, dir, paths)
	return p.Result, err
}

func (g *gatedRunner) EvaluateDetailed(ctx context.Context, dir string, paths []string) (evalbox.Payload, error) {
	g.started.Add(1)
	select {
	case <-g.gate:
	case <-ctx.Done():
		return evalbox.Payload{}, ctx.Err()
	}
	p := evalbox.Payload{Result: replay.Result{Suites: map[string]replay.SuiteResult{}}}
	for _, path := range paths {
		p.Result.Suites[path] = replay.SuiteResult{}
		p.Runs = append(p.Runs, environment.Result{Path: path, Cases: []environment.CaseResult{}})
	}
	return p, nil
}

// TestBudgetShared: with one slot, a run_tests call waits while ground
// truth evaluates, starts only when it is done, and its answer says it
// waited and why, at full; below full it says nothing of the wait (a time
// the code under test chooses: ground truth runs its compiler too).
func TestBudgetShared(t *testing.T) {
	for _, level := range []mcp.Feedback{mcp.FeedbackFull, mcp.FeedbackFailures} {
		t.Run(string(level), func(t *testing.T) { budgetShared(t, level) })
	}
}

func budgetShared(t *testing.T, level mcp.Feedback) {
	repo, commit := history(t)
	c1 := commit("one")
	ev := &gatedRunner{gate: make(chan struct{})}
	b := NewBudget(1, sandbox.Limits{}, 0)
	paths := []string{"basics/smoke"}
	gt := &Scorer{Trees: repo, Eval: ev, Paths: paths, Budget: b}
	env, err := ccompiler.New(ccompiler.Config{})
	if err != nil {
		t.Fatal(err)
	}
	tt := NewTestsTool(&Scorer{Trees: repo, Eval: ev, Paths: paths, Budget: b}, env, repo.Snapshot, level)
	runTests, err := tt.Tool()
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	scored := make(chan error, 1)
	go func() {
		_, err := gt.Score(ctx, 1, c1)
		scored <- err
	}()
	waitFor(t, func() bool { return ev.started.Load() == 1 })
	answered := make(chan string, 1)
	go func() {
		answered <- runTests.Run(ctx, json.RawMessage(`{"test_path":"basics/smoke"}`)).Text
	}()
	const held = 300 * time.Millisecond
	time.Sleep(held)
	if n := ev.started.Load(); n != 1 {
		t.Fatalf("%d evaluations started with one slot held by ground truth", n)
	}
	close(ev.gate)
	if err := <-scored; err != nil {
		t.Fatal(err)
	}
	var got struct {
		StatusCode int    `json:"status_code"`
		WaitedMS   int64  `json:"waited_ms"`
		Waited     string `json:"waited"`
	}
	text := <-answered
	if err := json.Unmarshal([]byte(text), &got); err != nil {
		t.Fatal(err)
	}
	if level != mcp.FeedbackFull {
		if got.StatusCode != 200 || got.WaitedMS != 0 || got.Waited != "" {
			t.Fatalf("run_tests answer at %s %s: want status 200 and no word of the wait", level, text)
		}
		return
	}
	// The call started a moment after the hold did (its goroutine), so
	// its wait is a little under held: the answer must say it waited.
	if got.StatusCode != 200 || got.WaitedMS < waitNote.Milliseconds() || !strings.Contains(got.Waited, "evaluation slot") {
		t.Fatalf("run_tests answer %s: want status 200 and the wait (about %v) said in the answer", text, held)
	}
}

// TestRunTestsCallsBound: past MaxCalls answers (a resumed run's recorded
// calls counted), a run_tests call is refused (429) without an
// evaluation, so the answers of one trajectory carry no more than the
// bound allows.
func TestRunTestsCallsBound(t *testing.T) {
	repo, commit := history(t)
	commit("one")
	ev := &gatedRunner{gate: make(chan struct{})}
	close(ev.gate)
	env, err := ccompiler.New(ccompiler.Config{})
	if err != nil {
		t.Fatal(err)
	}
	tt := NewTestsTool(&Scorer{Trees: repo, Eval: ev, Paths: []string{"basics/smoke"}, Budget: NewBudget(1, sandbox.Limits{}, 0)},
		env, repo.Snapshot, mcp.FeedbackFailures)
	tt.MaxCalls = 3
	tt.Answered(1) // a resumed run's recorded call
	runTests, err := tt.Tool()
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{200, 200, 429, 429} {
		var got struct {
			StatusCode int     `json:"status_code"`
			Error      *string `json:"error"`
		}
		text := runTests.Run(t.Context(), json.RawMessage(`{"test_path":"basics/smoke"}`)).Text
		if err := json.Unmarshal([]byte(text), &got); err != nil {
			t.Fatal(err)
		}
		if got.StatusCode != want {
			t.Fatalf("call %d: %s, want status %d", i+1, text, want)
		}
		if want == 429 && (got.Error == nil || !strings.Contains(*got.Error, "run_tests_calls")) {
			t.Fatalf("call %d: %s does not say which setting bounds it", i+1, text)
		}
	}
	if n := ev.started.Load(); n != 2 {
		t.Fatalf("%d evaluations for 2 answered calls", n)
	}
}
