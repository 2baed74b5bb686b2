package scripted

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseValid(t *testing.T) {
	s, err := Load("testdata/valid.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if got := len(s.Responses); got != 5 {
		t.Fatalf("responses = %d, want 5", got)
	}
	lines := []int{3, 4, 5, 6, 7}
	for i, r := range s.Responses {
		if r.Line != lines[i] {
			t.Errorf("response %d line = %d, want %d", i, r.Line, lines[i])
		}
	}
	r := s.Responses[1]
	if r.Reasoning != "Think first." || r.Text != "Then speak." || len(r.Tools) != 2 {
		t.Errorf("mixed response parsed as %+v", r)
	}
	if got := string(r.Tools[0].Args); got != `{"filePath":"a.txt","content":"x"}` {
		t.Errorf("write args = %s", got)
	}
	if u := s.Responses[2].Usage; u == nil || *u != (Usage{PromptTokens: 100, CompletionTokens: 20, ReasoningTokens: 5, CachedTokens: 40}) {
		t.Errorf("usage = %+v", u)
	}
	if got := string(s.Responses[3].Tools[0].Args); got != "{}" {
		t.Errorf("missing args = %s, want {}", got)
	}
	if e := s.Responses[3].Expect; e == nil || e.Model != "demo" || e.Contains != "go" || len(e.Tools) != 1 {
		t.Errorf("expect = %+v", e)
	}
	if r := s.Responses[4]; r.Error == nil || *r.Error != (ErrorReply{Status: 503, Message: "overloaded"}) || r.DelayMS != 10 {
		t.Errorf("error response = %+v", r)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, script, want string
	}{
		{"empty", "", "s.jsonl: script has no responses"},
		{"only comments", "# nothing\n\n   \n", "s.jsonl: script has no responses"},
		{"bad JSON", "{\"text\":\"a\"}\n{\"text\": }\n", "s.jsonl:2: bad JSON at column 10: invalid character '}' looking for beginning of value"},
		{"truncated", "{\"text\":\"a\"", "s.jsonl:1: bad JSON: unexpected end of line"},
		{"unknown key", "\n{\"txt\":\"a\"}", `s.jsonl:2: unknown key "txt" (allowed: reasoning, text, tools, usage, expect, delay_ms, error)`},
		{"unknown tool key", `{"tools":[{"name":"bash","arguments":{}}]}`, `s.jsonl:1: unknown key "arguments" in tools[0] (allowed: name, args)`},
		{"unknown usage key", `{"text":"a","usage":{"input_tokens":3}}`, `s.jsonl:1: unknown key "input_tokens" in usage (allowed: prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens)`},
		{"unknown expect key", `{"text":"a","expect":{"tool":"x"}}`, `s.jsonl:1: unknown key "tool" in expect (allowed: tools, model, contains)`},
		{"not an object", `["text"]`, "s.jsonl:1: a response must be a JSON object, got array"},
		{"wrong type", `{"text":3}`, `s.jsonl:1: field "text": expected string, got number`},
		{"empty response", `{}`, `s.jsonl:1: empty response: give at least one of "reasoning", "text", "tools" (or "error")`},
		{"negative delay", `{"text":"a","delay_ms":-1}`, `s.jsonl:1: "delay_ms" must be between 0 and 600000`},
		{"error not an error status", `{"error":{"status":200,"message":"x"}}`, "s.jsonl:1: error.status 200: must be an HTTP error status (400-599)"},
		{"error with text", `{"text":"a","error":{"status":500,"message":"x"}}`, `s.jsonl:1: an "error" response cannot also hold reasoning, text, tools or usage`},
		{"unknown error key", `{"error":{"code":500}}`, `s.jsonl:1: unknown key "code" in error (allowed: status, message)`},
		{"two objects", `{"text":"a"} {"text":"b"}`, "s.jsonl:1: extra data after the JSON object (one response per line)"},
		{"tool without name", `{"tools":[{"args":{}}]}`, `s.jsonl:1: tools[0]: missing "name"`},
		{"bad tool name", `{"tools":[{"name":"rm -rf"}]}`, `s.jsonl:1: tools[0]: invalid tool name "rm -rf"`},
		{"args not object", `{"tools":[{"name":"bash","args":"ls"}]}`, `s.jsonl:1: tools[0] (bash): "args" must be a JSON object`},
		{"negative usage", `{"text":"a","usage":{"prompt_tokens":-1,"completion_tokens":1}}`, "s.jsonl:1: usage: token counts must not be negative"},
		{"reasoning over completion", `{"text":"a","usage":{"prompt_tokens":1,"completion_tokens":1,"reasoning_tokens":2}}`, "s.jsonl:1: usage: reasoning_tokens exceeds completion_tokens"},
		{"cached over prompt", `{"text":"a","usage":{"prompt_tokens":1,"completion_tokens":1,"cached_tokens":2}}`, "s.jsonl:1: usage: cached_tokens exceeds prompt_tokens"},
		{"bad expect tool", `{"text":"a","expect":{"tools":[""]}}`, `s.jsonl:1: expect.tools[0]: invalid tool name ""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("s.jsonl", strings.NewReader(tt.script))
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got: %s\nwant: %s", err, tt.want)
			}
		})
	}
}

func TestLoadMissingAndEmpty(t *testing.T) {
	if _, err := Load(filepath.Join(t.TempDir(), "nope.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: err = %v, want not-exist", err)
	}
	p := filepath.Join(t.TempDir(), "empty.jsonl")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); !errors.Is(err, ErrEmptyScript) {
		t.Errorf("empty file: err = %v, want ErrEmptyScript", err)
	}
}

// TestDemoScriptsParse keeps the shipped scripts loadable.
func TestDemoScriptsParse(t *testing.T) {
	files, _ := filepath.Glob("demo/*.jsonl")
	if len(files) == 0 {
		t.Fatal("no demo scripts found under demo/")
	}
	for _, f := range files {
		if _, err := Load(f); err != nil {
			t.Error(err)
		}
	}
}
