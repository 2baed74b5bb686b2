// Package tracetest builds synthetic traces for tests: parts of a chosen
// size, turns of chosen lengths, git commits and run_tests calls, written
// with the real trace.Writer or built in memory. It also ships a trace in
// the original recorder's shape (no traj additions).
package tracetest

import (
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trajlab/traj/trace"
)

//go:embed testdata/original.json
var original []byte

// OriginalTrace returns a finished trace in the original recorder's shape:
// field names of the contract, no schema_version and no traj additions.
// It has 2 turns and 5 parts, run_tests calls on "basics" and
// "wacct/chapter_1", and ends with reason part_limit.
func OriginalTrace() []byte { return append([]byte(nil), original...) }

// base is the time synthetic traces start at.
var base = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// Time returns the synthetic timestamp of part n.
func Time(n int) string { return trace.Timestamp(base.Add(time.Duration(n) * time.Second)) }

// Commit returns a deterministic 40-hex commit id for key.
func Commit(key int) string {
	h := sha1.Sum([]byte(fmt.Sprintf("commit-%d", key)))
	return hex.EncodeToString(h[:])
}

// Header returns a header for trajectory id.
func Header(id string) trace.Header {
	return trace.Header{
		TrajectoryID: id,
		SessionID:    "ses_root",
		Agent:        "opencode",
		AgentModel:   "scripted/test-model",
		StartedAt:    Time(0),
		Task:         "c-compiler",
		Environment:  &trace.EnvironmentInfo{Name: "c-compiler", Version: "test"},
	}
}

// RunTests returns a run_tests call on path with the given counts, in the
// shape the run_tests tool returns: the one place tests spell it.
func RunTests(path string, passed, failed int) trace.EnvoiCall {
	res, _ := json.Marshal(map[string]any{"path": path, "passed": passed, "failed": failed, "total": passed + failed})
	return trace.EnvoiCall{Path: path, Timestamp: Time(0), DurationMs: 1200, StatusCode: 200, Result: res}
}

// GroundTruth returns a ground-truth result for part's checkpoint: one
// suite per path with passed of total cases; solved when all pass.
func GroundTruth(part int, suites ...trace.SuiteCount) trace.GroundTruth {
	g := trace.GroundTruth{Part: part, Commit: Commit(part), Timestamp: Time(part), DurationMs: 900, Suites: suites, Solved: len(suites) > 0}
	for _, s := range suites {
		g.Passed, g.Failed, g.Total = g.Passed+s.Passed, g.Failed+s.Failed, g.Total+s.Total
		g.Solved = g.Solved && s.Passed == s.Total
	}
	return g
}

// Suite is one path's counts in a ground-truth result.
func Suite(path string, passed, total int64) trace.SuiteCount {
	return trace.SuiteCount{Path: path, Passed: passed, Failed: total - passed, Total: total, BuildOK: true}
}

// Part returns a small text part n with the given commit.
func Part(n int, commit string) *trace.Part {
	content, _ := json.Marshal(map[string]any{
		"id": fmt.Sprintf("prt_%04d", n), "type": "text", "messageID": fmt.Sprintf("msg_%04d", n),
		"sessionID": "ses_root", "text": fmt.Sprintf("Part %d: working on the lexer.", n),
	})
	return &trace.Part{
		Part: n, Timestamp: Time(n), MessageID: fmt.Sprintf("msg_%04d", n),
		Sessions: []json.RawMessage{}, SessionIDs: []string{"ses_root"}, NewMessages: []json.RawMessage{},
		EnvoiCalls: []trace.EnvoiCall{},
		RepoCheckpoint: &trace.RepoCheckpoint{
			CommitBefore: commit, CommitAfter: commit, ChangedFiles: []string{},
		},
		GitCommit: commit, SessionID: "ses_root", PartID: fmt.Sprintf("prt_%04d", n),
		PartType: "text", Content: content,
	}
}

// RealisticPart returns part n of about size bytes as encoded JSON: a tool
// part (bash with output) whose other_parts hold the reasoning text before
// it, with a checkpoint, tokens and cost. size <= 0 means about 4 KB.
func RealisticPart(n int, commit string, size int) *trace.Part {
	if size <= 0 {
		size = 4096
	}
	p := Part(n, commit)
	// The fixed fields take about 1 KB; split the rest between the text
	// and the tool output.
	rest := max(size-1100, 64)
	text := filler("I will run the test suite again and fix the failing cases. ", rest/3)
	output := filler("test c-testsuite/00012.c ... ok\n", rest-rest/3)
	textPart, _ := json.Marshal(map[string]any{
		"id": fmt.Sprintf("prt_%04da", n), "type": "text", "messageID": p.MessageID,
		"sessionID": "ses_root", "text": text,
		"time": map[string]int64{"start": int64(n) * 1000, "end": int64(n)*1000 + 400},
	})
	tool, _ := json.Marshal(map[string]any{
		"id": p.PartID, "type": "tool", "messageID": p.MessageID, "sessionID": "ses_root",
		"callID": fmt.Sprintf("call_%04d", n), "tool": "bash",
		"state": map[string]any{
			"status": "completed",
			"input":  map[string]string{"command": "cargo test --release 2>&1 | tail -n 40"},
			"output": output, "title": "cargo test",
			"time": map[string]int64{"start": int64(n) * 1000, "end": int64(n)*1000 + 900},
		},
	})
	p.PartType, p.Tool, p.Content = "tool", "bash", tool
	p.OtherParts = []json.RawMessage{textPart}
	prev := Commit(n - 1)
	p.RepoCheckpoint = &trace.RepoCheckpoint{CommitBefore: prev, CommitAfter: commit, Committed: prev != commit, ChangedFiles: []string{"src/lexer.rs"}}
	p.Tokens = &trace.Tokens{Input: 12000, Output: 350, Reasoning: 120, CacheRead: 11000}
	cost := 0.0042
	p.Cost = &cost
	return p
}

func filler(s string, n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat(s, n/len(s)+1)[:n]
}

// Spec describes a synthetic trace.
type Spec struct {
	TrajectoryID string // default "traj-test"
	// Turns lists the number of parts in each turn; default one turn of 3.
	Turns []int
	// Commit gives part n's git_commit; default Commit(n).
	Commit func(n int) string
	// EnvoiCalls adds run_tests calls to part n.
	EnvoiCalls map[int][]trace.EnvoiCall
	// GroundTruth adds ground-truth results to part n; EndGroundTruth to
	// session_end.
	GroundTruth    map[int][]trace.GroundTruth
	EndGroundTruth []trace.GroundTruth
	// PartSize > 0 makes RealisticPart parts of about that many bytes.
	PartSize int
	// End is the session_end reason; "" leaves the trace unfinished (the
	// last turn open).
	End string
	// Artifacts is written with session_end.
	Artifacts map[string]string
	// Edit, when set, changes part n after it is built (its text, time,
	// kind): what a test needs that the fields above do not say.
	Edit func(p *trace.Part)
	// EndDetail is written with session_end.
	EndDetail string
}

func (s Spec) part(n int) *trace.Part {
	commit := Commit(n)
	if s.Commit != nil {
		commit = s.Commit(n)
	}
	var p *trace.Part
	if s.PartSize > 0 {
		p = RealisticPart(n, commit, s.PartSize)
	} else {
		p = Part(n, commit)
	}
	if calls := s.EnvoiCalls[n]; calls != nil {
		p.EnvoiCalls = calls
	}
	p.GroundTruth = s.GroundTruth[n]
	if s.Edit != nil {
		s.Edit(p)
	}
	return p
}

// Write records the trace described by s at path with the real writer
// and returns the path.
func Write(tb testing.TB, path string, s Spec) string {
	tb.Helper()
	if err := write(path, s); err != nil {
		tb.Fatal(err)
	}
	return path
}

// WriteDir records the trace into dir/agent_trace.json and returns that path.
func WriteDir(tb testing.TB, dir string, s Spec) string {
	tb.Helper()
	return Write(tb, filepath.Join(dir, "agent_trace.json"), s)
}

func write(path string, s Spec) error {
	if s.TrajectoryID == "" {
		s.TrajectoryID = "traj-test"
	}
	if s.Turns == nil {
		s.Turns = []int{3}
	}
	w, err := trace.Create(path, Header(s.TrajectoryID), trace.WriterOptions{})
	if err != nil {
		return err
	}
	defer w.Close()
	n := 0
	for i, count := range s.Turns {
		if err := w.BeginTurn(trace.TurnStart{Timestamp: Time(n), Prompt: fmt.Sprintf("prompt %d", i+1), SessionID: "ses_root"}); err != nil {
			return err
		}
		for range count {
			n++
			if err := w.AppendPart(s.part(n)); err != nil {
				return err
			}
		}
		if i < len(s.Turns)-1 || s.End != "" {
			if err := w.EndTurn(trace.TurnEnd{EndedAt: Time(n)}); err != nil {
				return err
			}
		}
	}
	if s.End != "" {
		if err := w.Finish(trace.SessionEnd{Reason: s.End, EndedAt: Time(n + 1), Detail: s.EndDetail, GroundTruth: s.EndGroundTruth}, s.Artifacts); err != nil {
			return err
		}
	}
	return w.Close()
}

// Build returns the trace described by s in memory, the same document
// Write records.
func Build(s Spec) *trace.Trace {
	if s.TrajectoryID == "" {
		s.TrajectoryID = "traj-test"
	}
	if s.Turns == nil {
		s.Turns = []int{3}
	}
	h := Header(s.TrajectoryID)
	t := &trace.Trace{
		SchemaVersion: trace.SchemaVersion, TrajectoryID: h.TrajectoryID, SessionID: h.SessionID,
		Agent: h.Agent, AgentModel: h.AgentModel, StartedAt: h.StartedAt, Task: h.Task,
		Environment: h.Environment, Turns: []trace.Turn{}, Artifacts: map[string]string{},
	}
	n, final := 0, ""
	for i, count := range s.Turns {
		turn := trace.Turn{Turn: i + 1, Timestamp: Time(n), Prompt: fmt.Sprintf("prompt %d", i+1), SessionID: "ses_root", Parts: []trace.Part{}}
		for range count {
			n++
			turn.Parts = append(turn.Parts, *s.part(n))
			final = turn.Parts[len(turn.Parts)-1].GitCommit
		}
		if count > 0 {
			start, end := n-count+1, n
			turn.PartStart, turn.PartEnd = &start, &end
		}
		if i < len(s.Turns)-1 || s.End != "" {
			turn.EndedAt = Time(n)
		}
		t.Turns = append(t.Turns, turn)
	}
	if s.End != "" {
		t.SessionEnd = &trace.SessionEnd{Reason: s.End, TotalParts: n, TotalTurns: len(s.Turns), FinalGitCommit: final, EndedAt: Time(n + 1), Detail: s.EndDetail, GroundTruth: s.EndGroundTruth}
		if s.Artifacts != nil {
			t.Artifacts = s.Artifacts
		}
	}
	return t
}

// ObjectIDs counts the "id" of every harness object a trace holds
// (content, other parts, new messages, sessions, trailing parts): each
// object the harness returned must appear exactly once. An object that is
// not JSON with a string id counts under "".
func ObjectIDs(tr *trace.Trace) map[string]int {
	seen := map[string]int{}
	add := func(raws ...json.RawMessage) {
		for _, r := range raws {
			var obj struct {
				ID string `json:"id"`
			}
			_ = json.Unmarshal(r, &obj)
			seen[obj.ID]++
		}
	}
	for _, turn := range tr.Turns {
		for _, p := range turn.Parts {
			add(p.Content)
			add(p.OtherParts...)
			add(p.NewMessages...)
			add(p.Sessions...)
		}
		add(turn.TrailingParts...)
	}
	return seen
}
