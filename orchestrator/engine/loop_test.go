package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trajlab/traj/orchestrator/agenttest"
	"github.com/trajlab/traj/orchestrator/engine"
	"github.com/trajlab/traj/orchestrator/folder"
	"github.com/trajlab/traj/orchestrator/progress"
	"github.com/trajlab/traj/orchestrator/secret"
	"github.com/trajlab/traj/orchestrator/task"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/gitstate"
	"github.com/trajlab/traj/trace/tracetest"
)

// published collects what the loop handed to the publisher, in order:
// the parts, and the trace as the chunks put it back together (their
// fixed bytes in order, then the last tail).
type published struct {
	parts      []int
	fixed      bytes.Buffer
	tail       []byte
	misordered []int64
}

func (p *published) PartRecorded(_ context.Context, rec *trace.Part) error {
	p.parts = append(p.parts, rec.Part)
	return nil
}

func (p *published) TraceWritten(c trace.Chunk) {
	if c.Tail == nil {
		return // the call wrote nothing
	}
	if c.Offset != int64(p.fixed.Len()) {
		p.misordered = append(p.misordered, c.Offset)
	}
	p.fixed.Write(c.Data)
	p.tail = append(p.tail[:0], c.Tail...)
}

// harness runs a Loop over an in-memory agent with the real trace writer
// and the real git checkpointer.
type harness struct {
	t         *testing.T
	b         *agenttest.Builder
	root      string
	workspace string
	tracePath string
	pub       *published
	events    []progress.Event
	// stall is the loop's StallTimeout (0: the default).
	stall time.Duration
	// gateway and full are the tool gateway's ledger and full answers
	// (nil: none).
	gateway engine.GatewayCalls
	full    func(string) ([]byte, bool)
	// responseTools knows a response's tool calls (nil: not known);
	// countTools counts them.
	responseTools *engine.ResponseTools
	countTools    bool
	// groundTruth, when set, makes the loop's ground truth on the
	// checkpoint history.
	groundTruth func(repo *gitstate.Repo) engine.GroundTruth
	// redact is the loop's Redactor (nil: none).
	redact engine.Redactor
	// counted is the part counter the loop keeps for the model gateway;
	// counterBehind lists the parts whose PartDone it had not reached.
	counted       atomic.Int64
	counterBehind []int
}

func (h *harness) Report(ev progress.Event) {
	if ev.Type == progress.PartDone && h.counted.Load() != int64(ev.Part) {
		h.counterBehind = append(h.counterBehind, ev.Part)
	}
	h.events = append(h.events, ev)
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	dir := t.TempDir()
	b := agenttest.NewBuilder()
	return &harness{t: t, b: b, root: b.SessionID(), workspace: filepath.Join(dir, "workspace"),
		tracePath: filepath.Join(dir, "agent_trace.json"), pub: &published{}}
}

// write returns a side effect writing a workspace file.
func (h *harness) write(name, content string) func() error {
	return func() error {
		p := filepath.Join(h.workspace, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		return os.WriteFile(p, []byte(content), 0o644)
	}
}

func (h *harness) run(ctx context.Context, agent *agenttest.Agent, maxParts int) (engine.Outcome, *trace.Trace) {
	h.t.Helper()
	repo, err := gitstate.Init(ctx, filepath.Join(filepath.Dir(h.workspace), folder.CheckpointsName), h.workspace, gitstate.Options{})
	if err != nil {
		h.t.Fatal(err)
	}
	tk, err := task.Load("testdata/tasks/mini")
	if err != nil {
		h.t.Fatal(err)
	}
	w, err := trace.Create(h.tracePath, trace.Header{TrajectoryID: "t1", SessionID: h.root, Agent: "opencode",
		AgentModel: "test/model", StartedAt: trace.Timestamp(time.Now())}, trace.WriterOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	defer w.Close()
	h.pub.TraceWritten(w.Written()) // the header, as the record path hands it on
	root := h.b.Session(h.root, "")
	var gt engine.GroundTruth
	if h.groundTruth != nil {
		gt = h.groundTruth(repo)
	}
	loop := engine.NewLoop(engine.LoopConfig{RootSessionID: h.root, RootSession: *root.Event.Session,
		Task: tk, MaxParts: maxParts, AbortGrace: 2 * time.Second, StallTimeout: h.stall,
		GatewayCalls: h.gateway, FullToolResult: h.full, ResponseTools: h.responseTools, CountTools: h.countTools,
		GroundTruth: gt, Redact: h.redact, Parts: &h.counted}, agent, repo, w, h.pub, h)
	out, err := loop.Run(ctx)
	if err != nil {
		h.t.Fatalf("loop: %v", err)
	}
	// Every write the loop made reached the publisher: its chunks put
	// the trace back together byte for byte.
	disk, err := os.ReadFile(h.tracePath)
	if err != nil {
		h.t.Fatal(err)
	}
	if got := append(bytes.Clone(h.pub.fixed.Bytes()), h.pub.tail...); !bytes.Equal(got, disk) || len(h.pub.misordered) > 0 {
		h.t.Errorf("the chunks handed to the publisher (out of order at %v) are not the trace:\n%s\n---\n%s", h.pub.misordered, got, disk)
	}
	if h.counted.Load() != int64(out.Parts) || len(h.counterBehind) > 0 {
		h.t.Errorf("part counter %d after %d parts; behind at the PartDone of parts %v", h.counted.Load(), out.Parts, h.counterBehind)
	}
	if err := w.Finish(trace.SessionEnd{Reason: out.Reason, Detail: out.Detail}, map[string]string{}); err != nil {
		h.t.Fatal(err)
	}
	raw, err := os.ReadFile(h.tracePath)
	if err != nil {
		h.t.Fatal(err)
	}
	if probs := trace.Validate(bytes.NewReader(raw)); len(probs) > 0 {
		h.t.Fatalf("trace does not validate: %v", probs)
	}
	tr, err := trace.Read(bytes.NewReader(raw))
	if err != nil {
		h.t.Fatal(err)
	}
	return out, tr
}

func allParts(tr *trace.Trace) []trace.Part {
	var out []trace.Part
	for _, t := range tr.Turns {
		out = append(out, t.Parts...)
	}
	return out
}

func field(t *testing.T, raw json.RawMessage, key string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	s, _ := m[key].(string)
	return s
}

// checkNothingLost asserts every object the agent server holds appears in
// the trace exactly once.
func checkNothingLost(t *testing.T, agent *agenttest.Agent, root string, tr *trace.Trace) {
	t.Helper()
	seen := tracetest.ObjectIDs(tr)
	snap, err := agent.Snapshot(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range snap {
		want := []json.RawMessage{s.Session.Raw}
		for _, m := range s.Messages {
			want = append(want, m.Message.Raw)
			for _, p := range m.Parts {
				want = append(want, p.Raw)
			}
		}
		for _, w := range want {
			if id := field(t, w, "id"); seen[id] != 1 {
				t.Errorf("object %s appears %d times in the trace, want once", id, seen[id])
			}
		}
	}
}

func TestLoopRecordsPartsInOrder(t *testing.T) {
	h := newHarness(t)
	b, root := h.b, h.root
	var turn1 agenttest.Turn
	m1, it := b.Message(root, "assistant")
	turn1 = append(turn1, it, b.CallStart(root, m1))
	turn1 = append(turn1, b.Reasoning(root, m1, "plan the lexer")...)
	write := b.Tool(root, m1, "write", map[string]any{"filePath": "main.rs"}, "wrote")
	write[len(write)-1].Before = h.write("main.rs", "fn main() {}\n")
	turn1 = append(turn1, write...)
	turn1 = append(turn1, b.RunTests(root, m1, "basics/smoke", 3, 2)...)
	turn1 = append(turn1, b.CallFinish(root, m1, 100, 20, 0.5))
	m2, it := b.Message(root, "assistant")
	turn1 = append(turn1, it, b.CallStart(root, m2))
	turn1 = append(turn1, b.Text(root, m2, "lexer written")...)
	turn1 = append(turn1, b.CallFinish(root, m2, 50, 10, 0.25))

	var turn2 agenttest.Turn
	m3, it := b.Message(root, "assistant")
	turn2 = append(turn2, it)
	edit := b.Tool(root, m3, "edit", map[string]any{"filePath": "main.rs"}, "edited")
	edit[len(edit)-1].Before = h.write("main.rs", "fn main() { println!(\"cc\"); }\n")
	turn2 = append(turn2, edit...)
	turn2 = append(turn2, b.RunTests(root, m3, "basics/smoke", 5, 0)...)
	turn2 = append(turn2, b.RunTests(root, m3, "basics/expressions", 4, 0)...)
	turn2 = append(turn2, b.CallFinish(root, m3, 70, 5, 0.125))

	agent := agenttest.New(b, turn1, turn2)
	out, tr := h.run(context.Background(), agent, 100)

	if out.Reason != trace.EndSolved {
		t.Fatalf("reason = %s (%s), want solved", out.Reason, out.Detail)
	}
	parts := allParts(tr)
	wantTypes := []string{"reasoning", "tool", "tool", "text", "tool", "tool", "tool"}
	if len(parts) != len(wantTypes) || out.Parts != len(wantTypes) || out.Turns != 2 {
		t.Fatalf("got %d parts (outcome %d parts, %d turns), want %d parts in 2 turns", len(parts), out.Parts, out.Turns, len(wantTypes))
	}
	for i, p := range parts {
		if p.Part != i+1 || p.PartType != wantTypes[i] {
			t.Errorf("part %d: index %d type %s, want %d %s", i, p.Part, p.PartType, i+1, wantTypes[i])
		}
		if p.SessionID != root || p.GitCommit == "" || p.RepoCheckpoint == nil {
			t.Errorf("part %d: session %q commit %q checkpoint %v", p.Part, p.SessionID, p.GitCommit, p.RepoCheckpoint)
		}
		if p.RepoCheckpoint.Committed != (p.Part == 2 || p.Part == 5) {
			t.Errorf("part %d: committed = %v", p.Part, p.RepoCheckpoint.Committed)
		}
	}
	if c := parts[1].RepoCheckpoint; c.CommitBefore == c.CommitAfter || len(c.ChangedFiles) != 1 || c.ChangedFiles[0] != "main.rs" {
		t.Errorf("part 2 checkpoint = %+v, want a commit of main.rs", c)
	}
	if parts[2].GitCommit != parts[1].GitCommit {
		t.Errorf("part 3 git_commit %s, want the effective commit %s", parts[2].GitCommit, parts[1].GitCommit)
	}
	// run_tests results are recorded in the part that completed them.
	for _, c := range []struct {
		part int
		path string
	}{{3, "basics/smoke"}, {6, "basics/smoke"}, {7, "basics/expressions"}} {
		calls := parts[c.part-1].EnvoiCalls
		if len(calls) != 1 || calls[0].Path != c.path || calls[0].StatusCode != 200 || !strings.Contains(string(calls[0].Result), `"passed"`) {
			t.Errorf("part %d envoi_calls = %+v, want one %s call with its result", c.part, calls, c.path)
		}
	}
	for _, p := range parts {
		if p.Part != 3 && p.Part != 6 && p.Part != 7 && len(p.EnvoiCalls) != 0 {
			t.Errorf("part %d has envoi calls %v", p.Part, p.EnvoiCalls)
		}
	}
	// Prompts: the turn prompt on the first part of each turn; the
	// continuation lists the unsolved path first.
	prompts := agent.Prompts()
	if len(prompts) != 2 || parts[0].Prompt != prompts[0] || parts[4].Prompt != prompts[1] || parts[1].Prompt != "" {
		t.Errorf("prompts %q; part prompts %q, %q", prompts, parts[0].Prompt, parts[4].Prompt)
	}
	if !strings.Contains(prompts[1], "basics/expressions: not run yet") || !strings.Contains(prompts[1], "basics/smoke: 3/5 passed") {
		t.Errorf("continuation prompt does not report the test status:\n%s", prompts[1])
	}
	// Usage reported in "step-finish" parts lands on the next counted part.
	if p := parts[3]; p.Tokens == nil || p.Tokens.Input != 100 || *p.Cost != 0.5 {
		t.Errorf("part 4 tokens %+v cost %v, want the first message's usage", p.Tokens, p.Cost)
	}
	if out.Tokens.Input != 220 || out.Cost != 0.875 {
		t.Errorf("outcome tokens %+v cost %v, want input 220 cost 0.875", out.Tokens, out.Cost)
	}
	// Turn bookkeeping.
	if t0 := tr.Turns[0]; *t0.PartStart != 1 || *t0.PartEnd != 4 || t0.Prompt != prompts[0] {
		t.Errorf("turn 1: parts %d..%d", *t0.PartStart, *t0.PartEnd)
	}
	if got := h.pub.parts; len(got) != 7 || got[0] != 1 || got[6] != 7 {
		t.Errorf("published parts %v, want 1..7", got)
	}
	// The first part carries the root session and the first messages.
	if len(parts[0].Sessions) != 1 || field(t, parts[0].Sessions[0], "id") != root {
		t.Errorf("part 1 sessions = %s", parts[0].Sessions)
	}
	if len(parts[0].NewMessages) != 2 { // the user prompt and the first answer
		t.Errorf("part 1 new_messages = %d, want 2", len(parts[0].NewMessages))
	}
	// Progress: every part reported in order, tool starts before their parts.
	var seq []string
	for _, ev := range h.events {
		switch ev.Type {
		case progress.PartDone:
			seq = append(seq, fmt.Sprintf("part%d", ev.Part))
		case progress.ToolStarted:
			seq = append(seq, "start:"+ev.Tool)
		case progress.TurnStarted, progress.TurnEnded:
			seq = append(seq, ev.Type)
		}
	}
	wantSeq := "turn_started part1 start:write part2 start:tests_run_tests part3 part4 turn_ended " +
		"turn_started start:edit part5 start:tests_run_tests part6 start:tests_run_tests part7 turn_ended"
	if got := strings.Join(seq, " "); got != wantSeq {
		t.Errorf("progress events\n got %s\nwant %s", got, wantSeq)
	}
	checkNothingLost(t, agent, root, tr)
}

func TestLoopSubAgentParts(t *testing.T) {
	h := newHarness(t)
	b, root := h.b, h.root
	child := b.SessionID()
	var turn agenttest.Turn
	m1, it := b.Message(root, "assistant")
	turn = append(turn, it)
	task := b.ToolRunning(root, m1, "task", map[string]any{"prompt": "write tests"})
	turn = append(turn, task, b.Session(child, root))
	cm, it := b.Message(child, "assistant")
	turn = append(turn, it)
	turn = append(turn, b.Text(child, cm, "sub-agent at work")...)
	turn = append(turn, b.Tool(child, cm, "bash", map[string]any{"command": "ls"}, "main.rs")...)
	turn = append(turn, b.Text(root, m1, "the sub-agent is done")...)
	agent := agenttest.New(b, turn)
	out, tr := h.run(context.Background(), agent, 100)
	if out.Reason != trace.EndAgentError {
		t.Errorf("reason %s, want agent_error after empty turns", out.Reason)
	}
	parts := allParts(tr)
	if len(parts) != 3 {
		t.Fatalf("%d parts, want 3", len(parts))
	}
	if parts[0].SessionID != child || parts[1].SessionID != child || parts[2].SessionID != root {
		t.Errorf("sessions %s %s %s, want child, child, root", parts[0].SessionID, parts[1].SessionID, parts[2].SessionID)
	}
	if len(parts[0].SessionIDs) != 2 || parts[0].SessionIDs[1] != child {
		t.Errorf("session_ids = %v", parts[0].SessionIDs)
	}
	var got []string
	for _, s := range parts[0].Sessions {
		got = append(got, field(t, s, "id"))
	}
	if len(got) != 2 || got[1] != child {
		t.Errorf("part 1 sessions %v, want root and child", got)
	}
	checkNothingLost(t, agent, root, tr)
}

func TestLoopPartBudget(t *testing.T) {
	h := newHarness(t)
	b, root := h.b, h.root
	var turn agenttest.Turn
	m, it := b.Message(root, "assistant")
	turn = append(turn, it)
	for i := range 10 {
		turn = append(turn, b.Text(root, m, strings.Repeat("x", i+2))...)
	}
	agent := agenttest.New(b, turn)
	agent.AfterAbort = 3 // still delivered after the abort: one part, half another
	out, tr := h.run(context.Background(), agent, 7)
	if out.Reason != trace.EndPartLimit || out.Parts != 7 {
		t.Fatalf("reason %s parts %d, want part_limit at 7", out.Reason, out.Parts)
	}
	parts := allParts(tr)
	if len(parts) != 7 || parts[6].Part != 7 {
		t.Fatalf("%d parts recorded, want exactly 7", len(parts))
	}
	if agent.Aborts() != 1 {
		t.Errorf("aborts = %d, want 1", agent.Aborts())
	}
	last := tr.Turns[len(tr.Turns)-1]
	var trailingText int
	for _, raw := range last.TrailingParts {
		if field(t, raw, "type") == "text" {
			trailingText++
		}
	}
	// The 8th part completed (after the budget) and the 9th started: both
	// kept, uncounted.
	if trailingText != 2 {
		t.Errorf("trailing text parts = %d, want 2: %s", trailingText, last.TrailingParts)
	}
	if len(agent.Prompts()) != 1 {
		t.Errorf("prompts = %d, want 1", len(agent.Prompts()))
	}
	checkNothingLost(t, agent, root, tr)
}

func TestLoopReconcilesMissedEvents(t *testing.T) {
	h := newHarness(t)
	b, root := h.b, h.root
	var turn agenttest.Turn
	m, it := b.Message(root, "assistant")
	turn = append(turn, it)
	turn = append(turn, b.Text(root, m, "seen")...)
	missed := b.Text(root, m, "the stream missed my end")
	missed[1].Hidden = true
	turn = append(turn, missed...)
	hidden := b.Tool(root, m, "bash", map[string]any{"command": "true"}, "")
	for i := range hidden {
		hidden[i].Hidden = true
	}
	turn = append(turn, hidden...)
	agent := agenttest.New(b, turn)
	_, tr := h.run(context.Background(), agent, 100)
	parts := allParts(tr)
	if len(parts) != 3 || parts[1].PartType != "text" || parts[2].PartType != "tool" {
		t.Fatalf("parts %d, want the seen text then the two missed parts from the message list", len(parts))
	}
	if !strings.Contains(string(parts[1].Content), `"end"`) {
		t.Errorf("reconciled part is not the completed version: %s", parts[1].Content)
	}
	checkNothingLost(t, agent, root, tr)
}

func TestLoopEndReasons(t *testing.T) {
	tests := []struct {
		name   string
		turn   func(h *harness, cancel context.CancelFunc) agenttest.Turn
		setup  func(a *agenttest.Agent)
		ctx    func() (context.Context, context.CancelFunc)
		reason string
		parts  int
	}{
		{
			name: "root session error",
			turn: func(h *harness, _ context.CancelFunc) agenttest.Turn {
				m, it := h.b.Message(h.root, "assistant")
				return append(append(agenttest.Turn{it}, h.b.Text(h.root, m, "hello")...), h.b.Error(h.root, "provider exploded"))
			},
			reason: trace.EndAgentError, parts: 1,
		},
		{
			name: "server gone",
			turn: func(h *harness, _ context.CancelFunc) agenttest.Turn {
				m, it := h.b.Message(h.root, "assistant")
				return append(agenttest.Turn{it}, h.b.Text(h.root, m, "hello")...)
			},
			setup:  func(a *agenttest.Agent) { a.GoneAfter = 6 },
			reason: trace.EndAgentError, parts: 1,
		},
		{
			name: "environment error",
			turn: func(h *harness, _ context.CancelFunc) agenttest.Turn {
				m, it := h.b.Message(h.root, "assistant")
				items := h.b.Tool(h.root, m, "tests_run_tests", map[string]any{"test_path": "basics"},
					`{"path":"basics","timestamp":"x","duration_ms":1,"status_code":500,"error":"runner crashed","result":null}`)
				return append(append(agenttest.Turn{it}, items...), h.b.Text(h.root, m, "after")...)
			},
			reason: trace.EndEnvoiError, parts: 1,
		},
		{
			name: "interrupted",
			turn: func(h *harness, cancel context.CancelFunc) agenttest.Turn {
				m, it := h.b.Message(h.root, "assistant")
				text := h.b.Text(h.root, m, "hello")
				text[1].Before = func() error { cancel(); return nil }
				return append(agenttest.Turn{it}, text...)
			},
			reason: trace.EndInterrupted, parts: 1,
		},
		{
			name: "timeout",
			turn: func(h *harness, _ context.CancelFunc) agenttest.Turn {
				m, it := h.b.Message(h.root, "assistant")
				text := h.b.Text(h.root, m, "hello")
				slow := h.b.Text(h.root, m, "slow")
				slow[0].Before = func() error { time.Sleep(300 * time.Millisecond); return nil }
				return append(append(agenttest.Turn{it}, text...), slow...)
			},
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 150*time.Millisecond)
			},
			reason: trace.EndTimeout, parts: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			ctx, cancel := context.WithCancel(context.Background())
			if tt.ctx != nil {
				ctx, cancel = tt.ctx()
			}
			defer cancel()
			agent := agenttest.New(h.b, tt.turn(h, cancel))
			if tt.setup != nil {
				tt.setup(agent)
			}
			out, tr := h.run(ctx, agent, 100)
			if out.Reason != tt.reason || out.Parts != tt.parts || len(allParts(tr)) != tt.parts {
				t.Errorf("reason %s (%s) with %d parts, want %s with %d", out.Reason, out.Detail, out.Parts, tt.reason, tt.parts)
			}
			if tt.reason == trace.EndAgentError || tt.reason == trace.EndEnvoiError {
				if out.Detail == "" {
					t.Error("no detail for an error end")
				}
			}
		})
	}
}

func TestTestStatusFromEnclosingPaths(t *testing.T) {
	h := newHarness(t)
	b, root := h.b, h.root
	m, it := b.Message(root, "assistant")
	answer := `{"path":"all","timestamp":"t","duration_ms":5,"status_code":200,"error":null,"result":{"path":"all","passed":3,"failed":0,"total":3,"cases":[` +
		`{"name":"basics/smoke/a.c","passed":true},{"name":"basics/smoke/b.c","passed":true},{"name":"basics/expressions/c.c","passed":true}]}}`
	turn := append(agenttest.Turn{it}, b.Tool(root, m, "tests_run_tests", map[string]any{"test_path": "all"}, answer)...)
	agent := agenttest.New(b, turn)
	out, _ := h.run(context.Background(), agent, 100)
	if out.Reason != trace.EndSolved || out.Parts != 1 {
		t.Errorf("reason %s after %d parts, want solved by the run of all", out.Reason, out.Parts)
	}
}

// TestLoopResyncFindsTurnOver: the stream lost the idle event and some
// parts; after it resumed, the message list shows the exchange is over.
func TestLoopResyncFindsTurnOver(t *testing.T) {
	h := newHarness(t)
	b, root := h.b, h.root
	m, it := b.Message(root, "assistant")
	turn := agenttest.Turn{it}
	turn = append(turn, b.Text(root, m, "first")...)
	lost := b.Text(root, m, "lost in the gap")
	for i := range lost {
		lost[i].Hidden = true
	}
	turn = append(turn, lost...)
	finish := b.Finish(root, m, "stop")
	finish.Hidden = true
	turn = append(turn, finish)
	agent := agenttest.New(b, turn)
	agent.LoseIdle = true
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, tr := h.run(ctx, agent, 2)
	if out.Reason != trace.EndPartLimit || out.Parts != 2 || len(tr.Turns) != 1 || len(tr.Turns[0].Parts) != 2 {
		t.Fatalf("reason %s with %d parts; want the turn to end after resync with both parts", out.Reason, out.Parts)
	}
	if agent.Aborts() != 0 {
		t.Errorf("aborted %d times; the turn was over, nothing to abort", agent.Aborts())
	}
	checkNothingLost(t, agent, root, tr)
}

// failingAppend is a fault-injecting trace writer: the real writer, with
// the second part's append failing as a full disk would.
type failingAppend struct {
	*trace.Writer
}

func (f failingAppend) AppendPart(p *trace.Part) error {
	if p.Part == 2 {
		return fmt.Errorf("append part %d: write agent_trace.json: no space left on device (injected)", p.Part)
	}
	return f.Writer.AppendPart(p)
}

// TestLoopErrorNamesTheOperationOnce: when the trace cannot be written the
// run stops with the writer's own error, not wrapped again in the same
// words ("append part 2: append part 2: …").
func TestLoopErrorNamesTheOperationOnce(t *testing.T) {
	h := newHarness(t)
	b, root := h.b, h.root
	m, it := b.Message(root, "assistant")
	turn := append(agenttest.Turn{it}, b.Text(root, m, "one")...)
	turn = append(turn, b.Text(root, m, "two")...)
	ctx := context.Background()
	repo, err := gitstate.Init(ctx, filepath.Join(filepath.Dir(h.workspace), folder.CheckpointsName), h.workspace, gitstate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load("testdata/tasks/mini")
	if err != nil {
		t.Fatal(err)
	}
	w, err := trace.Create(h.tracePath, trace.Header{TrajectoryID: "t1", SessionID: root, Agent: "opencode",
		AgentModel: "test/model", StartedAt: trace.Timestamp(time.Now())}, trace.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	loop := engine.NewLoop(engine.LoopConfig{RootSessionID: root, RootSession: *b.Session(root, "").Event.Session,
		Task: tk, MaxParts: 10, AbortGrace: time.Second}, agenttest.New(b, turn), repo, failingAppend{w}, h.pub, h)
	out, err := loop.Run(ctx)
	if err == nil || out.Parts != 1 {
		t.Fatalf("loop: %v after %d parts, want the append of part 2 to fail", err, out.Parts)
	}
	if n := strings.Count(err.Error(), "append part 2"); n != 1 {
		t.Errorf("error %q names its operation %d times, want once", err, n)
	}
}

// TestLoopStallWatchdog: a turn with no new part for StallTimeout is
// aborted and sent again in the same session; a second stall in a row ends
// the run agent_error with a detail that says it stalled.
func TestLoopStallWatchdog(t *testing.T) {
	// stalled is a turn whose tool starts and then nothing more arrives for
	// longer than the watchdog allows.
	stalled := func(h *harness) agenttest.Turn {
		m, it := h.b.Message(h.root, "assistant")
		running := h.b.ToolRunning(h.root, m, "bash", map[string]any{"command": "sleep 1000"})
		running.Before = func() error { time.Sleep(400 * time.Millisecond); return nil }
		return agenttest.Turn{it, running}
	}
	working := func(h *harness) agenttest.Turn {
		m, it := h.b.Message(h.root, "assistant")
		return append(agenttest.Turn{it}, h.b.Text(h.root, m, "back to work")...)
	}
	for _, tc := range []struct {
		name   string
		turns  func(h *harness) []agenttest.Turn
		reason string
		parts  int
	}{
		{"recovers when sent again", func(h *harness) []agenttest.Turn { return []agenttest.Turn{stalled(h), working(h)} }, trace.EndPartLimit, 1},
		{"stalls twice", func(h *harness) []agenttest.Turn { return []agenttest.Turn{stalled(h), stalled(h), working(h)} }, trace.EndAgentError, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.stall = 150 * time.Millisecond
			a := agenttest.New(h.b, tc.turns(h)...)
			out, tr := h.run(context.Background(), a, 1)
			if out.Reason != tc.reason || out.Parts != tc.parts || len(allParts(tr)) != tc.parts {
				t.Fatalf("reason %s (%s) with %d parts, want %s with %d", out.Reason, out.Detail, out.Parts, tc.reason, tc.parts)
			}
			prompts := a.Prompts()
			if len(prompts) != 2 || prompts[0] != prompts[1] {
				t.Errorf("want the stalled turn's prompt sent once more, got %d prompts", len(prompts))
			}
			if tc.reason == trace.EndAgentError && !strings.Contains(out.Detail, "stalled") {
				t.Errorf("detail %q does not say it stalled", out.Detail)
			}
			warned := false
			for _, ev := range h.events {
				warned = warned || ev.Type == progress.Warning && strings.Contains(ev.Message, "stalled")
			}
			if !warned {
				t.Error("no warning event for the stall")
			}
			// Each stalled turn was aborted and closed: its running tool is a trailing part.
			if len(tr.Turns) != 2 || len(tr.Turns[0].TrailingParts) == 0 {
				t.Errorf("turns %d, first turn's trailing parts %d", len(tr.Turns), len(tr.Turns[0].TrailingParts))
			}
		})
	}
}

// ledger is a tool gateway's ledger for the loop (a fake: the real one is
// tested in sandbox/gateway/tool and end to end in cmd/traj).
type ledger struct {
	ended   map[string]time.Time
	claimed map[string]bool
	taken   map[string]int
}

func (l *ledger) Claim(id string) { l.claimed[id] = true }

func (l *ledger) Unclaimed(t time.Time) []trace.GatewayCall {
	var out []trace.GatewayCall
	for id, end := range l.ended {
		if !l.claimed[id] && l.taken[id] == 0 && end.Before(t) {
			l.taken[id]++
			out = append(out, trace.GatewayCall{ToolCallID: id, Tool: "run_tests", Arguments: json.RawMessage(`{}`), Text: "{}"})
		}
	}
	return out
}

// TestLoopGatewayCalls: the run_tests part the harness reports claims its
// gateway call (envoi_calls name its tool_call_id); a call no part
// carries rides on a later part, once, and never on the first part
// recorded after it completed.
func TestLoopGatewayCalls(t *testing.T) {
	h := newHarness(t)
	b, root := h.b, h.root
	l := &ledger{ended: map[string]time.Time{"tc_harness": time.Now().Add(-time.Hour), "tc_direct": time.Now().Add(-time.Hour)},
		claimed: map[string]bool{}, taken: map[string]int{}}
	h.gateway = l
	h.full = func(id string) ([]byte, bool) {
		if id != "tc_harness" {
			return nil, false
		}
		return []byte(`{"path":"basics/smoke","status_code":200,"error":null,"result":{"passed":1,"failed":0,"total":1}}`), true
	}
	var turn agenttest.Turn
	m, it := b.Message(root, "assistant")
	turn = append(turn, it, b.CallStart(root, m))
	turn = append(turn, b.Tool(root, m, "tests_run_tests", map[string]any{"test_path": "basics/smoke"}, `{"tool_call_id":"tc_harness"}`)...)
	turn = append(turn, b.Text(root, m, "one")...)
	turn = append(turn, b.Text(root, m, "two")...)
	turn = append(turn, b.CallFinish(root, m, 10, 1, 0))
	_, tr := h.run(context.Background(), agenttest.New(b, turn), 100)
	parts := allParts(tr)
	if len(parts) != 3 {
		t.Fatalf("%d parts, want 3", len(parts))
	}
	if c := parts[0].EnvoiCalls; len(c) != 1 || c[0].ToolCallID != "tc_harness" || !l.claimed["tc_harness"] {
		t.Fatalf("part 1 envoi_calls %+v: want the harness's call, claimed", c)
	}
	seen := map[string]int{}
	for _, p := range parts {
		for _, c := range p.GatewayCalls {
			seen[c.ToolCallID]++
			if p.Part == 1 {
				t.Errorf("part 1 carries gateway call %s: a call waits one whole part for its harness part", c.ToolCallID)
			}
		}
	}
	if seen["tc_direct"] != 1 || seen["tc_harness"] != 0 {
		t.Fatalf("gateway_calls over the parts %v, want tc_direct once and never the claimed call", seen)
	}
}

// TestLoopSideBySideToolsShareACheckpoint: a harness runs a response's
// tool calls side by side, so a write can land while another tool of the
// response completes. Whichever finishes first, the response's changes are
// in one checkpoint, at the last of its tool parts, and the others say
// theirs was deferred: a rerun's checkpoints equal its source's.
func TestLoopSideBySideToolsShareACheckpoint(t *testing.T) {
	for _, tc := range []struct {
		name string
		// writeFirst: the write completes before the todo list.
		writeFirst bool
		// late: the harness reports the write only after the todo list
		// completed, its file already written (a fast rerun; Codex); the
		// model gateway saw the response's two tool calls, and the loop
		// knows them by call id or, count, by number (Codex's parts do
		// not carry the model's call ids).
		late, count bool
	}{{"todo completes while the write runs", false, false, false}, {"write completes first", true, false, false},
		{"write reported after the todo completed", false, true, false},
		{"write reported after the todo completed, counted", false, true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			b, root := h.b, h.root
			m, it := b.Message(root, "assistant")
			turn := agenttest.Turn{it, b.CallStart(root, m)}
			turn = append(turn, b.Reasoning(root, m, "two tools at once")...)
			todo := b.Tool(root, m, "todowrite", map[string]any{"todos": []string{"lexer"}}, "1 todo")
			write := b.Tool(root, m, "write", map[string]any{"filePath": "main.c"}, "wrote")
			// The file is on disk as soon as the write runs.
			write[1].Before = h.write("main.c", "int main(void) { return 0; }\n")
			if tc.late {
				h.responseTools, h.countTools = &engine.ResponseTools{}, tc.count
				ids := []string{todo[2].Event.Part.Tool.CallID, write[2].Event.Part.Tool.CallID}
				if tc.count {
					ids = []string{"item_1", "item_2"}
				}
				h.responseTools.Announce(ids)
			}
			switch {
			case tc.late:
				todo[2].Before = h.write("main.c", "int main(void) { return 0; }\n")
				write[1].Before = nil
				turn = append(turn, todo[0], todo[1], todo[2], write[0], write[1], write[2])
			case tc.writeFirst:
				turn = append(turn, todo[0], write[0], todo[1], write[1])
				turn = append(turn, write[2], todo[2])
			default:
				turn = append(turn, todo[0], write[0], todo[1], write[1])
				turn = append(turn, todo[2], write[2])
			}
			turn = append(turn, b.CallFinish(root, m, 10, 2, 0.01))
			m2, it := b.Message(root, "assistant")
			turn = append(turn, it, b.CallStart(root, m2))
			turn = append(turn, b.Text(root, m2, "done")...)
			turn = append(turn, b.CallFinish(root, m2, 10, 2, 0.01))
			_, tr := h.run(context.Background(), agenttest.New(b, turn), 5)
			parts := allParts(tr)
			if len(parts) != 4 {
				t.Fatalf("%d parts, want 4", len(parts))
			}
			first, last := parts[1].RepoCheckpoint, parts[2].RepoCheckpoint
			if first.Committed || !first.Deferred {
				t.Errorf("part 2 (%s) checkpoint %+v, want deferred, no commit", parts[1].Tool, first)
			}
			if !last.Committed || last.Deferred || len(last.ChangedFiles) != 1 || last.ChangedFiles[0] != "main.c" {
				t.Errorf("part 3 (%s) checkpoint %+v, want the commit of main.c", parts[2].Tool, last)
			}
			if parts[3].RepoCheckpoint.Deferred {
				t.Errorf("part 4 (text) deferred")
			}
		})
	}
}

// TestLoopRedactsCopies: a secret the agent puts in a part's text and in a
// tool's name and output reaches neither the trace, its chunks nor the
// progress events, and the redactor works on the loop's copy: the agent's
// own objects keep their bytes.
func TestLoopRedactsCopies(t *testing.T) {
	const pw = "pw-0123456789abcdef"
	h := newHarness(t)
	h.redact = secret.NewRedactor([]string{pw})
	b, root := h.b, h.root
	m, it := b.Message(root, "assistant")
	turn := agenttest.Turn{it}
	turn = append(turn, b.Text(root, m, "the password is "+pw)...)
	turn = append(turn, b.Tool(root, m, "bash-"+pw, map[string]any{"command": "env"}, "OPENCODE_SERVER_PASSWORD="+pw)...)
	agent := agenttest.New(b, turn)
	_, tr := h.run(context.Background(), agent, 2)
	raw, err := os.ReadFile(h.tracePath)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(pw)) || bytes.Contains(h.pub.fixed.Bytes(), []byte(pw)) {
		t.Errorf("the secret reached the trace or its chunks:\n%s", raw)
	}
	if n := bytes.Count(raw, []byte(secret.Redacted)); n < 3 {
		t.Errorf("%d redactions in the trace, want the text, the tool name and its output", n)
	}
	for _, ev := range h.events {
		if strings.Contains(fmt.Sprintf("%+v", ev), pw) {
			t.Errorf("progress event %s carries the secret: %+v", ev.Type, ev)
		}
	}
	if parts := allParts(tr); len(parts) != 2 || parts[1].Tool != "bash-"+secret.Redacted {
		t.Fatalf("parts %+v, want the text and the tool, its name redacted", parts)
	}
	snap, err := agent.Snapshot(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	kept := 0
	for _, s := range snap {
		for _, msg := range s.Messages {
			for _, p := range msg.Parts {
				if bytes.Contains(p.Raw, []byte(pw)) {
					kept++
				}
			}
		}
	}
	if kept != 2 {
		t.Errorf("%d of the agent's 2 parts with the secret keep it: the redactor wrote the caller's objects", kept)
	}
}
