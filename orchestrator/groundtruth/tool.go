package groundtruth

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/trajlab/traj/environment"
	"github.com/trajlab/traj/environment/mcp"
	"github.com/trajlab/traj/sandbox/gateway/tool"
)

// TestsTool is the agent's run_tests, served by the tool gateway: each
// call snapshots the workspace (the tree a checkpoint would record) and
// runs the path on it in an evaluation sandbox. The agent is told what
// the feedback level allows; the full answer is kept for the trace under
// the call's tool_call_id, which the agent's answer carries.
type TestsTool struct {
	scorer   *Scorer
	snapshot func(ctx context.Context) (string, error)
	srv      *mcp.Server
	feedback mcp.Feedback
	// MaxCalls bounds the calls answered with a test run (0 or less: no
	// bound); later calls are refused with 429. Every call with a
	// test_path counts, a bad path too; a retry of a call (the same
	// tool_call_id) is answered once by the gateway and counts once.
	MaxCalls int
	calls    int

	mu   sync.Mutex
	full map[string][]byte
	// waited is how long each call waited for an evaluation slot.
	waited map[string]time.Duration
}

// NewTestsTool serves run_tests for env's paths; snapshot returns the
// workspace's tree now (gitstate.Repo.Snapshot).
func NewTestsTool(s *Scorer, env environment.Environment, snapshot func(ctx context.Context) (string, error), fb mcp.Feedback) *TestsTool {
	t := &TestsTool{scorer: s, snapshot: snapshot, feedback: fb, full: map[string][]byte{}, waited: map[string]time.Duration{}}
	t.srv = mcp.New(env, "", mcp.Options{Feedback: fb, Logger: s.Logger, Runner: t.run})
	return t
}

func (t *TestsTool) run(ctx context.Context, path string) (environment.Result, error) {
	tree, err := t.snapshot(ctx)
	if err != nil {
		return environment.Result{}, err
	}
	res, waited, err := t.scorer.RunTests(ctx, tree, path)
	t.mu.Lock()
	t.waited[tool.CallID(ctx)] = waited
	t.mu.Unlock()
	return res, err
}

// answer is what the agent is told: the run_tests JSON at the feedback
// level, with the id of the full answer, and, when the call waited for an
// evaluation slot (the run's evaluations are bounded), how long and why.
type answer struct {
	mcp.Response
	ToolCallID string `json:"tool_call_id"`
	WaitedMS   int64  `json:"waited_ms,omitempty"`
	Waited     string `json:"waited,omitempty"`
}

// AnswerVarying matches what differs from run to run in a run_tests
// answer as a harness sends it back to its model (a JSON string inside
// the request, its quotes escaped once or more): when it ran, how long it
// took or waited, the gateway's id of the call, and the exit status of
// version 3's controls, drawn anew for each evaluation (a voided suite's
// reason named it, in the traces recorded then). A rerun compares model requests with these
// blanked (sandbox/playback, replay/rerun).
var AnswerVarying = regexp.MustCompile(`\\+"(?:timestamp|duration_ms|tool_call_id|waited_ms|waited)\\+":(?:\\+"[^"\\]*\\+"|[0-9]+)|expected to exit [0-9]+`)

// waitNote is how long a call must wait before its answer says so.
const waitNote = 100 * time.Millisecond

// Tool is the gateway's tool: run_tests as the tests MCP server defines it.
func (t *TestsTool) Tool() (tool.Tool, error) {
	def := t.srv.Tool()
	schema, err := json.Marshal(def.InputSchema)
	if err != nil {
		return tool.Tool{}, fmt.Errorf("encode run_tests input schema: %w", err)
	}
	return tool.Tool{Name: def.Name, Description: def.Description, InputSchema: schema,
		Run: func(ctx context.Context, args json.RawMessage) tool.Result {
			var in struct {
				TestPath *string `json:"test_path"`
			}
			var resp mcp.Response
			if err := json.Unmarshal(args, &in); err != nil || in.TestPath == nil {
				msg := "test_path (a string) is required"
				resp = mcp.Response{StatusCode: 400, Error: &msg}
			} else if spent := t.take(); spent {
				msg := fmt.Sprintf("run_tests: this task answers %d calls per trajectory and all are spent (task.json run_tests_calls)", t.MaxCalls)
				resp = mcp.Response{Path: *in.TestPath, StatusCode: 429, Error: &msg}
			} else {
				resp = t.srv.RunTests(ctx, *in.TestPath, nil)
			}
			id := tool.CallID(ctx)
			ans := answer{Response: resp.For(t.feedback), ToolCallID: id}
			t.mu.Lock()
			if full, err := json.Marshal(resp); err == nil {
				t.full[id] = full
			}
			// How long it waited is a time the code under test chooses
			// (ground truth runs its compiler too): told at full only.
			if w := t.waited[id]; w >= waitNote && (t.feedback == mcp.FeedbackFull || t.feedback == "") {
				ans.WaitedMS = w.Milliseconds()
				ans.Waited = fmt.Sprintf("this call waited %.1f s for an evaluation slot: the run evaluates %d trees at once, for run_tests and ground truth together", w.Seconds(), t.slots())
			}
			delete(t.waited, id)
			t.mu.Unlock()
			text, err := json.Marshal(ans)
			if err != nil {
				return tool.Result{Text: fmt.Sprintf("encode run_tests answer: %v", err), IsError: true}
			}
			return tool.Result{Text: string(text), IsError: resp.StatusCode != 200}
		}}, nil
}

// Answered counts n calls answered before this tool existed (a resumed
// run's recorded calls) against MaxCalls.
func (t *TestsTool) Answered(n int) {
	t.mu.Lock()
	t.calls += n
	t.mu.Unlock()
}

// take counts a call; spent when it is past MaxCalls.
func (t *TestsTool) take() (spent bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.MaxCalls > 0 && t.calls >= t.MaxCalls {
		return true
	}
	t.calls++
	return false
}

func (t *TestsTool) slots() int {
	if t.scorer.Budget == nil {
		return 0
	}
	return t.scorer.Budget.Slots()
}

// Full returns the full run_tests answer of a call, as JSON.
func (t *TestsTool) Full(toolCallID string) ([]byte, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b, ok := t.full[toolCallID]
	return b, ok
}
