package scripted

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// writeSchema is the write tool's parameters as OpenCode 1.18 sends them.
const writeSchema = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"content":{"type":"string"},"filePath":{"type":"string"}},"required":["content","filePath"]}`

func tool(name, schema string) map[string]any {
	return map[string]any{"type": "function", "function": map[string]any{
		"name": name, "description": name, "parameters": json.RawMessage(schema)}}
}

var agentTools = []map[string]any{
	tool("write", writeSchema),
	tool("bash", `{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`),
	tool("tests_run_tests", `{"type":"object","properties":{"test_path":{"type":"string"}},"required":["test_path"]}`),
}

func newTestServer(t *testing.T, script string, opts Options) (*Server, *httptest.Server) {
	t.Helper()
	s, err := Parse("test.jsonl", strings.NewReader(script))
	if err != nil {
		t.Fatal(err)
	}
	opts.Now = func() time.Time { return time.Unix(1700000000, 0) }
	srv := New(s, opts)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return srv, ts
}

type reqOpts struct {
	model  string
	stream bool
	tools  []map[string]any
	system string
	last   string
}

func post(t *testing.T, ts *httptest.Server, o reqOpts) *http.Response {
	t.Helper()
	if o.model == "" {
		o.model = "demo"
	}
	msgs := []map[string]any{}
	if o.system != "" {
		msgs = append(msgs, map[string]any{"role": "system", "content": o.system})
	}
	msgs = append(msgs, map[string]any{"role": "user", "content": []map[string]any{{"type": "text", "text": o.last + " please"}}})
	body := map[string]any{"model": o.model, "messages": msgs, "stream": o.stream}
	if o.tools != nil {
		body["tools"] = o.tools
	}
	if o.stream {
		body["stream_options"] = map[string]any{"include_usage": true}
	}
	b, _ := json.Marshal(body)
	resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	return resp
}

// assembled is a completion put back together from the wire.
type assembled struct {
	reasoning, text, finish string
	calls                   []wireToolCall
	usage                   *wireUsage
	chunks                  int
	done                    bool
}

// readSSE parses a text/event-stream body per the SSE rules (events end at
// a blank line; data lines are joined) and accumulates the deltas the way
// an OpenAI client does.
func readSSE(t *testing.T, r io.Reader) assembled {
	t.Helper()
	var out assembled
	var data []string
	sc := bufio.NewScanner(r)
	dispatch := func() {
		if len(data) == 0 {
			return
		}
		payload := strings.Join(data, "\n")
		data = nil
		if out.done {
			t.Fatalf("event after [DONE]: %s", payload)
		}
		if payload == "[DONE]" {
			out.done = true
			return
		}
		var c completion
		if err := json.Unmarshal([]byte(payload), &c); err != nil {
			t.Fatalf("chunk %q: %v", payload, err)
		}
		if c.Object != "chat.completion.chunk" || !strings.HasPrefix(c.ID, "chatcmpl-") {
			t.Fatalf("chunk header: %s", payload)
		}
		out.chunks++
		if c.Usage != nil {
			out.usage = c.Usage
		}
		for _, ch := range c.Choices {
			if ch.FinishReason != nil {
				out.finish = *ch.FinishReason
			}
			d := ch.Delta
			if d == nil {
				continue
			}
			if d.ReasoningContent != nil {
				out.reasoning += *d.ReasoningContent
			}
			if d.Content != nil {
				out.text += *d.Content
			}
			for _, tc := range d.ToolCalls {
				if tc.Index == nil {
					t.Fatalf("tool call delta without index: %s", payload)
				}
				if *tc.Index == len(out.calls) {
					if tc.ID == "" || tc.Function.Name == "" {
						t.Fatalf("first delta of a tool call lacks id or name: %s", payload)
					}
					out.calls = append(out.calls, tc)
					continue
				}
				out.calls[*tc.Index].Function.Arguments += tc.Function.Arguments
			}
		}
	}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			dispatch()
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		case strings.HasPrefix(line, ":"):
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	dispatch()
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestStreamPlaysMixedResponse(t *testing.T) {
	script := `{"reasoning":"Plan: write then run, with ünïcode spanning chunk borders.","text":"Writing the build script now, then running the smoke tests.","tools":[{"name":"write","args":{"filePath":"build.sh","content":"#!/bin/sh\necho ok\n"}},{"name":"tests_run_tests","args":{"test_path":"basics/smoke"}}]}`
	_, ts := newTestServer(t, script, Options{ChunkRunes: 7})
	resp := post(t, ts, reqOpts{stream: true, tools: agentTools})
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("content type %q", ct)
	}
	got := readSSE(t, resp.Body)
	if !got.done {
		t.Error("stream did not end with [DONE]")
	}
	if got.reasoning != "Plan: write then run, with ünïcode spanning chunk borders." {
		t.Errorf("reasoning %q", got.reasoning)
	}
	if got.text != "Writing the build script now, then running the smoke tests." {
		t.Errorf("text %q", got.text)
	}
	if got.chunks < 10 {
		t.Errorf("only %d chunks: deltas not split", got.chunks)
	}
	if got.finish != "tool_calls" {
		t.Errorf("finish %q", got.finish)
	}
	if len(got.calls) != 2 {
		t.Fatalf("calls %+v", got.calls)
	}
	want := []struct{ name, args string }{
		{"write", `{"filePath":"build.sh","content":"#!/bin/sh\necho ok\n"}`},
		{"tests_run_tests", `{"test_path":"basics/smoke"}`},
	}
	for i, w := range want {
		c := got.calls[i]
		if c.Function.Name != w.name || c.Function.Arguments != w.args || c.Type != "function" {
			t.Errorf("call %d = %+v, want %s %s", i, c, w.name, w.args)
		}
	}
	if got.calls[0].ID == got.calls[1].ID {
		t.Errorf("tool call ids not unique: %s", got.calls[0].ID)
	}
	u := got.usage
	if u == nil || u.PromptTokens == 0 || u.CompletionTokens == 0 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		t.Fatalf("usage %+v", u)
	}
	if u.CompletionTokensDetails == nil || u.CompletionTokensDetails.ReasoningTokens == 0 {
		t.Errorf("reasoning tokens missing: %+v", u.CompletionTokensDetails)
	}
}

func TestNonStreaming(t *testing.T) {
	script := `{"reasoning":"r","text":"t","tools":[{"name":"bash","args":{"command":"ls"}}],"usage":{"prompt_tokens":1000,"completion_tokens":50,"reasoning_tokens":10,"cached_tokens":600}}`
	_, ts := newTestServer(t, script, Options{})
	resp := post(t, ts, reqOpts{tools: agentTools})
	var c completion
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		t.Fatal(err)
	}
	if c.Object != "chat.completion" || len(c.Choices) != 1 {
		t.Fatalf("completion %+v", c)
	}
	m := c.Choices[0].Message
	if *m.Content != "t" || *m.ReasoningContent != "r" || len(m.ToolCalls) != 1 || m.ToolCalls[0].Function.Arguments != `{"command":"ls"}` {
		t.Errorf("message %+v", m)
	}
	if *c.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("finish %q", *c.Choices[0].FinishReason)
	}
	want := wireUsage{PromptTokens: 1000, CompletionTokens: 50, TotalTokens: 1050,
		PromptTokensDetails: &promptTokensDetails{CachedTokens: 600}, CompletionTokensDetails: &completionTokensDetails{ReasoningTokens: 10}}
	gotJ, _ := json.Marshal(c.Usage)
	wantJ, _ := json.Marshal(want)
	if !bytes.Equal(gotJ, wantJ) {
		t.Errorf("usage %s, want %s", gotJ, wantJ)
	}
}

func TestEstimatedUsageIsDeterministic(t *testing.T) {
	script := "{\"text\":\"same words\"}\n{\"text\":\"same words\"}\n"
	_, ts := newTestServer(t, script, Options{})
	a := readSSE(t, post(t, ts, reqOpts{stream: true}).Body).usage
	b := readSSE(t, post(t, ts, reqOpts{stream: true}).Body).usage
	if a == nil || b == nil || *a.PromptTokensDetails != *b.PromptTokensDetails || a.PromptTokens != b.PromptTokens || a.CompletionTokens != b.CompletionTokens {
		t.Errorf("usage differs for identical requests: %+v vs %+v", a, b)
	}
	if a.CompletionTokens != 3 { // "same words" is 10 bytes
		t.Errorf("completion tokens = %d, want 3", a.CompletionTokens)
	}
}

func TestSideRequestsDoNotConsume(t *testing.T) {
	srv, ts := newTestServer(t, `{"text":"scripted one"}`, Options{SideText: "A title"})
	side := []reqOpts{
		{model: "small", stream: true},
		{model: "demo", stream: true, system: "You are a title generator. You output ONLY a thread title."},
		{model: "demo", stream: true, system: "You are a context summarization agent. You are given a conversation"},
		{model: "demo", last: "Summarize what was done in this conversation. Write like a pull request description."},
	}
	for _, o := range side {
		resp := post(t, ts, o)
		var text string
		if o.stream {
			text = readSSE(t, resp.Body).text
		} else {
			var c completion
			if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
				t.Fatal(err)
			}
			text = *c.Choices[0].Message.Content
		}
		if text != "A title" {
			t.Errorf("side request %+v answered %q", o, text)
		}
	}
	// The same bookkeeping prompt with tools offered is a real agent request.
	if got := readSSE(t, post(t, ts, reqOpts{stream: true, tools: agentTools, system: "You are a title generator"}).Body); got.text != "scripted one" {
		t.Errorf("request with tools answered %q", got.text)
	}
	if st := srv.Status(); st.Played != 1 || st.Side != 4 {
		t.Fatalf("status after side requests %+v", st)
	}
}

func TestExhausted(t *testing.T) {
	srv, ts := newTestServer(t, `{"text":"only"}`, Options{})
	readSSE(t, post(t, ts, reqOpts{stream: true}).Body)
	for range 2 {
		got := readSSE(t, post(t, ts, reqOpts{stream: true}).Body)
		if !strings.Contains(got.text, "test.jsonl is exhausted (all 1 responses were played)") || got.finish != "stop" || len(got.calls) != 0 {
			t.Errorf("exhausted reply %+v", got)
		}
	}
	if st := srv.Status(); st.Played != 1 || st.Remaining != 0 || st.Exhausted != 2 {
		t.Errorf("status %+v", st)
	}
}

func TestDivergenceDoesNotConsume(t *testing.T) {
	tests := []struct {
		name, script string
		req          reqOpts
		want         string
	}{
		{"tool not offered", `{"tools":[{"name":"task","args":{}}]}`, reqOpts{tools: agentTools},
			`test.jsonl:1: the response calls tool "task" but the request offers [write, bash, tests_run_tests]`},
		{"no tools offered", `{"tools":[{"name":"bash","args":{"command":"ls"}}]}`, reqOpts{},
			`the response calls tool "bash" but the request offers no tools`},
		{"args against schema", `{"tools":[{"name":"write","args":{"path":"a","content":"x"}}]}`, reqOpts{tools: agentTools},
			`tool "write" args do not match the schema the agent sent: at '': missing property 'filePath'`},
		{"expect tool", `{"text":"a","expect":{"tools":["tests_run_tests"]}}`, reqOpts{tools: agentTools[:1]},
			`expected the request to offer tool "tests_run_tests", it offers [write]`},
		{"expect model", `{"text":"a","expect":{"model":"big"}}`, reqOpts{},
			`expected model "big", the request is for "demo"`},
		{"expect contains", `{"text":"a","expect":{"contains":"tests passed"}}`, reqOpts{last: "2 failed"},
			`expected the last user or tool message to contain "tests passed", it is "2 failed please"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, ts := newTestServer(t, tt.script, Options{})
			tt.req.stream = true
			got := readSSE(t, post(t, ts, tt.req).Body)
			if !strings.Contains(got.text, tt.want) || len(got.calls) != 0 {
				t.Errorf("reply %q\nwant it to contain %q", got.text, tt.want)
			}
			if st := srv.Status(); st.Played != 0 || st.Diverged != 1 {
				t.Errorf("status %+v", st)
			}
		})
	}
}

func TestConcurrentRequestsPlayEachResponseOnce(t *testing.T) {
	const n = 40 // scripted responses; 10 side requests run beside them
	var script strings.Builder
	var want []string
	for i := range n {
		fmt.Fprintf(&script, "{\"text\":\"r%02d\"}\n", i)
		want = append(want, fmt.Sprintf("r%02d", i))
	}
	srv, ts := newTestServer(t, script.String(), Options{})
	var mu sync.Mutex
	var played []string
	var wg sync.WaitGroup
	for i := range n + 10 {
		model := "demo"
		if i%5 == 0 {
			model = "small"
		}
		wg.Go(func() {
			body := fmt.Sprintf(`{"model":%q,"stream":false,"messages":[{"role":"user","content":"go"}]}`, model)
			resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			var c completion
			if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
				t.Error(err)
				return
			}
			if text := *c.Choices[0].Message.Content; model == "demo" {
				mu.Lock()
				played = append(played, text)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(played)
	if !slices.Equal(played, want) {
		t.Errorf("played %v\nwant each of %v once", played, want)
	}
	if st := srv.Status(); st != (Status{Played: n, Remaining: 0, Side: 10}) {
		t.Errorf("status %+v", st)
	}
}

func TestModels(t *testing.T) {
	_, ts := newTestServer(t, `{"text":"a"}`, Options{Models: []string{"demo", "small", "big"}})
	resp, err := http.Get(ts.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var l modelList
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range l.Data {
		ids = append(ids, m.ID)
	}
	if !slices.Equal(ids, []string{"demo", "small", "big"}) {
		t.Errorf("models %v", ids)
	}
}

func TestBadRequest(t *testing.T) {
	srv, ts := newTestServer(t, `{"text":"a"}`, Options{})
	resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader("{not json"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e apiError
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusBadRequest || !strings.HasPrefix(e.Error.Message, "decode request:") {
		t.Errorf("status %d error %+v", resp.StatusCode, e)
	}
	if srv.Status().Played != 0 {
		t.Error("a bad request consumed the script")
	}
}

func TestChunks(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want []string
	}{
		{"", 3, nil},
		{"abc", 3, []string{"abc"}},
		{"abcd", 3, []string{"abc", "d"}},
		{"ééé", 2, []string{"éé", "é"}},
	}
	for _, tt := range tests {
		if got := chunks(tt.in, tt.n); !slices.Equal(got, tt.want) {
			t.Errorf("chunks(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// TestStreamGolden pins the exact wire format (chunk order, fields, usage
// chunk, [DONE]) that @ai-sdk/openai-compatible is known to accept.
func TestStreamGolden(t *testing.T) {
	script := `{"reasoning":"Think.","text":"Hello, world.","tools":[{"name":"bash","args":{"command":"echo hi"}}]}`
	_, ts := newTestServer(t, script, Options{ChunkRunes: 8})
	resp := post(t, ts, reqOpts{stream: true, tools: agentTools})
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "stream.golden")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("stream differs from %s (go test -update rewrites it)\n got:\n%s\nwant:\n%s", golden, got, want)
	}
}

func TestErrorAndDelay(t *testing.T) {
	srv, ts := newTestServer(t, "{\"error\":{\"status\":503,\"message\":\"overloaded\"}}\n{\"text\":\"late\",\"delay_ms\":300}\n", Options{})
	b, _ := json.Marshal(map[string]any{"model": "demo", "stream": true, "messages": []any{}})
	resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var e apiError
	_ = json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if resp.StatusCode != 503 || e.Error.Message != "overloaded" || e.Error.Type != "server_error" {
		t.Errorf("error reply: status %d %+v", resp.StatusCode, e)
	}
	start := time.Now()
	got := readSSE(t, post(t, ts, reqOpts{stream: true}).Body)
	if got.text != "late" {
		t.Errorf("text %q", got.text)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("reply came after %v, want the 300ms delay", d)
	}
	if st := srv.Status(); st.Played != 2 {
		t.Errorf("status %+v", st)
	}
}

func TestErrorType(t *testing.T) {
	for status, want := range map[int]string{400: "invalid_request_error", 404: "invalid_request_error", 429: "rate_limit_error", 500: "server_error", 503: "server_error"} {
		if got := errorType(status); got != want {
			t.Errorf("errorType(%d) = %q, want %q", status, got, want)
		}
	}
}

// TestSkipAndPlayedLine: a server started past the responses a source
// played answers with the next one, and PlayedLine counts exactly the
// replies that played a line: not the side answer, not the exhausted or
// diverged one, whatever the stream's chunks split.
func TestSkipAndPlayedLine(t *testing.T) {
	srv, ts := newTestServer(t, "{\"text\":\"one\"}\n{\"reasoning\":\"only thinking\"}\n{\"text\":\"three\"}\n", Options{Skip: 2})
	if got := readSSE(t, post(t, ts, reqOpts{stream: true}).Body); got.text != "three" {
		t.Fatalf("a server skipping 2 answered %q, want the third response", got.text)
	}
	side := readSSE(t, post(t, ts, reqOpts{model: "small", stream: true}).Body).text
	exhausted := readSSE(t, post(t, ts, reqOpts{stream: true}).Body).text
	if st := srv.Status(); st.Played != 3 || st.Exhausted != 1 {
		t.Fatalf("status %+v", st)
	}
	for _, c := range []struct {
		status int
		text   string
		tools  int
		want   bool
	}{
		{200, "three", 0, true},
		{200, "", 0, true}, // reasoning only
		{200, side, 0, false},
		{200, side, 1, true},
		{200, exhausted, 0, false},
		{200, ownPrefix + "the run diverged from the script at test.jsonl:1: x.", 0, false},
		{503, "", 0, true}, // an error line
	} {
		if got := PlayedLine(c.status, c.text, c.tools); got != c.want {
			t.Errorf("PlayedLine(%d, %q, %d) = %v, want %v", c.status, c.text, c.tools, got, c.want)
		}
	}
}
