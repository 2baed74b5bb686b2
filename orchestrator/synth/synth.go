package synth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/trajlab/traj/environment/evaluation/registry"
	"github.com/trajlab/traj/orchestrator/folder"
	"github.com/trajlab/traj/sandbox/gateway/model"
	"github.com/trajlab/traj/sandbox/gateway/tool"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/gitstate"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/local"
)

// Options choose the trajectory Write makes.
type Options struct {
	// ID is the trajectory id (default "synth-<parts>-<seed>").
	ID string
	// Parts is the number of parts (at least 1).
	Parts int
	// Seed makes the trajectory: the same seed and parts give the same
	// bytes in every file.
	Seed uint64
	// Progress, when set, is called now and then with the parts written.
	Progress func(done, total int)
}

// Result says what Write made.
type Result struct {
	ID, Dir                      string
	Parts, Turns, Commits, Calls int
	FinalCommit                  string
}

// base is the synthetic clock's start; part n is recorded about 7 s
// after part n-1.
var base = time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)

// Write records a synthetic trajectory into the store folder storeDir
// (trajectories/<id>/): the trace through trace.Writer, a checkpoint after
// every tool part through gitstate on a real workspace (kept in a
// temporary folder beside it and removed), the history bundles and
// repo.bundle a run leaves, and both call records.
func Write(ctx context.Context, storeDir string, o Options) (Result, error) {
	if o.Parts < 1 {
		return Result{}, fmt.Errorf("synthesize: parts must be at least 1, not %d", o.Parts)
	}
	if o.ID == "" {
		o.ID = fmt.Sprintf("synth-%d-%d", o.Parts, o.Seed)
	}
	if err := store.ValidateID(o.ID); err != nil {
		return Result{}, fmt.Errorf("synthesize: %w", err)
	}
	dir := filepath.Join(storeDir, filepath.FromSlash(store.TrajectoryPrefix(o.ID)))
	if _, err := os.Stat(filepath.Join(dir, store.TraceName)); err == nil {
		return Result{}, fmt.Errorf("synthesize %s: %s already holds a trace", o.ID, dir)
	}
	if err := os.MkdirAll(filepath.Join(dir, filepath.FromSlash(store.HistoryDir)), 0o755); err != nil {
		return Result{}, fmt.Errorf("synthesize %s: %w", o.ID, err)
	}
	work, err := os.MkdirTemp(storeDir, ".synth-")
	if err != nil {
		return Result{}, fmt.Errorf("synthesize %s: %w", o.ID, err)
	}
	defer os.RemoveAll(work)
	g := &gen{o: o, storeDir: storeDir, dir: dir, ws: filepath.Join(work, "workspace"), rng: rand.New(rand.NewPCG(o.Seed, 0x5eed))}
	if err := g.run(ctx, filepath.Join(work, "checkpoints.git")); err != nil {
		return Result{}, fmt.Errorf("synthesize %s: %w", o.ID, err)
	}
	return Result{ID: o.ID, Dir: dir, Parts: o.Parts, Turns: g.turns, Commits: g.commits, Calls: g.calls, FinalCommit: g.head}, nil
}

// gen holds the state of one synthesis.
type gen struct {
	o                 Options
	storeDir, dir, ws string
	rng               *rand.Rand
	repo              *gitstate.Repo
	w                 *trace.Writer
	pub               *folder.HistoryPublisher
	models            *os.File
	tools             *os.File

	part, turns, commits, calls, msgs, tcalls int
	head                                      string
	changed                                   bool     // the last tool changed the workspace
	files                                     []string // workspace files, in creation order
	pendingGT                                 []trace.GroundTruth
	sessions                                  []string // session ids of the current turn, root first
	tokens                                    trace.Tokens
	cost                                      float64
}

const rootSession = "ses_synth_root"

// clock is the synthetic time of part n.
func clock(n int) time.Time { return base.Add(time.Duration(n) * 7 * time.Second) }

func (g *gen) run(ctx context.Context, gitDir string) (err error) {
	g.repo, err = gitstate.Init(ctx, gitDir, g.ws, gitstate.Options{Now: func() time.Time { return clock(g.part) }})
	if err != nil {
		return err
	}
	defer g.repo.Close()
	g.pub = folder.NewHistoryPublisher(g.o.ID, g.dir, g.repo, nil, "", nil)
	if g.models, err = os.Create(filepath.Join(g.dir, store.ModelCallsName)); err != nil {
		return err
	}
	defer g.models.Close()
	if g.tools, err = os.Create(filepath.Join(g.dir, store.ToolCallsName)); err != nil {
		return err
	}
	defer g.tools.Close()
	// The environment the trajectory claims: the registry's default.
	env, err := registry.Builtin().Lookup("")
	if err != nil {
		return err
	}
	h := trace.Header{
		TrajectoryID: g.o.ID, SessionID: rootSession, Agent: "opencode@1.18.33", AgentModel: "synthetic/model",
		StartedAt: trace.Timestamp(clock(0)), Task: "c-compiler",
		Environment: &trace.EnvironmentInfo{Name: env.Name, Version: "synthetic", TestPaths: []string{"basics", "wacct"}},
	}
	if g.w, err = trace.Create(filepath.Join(g.dir, store.TraceName), h, trace.WriterOptions{}); err != nil {
		return err
	}
	defer g.w.Close()
	// The workspace starts with a build script and a first source file,
	// as an agent's first turn would leave it.
	g.writeFile("build.sh", "#!/bin/sh\nset -e\ngcc -O1 -o cc src/*.c\n")
	g.writeFile("src/main.c", cSource(g.rng, "main", 40))
	for g.part < g.o.Parts {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := g.turn(ctx); err != nil {
			return err
		}
	}
	st, err := local.Open(g.storeDir)
	if err != nil {
		return err
	}
	end := &trace.SessionEnd{Reason: trace.EndPartLimit, EndedAt: trace.Timestamp(clock(g.part + 1)), Tokens: &g.tokens, Cost: &g.cost,
		Detail: "synthetic trajectory (traj trace synth)", GroundTruth: g.pendingGT}
	if _, err := folder.CloseTrace(ctx, g.w, g.repo, st, g.o.ID, g.dir, end, slog.New(slog.DiscardHandler)); err != nil {
		return err
	}
	if err := g.w.Close(); err != nil {
		return err
	}
	if err := g.models.Close(); err != nil {
		return err
	}
	if err := g.tools.Close(); err != nil {
		return err
	}
	return nil
}

// turn records one turn of 20 to 300 parts (fewer at the end).
func (g *gen) turn(ctx context.Context) error {
	g.turns++
	prompt := "Continue: make more of the test suites pass. Run run_tests to check your work."
	if g.turns == 1 {
		prompt = "Write a C compiler in C: build.sh must produce ./cc. Use run_tests to check your work."
	}
	g.sessions = []string{rootSession}
	if err := g.w.BeginTurn(trace.TurnStart{Timestamp: trace.Timestamp(clock(g.part)), Prompt: prompt, SessionID: rootSession}); err != nil {
		return err
	}
	left := min(20+g.rng.IntN(281), g.o.Parts-g.part)
	first := true
	for left > 0 {
		n, err := g.message(ctx, min(left, 1+g.rng.IntN(4)), first, prompt)
		if err != nil {
			return err
		}
		first = false
		left -= n
	}
	return g.w.EndTurn(trace.TurnEnd{EndedAt: trace.Timestamp(clock(g.part))})
}

// kinds of part a message holds.
type kind int

const (
	kReasoning kind = iota
	kText
	kTool
)

// message records one assistant message of up to n parts (reasoning,
// text, then tools) and its model call.
func (g *gen) message(ctx context.Context, n int, first bool, prompt string) (int, error) {
	g.msgs++
	msgID := fmt.Sprintf("msg_%08d", g.msgs)
	session := rootSession
	if len(g.sessions) > 1 && g.rng.IntN(3) == 0 {
		session = g.sessions[len(g.sessions)-1]
	}
	var kinds []kind
	if g.rng.IntN(2) == 0 {
		kinds = append(kinds, kReasoning)
	}
	if g.rng.IntN(3) == 0 {
		kinds = append(kinds, kText)
	}
	for len(kinds) < n {
		kinds = append(kinds, kTool)
	}
	kinds = kinds[:n]
	before := g.part
	tok := trace.Tokens{Input: int64(8000 + g.rng.IntN(60000)), Output: int64(50 + g.rng.IntN(2000)), Reasoning: int64(g.rng.IntN(500))}
	tok.CacheRead = tok.Input * int64(60+g.rng.IntN(35)) / 100
	cost := float64(tok.Input-tok.CacheRead)*3e-6 + float64(tok.CacheRead)*3e-7 + float64(tok.Output+tok.Reasoning)*15e-6
	var callIDs []string
	newMsg, _ := json.Marshal(map[string]any{"id": msgID, "role": "assistant", "sessionID": session, "modelID": "model", "providerID": "synthetic",
		"time": map[string]int64{"created": clock(g.part + 1).UnixMilli()}})
	for i, k := range kinds {
		g.part++
		p, callID, err := g.newPart(ctx, k, msgID, session)
		if err != nil {
			return 0, err
		}
		if callID != "" {
			callIDs = append(callIDs, callID)
		}
		if i == 0 {
			p.NewMessages = []json.RawMessage{newMsg}
		}
		if first && i == 0 {
			p.Prompt = prompt
		}
		if i == len(kinds)-1 {
			// OpenCode's step-finish carries the message's usage; the
			// recorder puts it beside the message's last part.
			finish, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("prt_%08d_f", g.part), "type": "step-finish", "messageID": msgID,
				"sessionID": session, "reason": "tool-calls", "cost": cost,
				"tokens": map[string]any{"input": tok.Input, "output": tok.Output, "reasoning": tok.Reasoning, "cache": map[string]int64{"read": tok.CacheRead, "write": 0}}})
			p.OtherParts = append(p.OtherParts, finish)
			t, c := tok, cost
			p.Tokens, p.Cost = &t, &c
		}
		if len(g.pendingGT) > 0 && g.rng.IntN(2) == 0 {
			p.GroundTruth, g.pendingGT = g.pendingGT, nil
		}
		if err := g.w.AppendPart(p); err != nil {
			return 0, err
		}
		if p.RepoCheckpoint.Committed {
			if err := g.pub.PartRecorded(ctx, p); err != nil {
				return 0, err
			}
		}
		if g.o.Progress != nil && (g.part%1000 == 0 || g.part == g.o.Parts) {
			g.o.Progress(g.part, g.o.Parts)
		}
	}
	g.tokens.Input += tok.Input
	g.tokens.Output += tok.Output
	g.tokens.Reasoning += tok.Reasoning
	g.tokens.CacheRead += tok.CacheRead
	g.cost += cost
	return len(kinds), g.modelCall(msgID, before, callIDs, tok, cost)
}

// modelCall appends the message's model call to model_calls.jsonl, as
// the model gateway records it.
func (g *gen) modelCall(msgID string, before int, callIDs []string, tok trace.Tokens, cost float64) error {
	g.calls++
	latency := float64(800 + g.rng.IntN(20000))
	fb := latency / 5
	reqBytes := 20000 + int(tok.Input)*3
	c := model.Call{
		Seq: g.calls, StartedAt: trace.Timestamp(clock(before).Add(time.Second)), LatencyMS: latency, FirstByteMS: &fb,
		API: "chat", Method: "POST", Path: "/v1/chat/completions", Status: 200, Model: "model", Stream: true,
		Request:    model.Digest{SHA256: fmt.Sprintf("%064x", g.rng.Uint64()), Bytes: reqBytes},
		ResponseID: msgID, ToolCallIDs: callIDs, Tokens: &tok, Cost: &cost, PartsBefore: &before,
		Response: "data: {\"id\":\"" + msgID + "\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"...\"}}]}\n\ndata: [DONE]\n\n",
	}
	return appendLine(g.models, c)
}

func appendLine(f *os.File, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	return err
}

// toolWeights is the tool mix of an agent writing a compiler: mostly
// shell, reads and edits, now and then a test run or a sub-agent.
var toolWeights = []struct {
	name   string
	weight int
}{{"bash", 34}, {"read", 20}, {"edit", 20}, {"write", 8}, {"grep", 8}, {"tests_run_tests", 8}, {"task", 2}}

func (g *gen) pickTool() string {
	total := 0
	for _, t := range toolWeights {
		total += t.weight
	}
	r := g.rng.IntN(total)
	for _, t := range toolWeights {
		if r < t.weight {
			return t.name
		}
		r -= t.weight
	}
	return "bash"
}

// newPart makes part g.part of kind k and, for a tool, its effect on the
// workspace and its checkpoint. It returns the tool call id ("" for none).
func (g *gen) newPart(ctx context.Context, k kind, msgID, session string) (*trace.Part, string, error) {
	n := g.part
	partID := fmt.Sprintf("prt_%08d", n)
	start, end := clock(n).Add(-3*time.Second).UnixMilli(), clock(n).UnixMilli()
	p := &trace.Part{
		Part: n, Timestamp: trace.Timestamp(clock(n)), MessageID: msgID,
		Sessions: []json.RawMessage{}, SessionIDs: append([]string(nil), g.sessions...), NewMessages: []json.RawMessage{},
		EnvoiCalls: []trace.EnvoiCall{}, SessionID: session, PartID: partID,
	}
	var content map[string]any
	callID := ""
	switch k {
	case kReasoning, kText:
		typ := "text"
		if k == kReasoning {
			typ = "reasoning"
		}
		content = map[string]any{"id": partID, "type": typ, "messageID": msgID, "sessionID": session,
			"text": prose(g.rng, 1+g.rng.IntN(6)), "time": map[string]int64{"start": start, "end": end}}
		p.PartType = typ
	case kTool:
		g.tcalls++
		callID = fmt.Sprintf("call_%08d", g.tcalls)
		name := g.pickTool()
		input, output, title, err := g.toolEffect(name, callID, session, p)
		if err != nil {
			return nil, "", err
		}
		content = map[string]any{"id": partID, "type": "tool", "tool": name, "callID": callID, "messageID": msgID, "sessionID": session,
			"state": map[string]any{"status": "completed", "input": input, "output": output, "title": title,
				"metadata": map[string]any{"truncated": false}, "time": map[string]int64{"start": start, "end": end}}}
		p.PartType, p.Tool = "tool", name
	}
	raw, err := json.Marshal(content)
	if err != nil {
		return nil, "", err
	}
	p.Content = raw
	rc := trace.RepoCheckpoint{CommitBefore: g.head, CommitAfter: g.head, ChangedFiles: []string{}}
	if g.head == "" || g.changed {
		// The recorder checkpoints after every part that may change files;
		// here only those that did are scanned (the others would find
		// nothing, and the scan is most of the time a part takes).
		g.changed = false
		if rc, err = g.repo.Checkpoint(ctx, n); err != nil {
			return nil, "", err
		}
		g.head = rc.CommitAfter
		if rc.Committed {
			g.commits++
			if g.commits%5 == 0 {
				if err := g.groundTruth(n, rc.CommitAfter); err != nil {
					return nil, "", err
				}
			}
		}
	}
	p.RepoCheckpoint, p.GitCommit = &rc, rc.CommitAfter
	return p, callID, nil
}

// groundTruth queues the ground truth of the checkpoint of part n: a
// score that rises along the run, as an agent's compiler gets better.
func (g *gen) groundTruth(n int, commit string) error {
	tree, err := g.repo.CommitTree(commit)
	if err != nil {
		return err
	}
	progress := float64(n) / float64(g.o.Parts)
	suite := func(path string, total int64, lag float64) trace.SuiteCount {
		passed := int64(float64(total) * min(1, max(0, progress-lag+float64(g.rng.IntN(10))/100)))
		return trace.SuiteCount{Path: path, Passed: passed, Failed: total - passed, Total: total, BuildOK: true}
	}
	gt := trace.GroundTruth{Part: n, Commit: commit, Tree: tree, Timestamp: trace.Timestamp(clock(n).Add(20 * time.Second)),
		DurationMs: int64(5000 + g.rng.IntN(30000)), Suites: []trace.SuiteCount{suite("basics", 68, 0), suite("wacct", 692, 0.2)}}
	for _, s := range gt.Suites {
		gt.Passed, gt.Failed, gt.Total = gt.Passed+s.Passed, gt.Failed+s.Failed, gt.Total+s.Total
	}
	gt.Solved = gt.Failed == 0
	g.pendingGT = append(g.pendingGT, gt)
	return nil
}

// toolEffect performs tool name on the workspace and returns its input,
// output and title; a run_tests call also goes into p's envoi_calls and
// tool_calls.jsonl.
func (g *gen) toolEffect(name, callID, session string, p *trace.Part) (input map[string]any, output, title string, err error) {
	file := g.files[g.rng.IntN(len(g.files))]
	switch name {
	case "bash":
		cmd := []string{"./build.sh && ./cc tests/t1.c && ./a.out; echo $?", "gcc -fsyntax-only src/*.c", "ls -la src", "git diff --stat"}[g.rng.IntN(4)]
		return map[string]any{"command": cmd, "description": "Run " + cmd}, logLines(g.rng, 3+g.rng.IntN(40)), cmd, nil
	case "read":
		b, _ := os.ReadFile(filepath.Join(g.ws, file))
		return map[string]any{"filePath": "/workspace/" + file}, "<file>\n" + string(b) + "</file>", file, nil
	case "grep":
		return map[string]any{"pattern": "parse_", "path": "/workspace/src"}, logLines(g.rng, 2+g.rng.IntN(12)), "parse_", nil
	case "write":
		// A new file grows the tree: sources mostly, a header or a test
		// now and then.
		folder := []string{"src", "src", "src", "include", "tests"}[g.rng.IntN(5)]
		ext := map[string]string{"src": ".c", "include": ".h", "tests": ".c"}[folder]
		file = fmt.Sprintf("%s/%s_%d%s", folder, words[g.rng.IntN(len(words))], len(g.files), ext)
		text := cSource(g.rng, strings.TrimSuffix(filepath.Base(file), ext), 20+g.rng.IntN(200))
		g.writeFile(file, text)
		return map[string]any{"filePath": "/workspace/" + file, "content": text}, "Wrote file successfully.", file, nil
	case "edit":
		b, err := os.ReadFile(filepath.Join(g.ws, file))
		if err != nil {
			return nil, "", "", err
		}
		lines := strings.SplitAfter(string(b), "\n")
		at := g.rng.IntN(len(lines))
		old := lines[at]
		repl := cSource(g.rng, fmt.Sprintf("fix_%d", g.part), 1+g.rng.IntN(12))
		lines[at] = repl
		g.writeFile(file, strings.Join(lines, ""))
		return map[string]any{"filePath": "/workspace/" + file, "oldString": old, "newString": repl}, "Edit applied successfully.", file, nil
	case "task":
		sub := fmt.Sprintf("ses_synth_sub_%d", g.part)
		g.sessions = append(g.sessions, sub)
		s, _ := json.Marshal(map[string]any{"id": sub, "parentID": session, "title": "Review the parser (@general subagent)", "agent": "general",
			"time": map[string]int64{"created": clock(g.part).UnixMilli()}})
		p.Sessions = []json.RawMessage{s}
		p.SessionIDs = append([]string(nil), g.sessions...)
		return map[string]any{"description": "Review the parser", "prompt": "Read src/ and list parser bugs.", "subagent_type": "general"},
			"<task id=\"" + sub + "\" state=\"completed\">\n<task_result>\n" + prose(g.rng, 3) + "\n</task_result>\n</task>", "Review the parser", nil
	default: // tests_run_tests
		path := []string{"basics", "wacct/chapter_1", "wacct/chapter_2", "basics/smoke"}[g.rng.IntN(4)]
		total := 8 + g.rng.IntN(60)
		passed := int(float64(total) * min(1, float64(g.part)/float64(g.o.Parts)+float64(g.rng.IntN(20))/100))
		res, _ := json.Marshal(map[string]any{"path": path, "passed": passed, "failed": total - passed, "total": total,
			"build": map[string]any{"ok": true, "phase": "build", "exit_code": 0, "duration_ms": 300}})
		at := clock(g.part).Add(-2 * time.Second)
		ec := trace.EnvoiCall{Path: path, Timestamp: trace.Timestamp(at), DurationMs: int64(1000 + g.rng.IntN(9000)), StatusCode: 200, Result: res}
		p.EnvoiCalls = []trace.EnvoiCall{ec}
		out, _ := json.Marshal(ec)
		args, _ := json.Marshal(map[string]string{"test_path": path})
		if err := appendLine(g.tools, tool.Call{ToolCallID: callID, Tool: "run_tests", Arguments: args, Start: at, DurationMS: ec.DurationMs,
			Result: tool.Result{Text: string(out)}}); err != nil {
			return nil, "", "", err
		}
		return map[string]any{"test_path": path}, string(out), "", nil
	}
}

// writeFile writes a workspace file, remembering a new one.
func (g *gen) writeFile(rel, text string) {
	path := filepath.Join(g.ws, filepath.FromSlash(rel))
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		g.files = append(g.files, rel)
	}
	_ = os.MkdirAll(filepath.Dir(path), 0o755)
	_ = os.WriteFile(path, []byte(text), 0o644)
	g.changed = true
}

var words = []string{"lexer", "parser", "ast", "codegen", "emit", "types", "symtab", "expr", "stmt", "decl", "regalloc", "peephole", "preproc", "error"}

// cSource returns n lines of plausible C for a function family name.
func cSource(rng *rand.Rand, name string, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		switch rng.IntN(6) {
		case 0:
			fmt.Fprintf(&b, "static int %s_%s_%d(struct node *n) {\n", name, words[rng.IntN(len(words))], i)
		case 1:
			fmt.Fprintf(&b, "\tif (n->kind == TOK_%s) return emit(%d);\n", strings.ToUpper(words[rng.IntN(len(words))]), rng.IntN(256))
		case 2:
			fmt.Fprintf(&b, "\tn = n->next; /* %s */\n", words[rng.IntN(len(words))])
		case 3:
			b.WriteString("}\n")
		case 4:
			fmt.Fprintf(&b, "\tint r%d = %s(n->lhs) + %d;\n", i, words[rng.IntN(len(words))], rng.IntN(100))
		default:
			b.WriteString("\n")
		}
	}
	return b.String()
}

// prose returns n sentences an agent might write.
func prose(rng *rand.Rand, n int) string {
	s := []string{"The parser rejects nested declarations.", "I will fix the precedence of the shift operators.",
		"Tests in wacct/chapter_2 fail on unary minus.", "Let me read the code generator first.",
		"The register allocator spills too early.", "Running the tests again to check the fix.",
		"The lexer must accept hexadecimal literals.", "That change broke two basics cases; reverting part of it."}
	parts := make([]string, n)
	for i := range parts {
		parts[i] = s[rng.IntN(len(s))]
	}
	return strings.Join(parts, " ")
}

// logLines returns n lines of build or test output.
func logLines(rng *rand.Rand, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if rng.IntN(4) == 0 {
			fmt.Fprintf(&b, "src/%s.c:%d:%d: warning: unused variable 'r%d'\n", words[rng.IntN(len(words))], rng.IntN(900), rng.IntN(60), i)
		} else {
			fmt.Fprintf(&b, "test tests/%s_%d.c ... ok\n", words[rng.IntN(len(words))], rng.IntN(500))
		}
	}
	return b.String()
}
