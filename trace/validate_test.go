package trace_test

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/tracetest"
)

// edit decodes doc, lets fn change it, and encodes it again.
func edit(t *testing.T, doc []byte, fn func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	fn(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func turnAt(m map[string]any, i int) map[string]any {
	return m["turns"].([]any)[i].(map[string]any)
}

func partAt(m map[string]any, ti, pi int) map[string]any {
	return turnAt(m, ti)["parts"].([]any)[pi].(map[string]any)
}

// sampledGroundTruth is a ground truth of a sample of 5 basics cases, all
// passing.
func sampledGroundTruth(solved bool) map[string]any {
	return map[string]any{"part": 2, "commit": strings.Repeat("a", 40), "tree": strings.Repeat("b", 40),
		"suites": []any{map[string]any{"path": "basics", "passed": 5, "failed": 0, "total": 5, "build_ok": true, "sample_size": 5}},
		"passed": 5, "failed": 0, "total": 5, "solved": solved, "sampled": true, "sample_seed": 1}
}

func TestValidate(t *testing.T) {
	orig := tracetest.OriginalTrace()
	dir := t.TempDir()
	written, err := os.ReadFile(tracetest.WriteDir(t, dir, tracetest.Spec{Turns: []int{2, 0, 3}, End: trace.EndSolved, PartSize: 3000}))
	if err != nil {
		t.Fatal(err)
	}
	running, err := os.ReadFile(tracetest.WriteDir(t, t.TempDir(), tracetest.Spec{Turns: []int{2, 1}}))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		doc      []byte
		path     string // first problem's path; "" = valid
		contains string // in the first problem's message
		offset   int64  // first problem's byte offset (syntax errors), 0 = do not check
	}{
		{name: "original shape", doc: orig},
		{name: "written by traj", doc: written},
		{name: "running trace", doc: running},
		{name: "truncated", doc: orig[:1500], path: "$.turns[0].parts[1]", contains: "truncated JSON", offset: 1500},
		{name: "empty", doc: nil, path: "$", contains: "truncated JSON"},
		{name: "syntax error", doc: bytes.Replace(orig, []byte(`"part": 4,`), []byte(`"part": 4,,`), 1), path: "$.turns[1].parts[0]", contains: "invalid character", offset: int64(bytes.Index(orig, []byte(`"part": 4,`)) + 10)},
		{name: "trailing garbage", doc: append(bytes.Clone(orig), "}"...), path: "$", contains: "after the trace object"},
		{name: "gap in part indices", doc: edit(t, orig, func(m map[string]any) {
			partAt(m, 1, 0)["part"] = 5
			partAt(m, 1, 1)["part"] = 6
			turnAt(m, 1)["part_start"] = 5
			turnAt(m, 1)["part_end"] = 6
		}), path: "$.turns[1].parts[0].part", contains: "parts 4..4 are missing"},
		{name: "repeated part index", doc: edit(t, orig, func(m map[string]any) {
			partAt(m, 0, 2)["part"] = 2
		}), path: "$.turns[0].parts[2].part", contains: "part 2 follows part 2"},
		{name: "turn range disagrees with its parts", doc: edit(t, orig, func(m map[string]any) {
			turnAt(m, 1)["part_end"] = 7
		}), path: "$.turns[1].part_end", contains: "turn 2 has parts 4..5 but part_end is 7, want 5"},
		{name: "empty turn with a range", doc: edit(t, orig, func(m map[string]any) {
			turnAt(m, 1)["parts"] = []any{}
			m["session_end"].(map[string]any)["total_parts"] = 3
		}), path: "$.turns[1].part_start", contains: "has no parts, so part_start must be null"},
		{name: "part without git_commit", doc: edit(t, orig, func(m map[string]any) {
			delete(partAt(m, 0, 1), "git_commit")
		}), path: "$.turns[0].parts[1]", contains: "git_commit"},
		{name: "empty git_commit", doc: edit(t, orig, func(m map[string]any) {
			partAt(m, 0, 1)["git_commit"] = ""
		}), path: "$.turns[0].parts[1].git_commit", contains: "empty git_commit"},
		{name: "wrong type", doc: edit(t, orig, func(m map[string]any) {
			partAt(m, 1, 1)["part"] = "five"
		}), path: "$.turns[1].parts[1].part", contains: "schema"},
		{name: "session_end totals", doc: edit(t, orig, func(m map[string]any) {
			m["session_end"].(map[string]any)["total_parts"] = 9
		}), path: "$.session_end.total_parts", contains: "total_parts is 9 but the trace has 5 parts"},
		{name: "gateway totals that parts and unattributed add up to", doc: edit(t, orig, func(m map[string]any) {
			partAt(m, 0, 0)["tokens"] = map[string]any{"input": 100, "output": 2}
			partAt(m, 1, 0)["tokens"] = map[string]any{"input": 50, "output": 1}
			m["session_end"].(map[string]any)["tokens"] = map[string]any{"input": 170, "output": 3}
			m["session_end"].(map[string]any)["unattributed"] = map[string]any{"tokens": map[string]any{"input": 20}, "cost": 0, "calls": []any{}}
		})},
		{name: "gateway totals the parts do not add up to", doc: edit(t, orig, func(m map[string]any) {
			partAt(m, 0, 0)["tokens"] = map[string]any{"input": 100, "output": 2}
			m["session_end"].(map[string]any)["tokens"] = map[string]any{"input": 170, "output": 3}
			m["session_end"].(map[string]any)["unattributed"] = map[string]any{"tokens": map[string]any{"input": 20}, "cost": 0, "calls": []any{}}
		}), path: "$.session_end.unattributed", contains: "plus unattributed"},
		{name: "missing trajectory_id", doc: edit(t, orig, func(m map[string]any) {
			delete(m, "trajectory_id")
		}), path: "$", contains: "trajectory_id"},
		// Ids and hashes are checked by format (issue 11 item 6).
		{name: "trajectory_id escaping its folder", doc: edit(t, orig, func(m map[string]any) {
			m["trajectory_id"] = "../../etc"
		}), path: "$.trajectory_id", contains: `character '/' not allowed`},
		{name: "trajectory_id ..", doc: edit(t, orig, func(m map[string]any) {
			m["trajectory_id"] = ".."
		}), path: "$.trajectory_id", contains: "not allowed"},
		{name: "git_commit not a hash", doc: edit(t, orig, func(m map[string]any) {
			partAt(m, 0, 1)["git_commit"] = "not-a-hash/../../x"
		}), path: "$.turns[0].parts[1].git_commit", contains: "not a commit hash"},
		{name: "abbreviated commit_after", doc: edit(t, orig, func(m map[string]any) {
			partAt(m, 0, 1)["repo_checkpoint"].(map[string]any)["commit_after"] = "1a2b3c4"
		}), path: "$.turns[0].parts[1].repo_checkpoint.commit_after", contains: "not a commit hash"},
		{name: "final_git_commit not a hash", doc: edit(t, orig, func(m map[string]any) {
			m["session_end"].(map[string]any)["final_git_commit"] = "HEAD"
		}), path: "$.session_end.final_git_commit", contains: "not a commit hash"},
		{name: "duplicate top-level key", doc: bytes.Replace(orig, []byte(`{`), []byte(`{"trajectory_id": "other",`), 1),
			path: "$.trajectory_id", contains: "duplicate key"},
		{name: "duplicate key in a part", doc: bytes.Replace(orig, []byte(`"part": 4,`), []byte(`"part": 4, "part": 9,`), 1),
			path: "$.turns[1].parts[0].part", contains: "duplicate key"},
		{name: "duplicate key deep in a part", doc: bytes.Replace(orig, []byte(`"commit_before":`), []byte(`"changed_files": [], "commit_before":`), 1),
			path: "$.turns[0].parts[0].repo_checkpoint.changed_files", contains: "duplicate key"},
		{name: "duplicate turns", doc: bytes.Replace(orig, []byte(`"session_end"`), []byte(`"turns": [], "session_end"`), 1),
			path: "$.turns", contains: "duplicate key"},
		// A sampled ground truth is never solved (issue 25 item 2).
		{name: "sampled ground truth", doc: edit(t, orig, func(m map[string]any) {
			partAt(m, 0, 1)["ground_truth"] = []any{sampledGroundTruth(false)}
		})},
		{name: "sampled ground truth solved", doc: edit(t, orig, func(m map[string]any) {
			partAt(m, 0, 1)["ground_truth"] = []any{sampledGroundTruth(true)}
		}), path: "$.turns[0].parts[1].ground_truth[0].solved", contains: "schema"},
		{name: "invalid UTF-8", doc: bytes.Replace(orig, []byte(`"agent": "opencode"`), []byte("\"agent\": \"open\xffcode\""), 1),
			path: "$", contains: "invalid UTF-8", offset: int64(bytes.Index(orig, []byte(`"agent": "opencode"`)) + len(`"agent": "open`))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			probs := trace.Validate(bytes.NewReader(tt.doc))
			if tt.path == "" {
				if len(probs) > 0 {
					t.Fatalf("valid trace rejected: %v", probs)
				}
				return
			}
			if len(probs) == 0 {
				t.Fatal("invalid trace accepted")
			}
			p := probs[0]
			if p.Path != tt.path || !strings.Contains(p.Message, tt.contains) {
				t.Fatalf("first problem = %s\nwant path %s and message containing %q\nall: %v", p, tt.path, tt.contains, probs)
			}
			if tt.offset != 0 && p.Offset != tt.offset {
				t.Fatalf("offset %d, want %d (%s)", p.Offset, tt.offset, p)
			}
			if strings.Contains(tt.contains, "JSON") && !strings.Contains(p.String(), "byte offset") {
				t.Fatalf("syntax problem without a byte offset: %s", p)
			}
		})
	}
}

// TestWrittenTracesMatchTheWholeSchema validates written traces against the
// whole-document schema in one piece, not only the streaming validator.
func TestWrittenTracesMatchTheWholeSchema(t *testing.T) {
	s, err := trace.CompileSchemas()
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range []tracetest.Spec{
		{Turns: []int{0}},
		{Turns: []int{3, 0, 2}, PartSize: 4096},
		{Turns: []int{1, 2}, End: trace.EndAgentError, Artifacts: map[string]string{trace.ArtifactTrace: "s3://b/t"}},
	} {
		path := tracetest.WriteDir(t, t.TempDir(), spec)
		f, _ := os.Open(path)
		inst, err := jsonschemaUnmarshal(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Trace.Validate(inst); err != nil {
			t.Fatalf("%+v: %v", spec.Turns, err)
		}
	}
	inst, _ := jsonschemaUnmarshal(bytes.NewReader(tracetest.OriginalTrace()))
	if err := s.Trace.Validate(inst); err != nil {
		t.Fatalf("original: %v", err)
	}
	// The schema is strict enough to reject a broken part.
	bad := edit(t, tracetest.OriginalTrace(), func(m map[string]any) { partAt(m, 0, 0)["part"] = 0 })
	inst, _ = jsonschemaUnmarshal(bytes.NewReader(bad))
	if err := s.Trace.Validate(inst); err == nil {
		t.Fatal("part 0 accepted by the schema")
	}
}

func TestReadOriginalTrace(t *testing.T) {
	tr, err := trace.Read(bytes.NewReader(tracetest.OriginalTrace()))
	if err != nil {
		t.Fatal(err)
	}
	if tr.SchemaVersion != "" || tr.TrajectoryID != "a3f1c2d4-0b5e-4c7a-9e21-5d6f7a8b9c01" || len(tr.Turns) != 2 ||
		len(tr.Turns[1].Parts) != 2 || tr.Turns[1].Parts[1].EnvoiCalls[1].Path != "wacct/chapter_1" ||
		tr.SessionEnd.Reason != trace.EndPartLimit || tr.Artifacts[trace.ArtifactBundle] == "" {
		t.Fatalf("read: %+v", tr)
	}
	var turns, parts int
	var header *trace.Header
	err = trace.Scan(bytes.NewReader(tracetest.OriginalTrace()), trace.Visitor{
		OnHeader: func(h *trace.Header) error { header = h; return nil },
		OnPart:   func(turn int, p *trace.Part) error { parts++; return nil },
		OnTurn:   func(i int, t *trace.Turn) error { turns++; return nil },
	})
	if err != nil || turns != 2 || parts != 5 || header == nil || header.AgentModel != "opencode/gpt-5-nano" {
		t.Fatalf("scan: err=%v turns=%d parts=%d header=%+v", err, turns, parts, header)
	}
}
