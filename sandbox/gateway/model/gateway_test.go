package model

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trajlab/traj/sandbox/agent"
	"github.com/trajlab/traj/sandbox/scripted"
	"github.com/trajlab/traj/trace"
)

const token = "traj-test-token"

// scriptedUpstream serves script with the real scripted model.
func scriptedUpstream(t testing.TB, script string) (*scripted.Server, string) {
	t.Helper()
	s, err := scripted.Parse("gw.jsonl", strings.NewReader(script))
	if err != nil {
		t.Fatal(err)
	}
	srv := scripted.New(s, scripted.Options{})
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return srv, ts.URL + "/v1"
}

// syncBuffer is a record sink the test reads while the gateway writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) calls(t *testing.T) ([]Call, Totals) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var calls []Call
	tot, err := ScanRecord(bytes.NewReader(s.b.Bytes()), func(c Call) error { calls = append(calls, c); return nil })
	if err != nil {
		t.Fatal(err)
	}
	return calls, tot
}

func newGateway(t testing.TB, opts Options) (*Gateway, string) {
	t.Helper()
	if opts.Token == "" {
		opts.Token = token
	}
	g, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return g, "http://" + ln.Addr().String()
}

func call(t testing.TB, url, authHeader string, body any) (*http.Response, []byte, []byte) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	switch authHeader {
	case "x-api-key":
		req.Header.Set("X-Api-Key", token)
	case "bearer":
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	return resp, got, b
}

var (
	chatTools     = []any{map[string]any{"type": "function", "function": map[string]any{"name": "bash", "parameters": map[string]any{"type": "object"}}}}
	messagesTools = []any{map[string]any{"name": "Bash", "input_schema": map[string]any{"type": "object"}}}
	respTools     = []any{map[string]any{"type": "function", "name": "exec_command", "parameters": map[string]any{"type": "object"}}}
)

// TestForwardsAndRecordsThreeAPIs sends one call of each wire API through
// the gateway to the scripted model and checks what the harness got and
// what the record says: usage normalized like trace.Tokens, the response
// verbatim, the request only by digest and size, the tool call ids.
func TestForwardsAndRecordsThreeAPIs(t *testing.T) {
	script := `{"text":"one","tools":[{"name":"bash","args":{}}],"usage":{"prompt_tokens":100,"completion_tokens":20,"reasoning_tokens":5,"cached_tokens":60}}
{"reasoning":"hm","text":"two","tools":[{"name":"Bash","args":{}}],"usage":{"prompt_tokens":200,"completion_tokens":30,"cached_tokens":150}}
{"text":"three","tools":[{"name":"exec_command","args":{}}],"usage":{"prompt_tokens":300,"completion_tokens":40,"reasoning_tokens":7,"cached_tokens":100}}`
	_, up := scriptedUpstream(t, script)
	rec := &syncBuffer{}
	price := &agent.Price{Input: 3, Output: 15, CacheRead: 0.3}
	var parts atomic.Int64
	parts.Store(7)
	var mu sync.Mutex
	started, told := 0, []Call{}
	g, base := newGateway(t, Options{Upstream: up, Record: rec, Price: price, Parts: &parts, Prior: Totals{LastSeq: 4},
		OnCallStart: func() { mu.Lock(); started++; mu.Unlock() },
		OnCall:      func(c Call) { mu.Lock(); told = append(told, c); mu.Unlock() }})

	var bodies [][]byte
	var sent [][]byte
	for _, c := range []struct {
		path, auth string
		body       map[string]any
	}{
		{"/v1/chat/completions", "bearer", map[string]any{"model": "demo", "stream": true, "messages": []any{}, "tools": chatTools}},
		{"/v1/messages?beta=true", "x-api-key", map[string]any{"model": "demo", "stream": true, "messages": []any{}, "tools": messagesTools}},
		{"/v1/responses", "bearer", map[string]any{"model": "demo", "stream": true, "input": "go", "tools": respTools}},
	} {
		resp, got, req := call(t, base+c.path, c.auth, c.body)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("%s: status %d %q: %s", c.path, resp.StatusCode, resp.Header.Get("Content-Type"), got)
		}
		bodies, sent = append(bodies, got), append(sent, req)
	}
	calls, tot := rec.calls(t)
	if len(calls) != 3 {
		t.Fatalf("record has %d calls, want 3", len(calls))
	}
	want := []trace.Tokens{
		{Input: 40, Output: 15, Reasoning: 5, CacheRead: 60},
		{Input: 50, Output: 30, CacheRead: 150},
		{Input: 200, Output: 33, Reasoning: 7, CacheRead: 100},
	}
	apis := []string{"chat.completions", "messages", "responses"}
	// Each response's outputs in order, as the harness makes parts of
	// them; each request offered one tool.
	outputs := [][]string{{"text", "tool"}, {"reasoning", "text", "tool"}, {"text", "tool"}}
	mu.Lock()
	if started != 3 || len(told) != 3 {
		t.Errorf("told of %d starts and %d calls, want 3", started, len(told))
	}
	for i, c := range told {
		if c.Seq != 5+i || c.Response != "" || strings.Join(c.Outputs, ",") != strings.Join(outputs[i], ",") {
			t.Errorf("told call %d: seq %d outputs %v (response kept: %v)", i, c.Seq, c.Outputs, c.Response != "")
		}
	}
	mu.Unlock()
	var sum trace.Tokens
	for i, c := range calls {
		if strings.Join(c.Outputs, ",") != strings.Join(outputs[i], ",") || c.Tools != 1 {
			t.Errorf("call %d outputs %v tools %d, want %v and 1", i, c.Outputs, c.Tools, outputs[i])
		}
		if c.Seq != 5+i || c.API != apis[i] || c.Status != 200 || c.Model != "demo" || !c.Stream {
			t.Errorf("call %d header: %+v", i, c)
		}
		if c.Tokens == nil || *c.Tokens != want[i] {
			t.Errorf("call %d tokens %+v, want %+v", i, c.Tokens, want[i])
		} else {
			sum.Add(*c.Tokens)
		}
		if c.Response != string(bodies[i]) {
			t.Errorf("call %d: the record's response is not what the harness received", i)
		}
		h := sha256.Sum256(sent[i])
		if c.Request.SHA256 != hex.EncodeToString(h[:]) || c.Request.Bytes != len(sent[i]) {
			t.Errorf("call %d request digest %+v", i, c.Request)
		}
		if len(c.ToolCallIDs) != 1 || c.ResponseID == "" {
			t.Errorf("call %d ids: response %q tools %v", i, c.ResponseID, c.ToolCallIDs)
		}
		if c.PartsBefore == nil || *c.PartsBefore != 7 {
			t.Errorf("call %d parts_before %v", i, c.PartsBefore)
		}
		if c.Cost == nil || *c.Cost != cost(*price, want[i]) {
			t.Errorf("call %d cost %v, want %v", i, c.Cost, cost(*price, want[i]))
		}
	}
	if strings.Contains(rec.b.String(), `"messages":[]`) {
		t.Error("the record holds a request body")
	}
	if tot.Tokens != sum || tot != g.Totals() || tot.Calls != 3 || tot.Failed != 0 {
		t.Errorf("totals %+v, gateway %+v, sum %+v", tot, g.Totals(), sum)
	}
}

// TestKeyAndToken: the harness's token never goes upstream, the real key
// does, in the header style the harness used; a call without the token is
// refused and never forwarded.
func TestKeyAndToken(t *testing.T) {
	var mu sync.Mutex
	var seen []http.Header
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"x","object":"response","output":[],"usage":{"input_tokens":1,"output_tokens":1}}`)
	}))
	defer up.Close()
	const realKey = "sk-real-key-never-in-the-sandbox"
	_, base := newGateway(t, Options{Upstream: up.URL + "/v1", APIKey: realKey})

	for _, auth := range []string{"", "wrong"} {
		b, _ := json.Marshal(map[string]any{"model": "m"})
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/responses", bytes.NewReader(b))
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("token %q: status %d, want 401", auth, resp.StatusCode)
		}
	}
	call(t, base+"/v1/responses", "bearer", map[string]any{"model": "m"})
	call(t, base+"/v1/messages", "x-api-key", map[string]any{"model": "m"})
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 {
		t.Fatalf("upstream saw %d calls, want 2 (refused calls must not be forwarded)", len(seen))
	}
	if seen[0].Get("Authorization") != "Bearer "+realKey || seen[0].Get("X-Api-Key") != "" {
		t.Errorf("bearer call went up with %v", seen[0])
	}
	if seen[1].Get("X-Api-Key") != realKey || seen[1].Get("Authorization") != "" {
		t.Errorf("x-api-key call went up with %v", seen[1])
	}
	for _, h := range seen {
		for k, vs := range h {
			for _, v := range vs {
				if strings.Contains(v, token) {
					t.Errorf("the trajectory token went upstream in %s", k)
				}
			}
		}
	}
}

func TestBudgetsEndTheRun(t *testing.T) {
	script := strings.Repeat(`{"text":"x","usage":{"prompt_tokens":600,"completion_tokens":10}}`+"\n", 4)
	for _, tt := range []struct {
		name   string
		opts   Options
		reason string
		calls  int // calls played before the budget ends the run
	}{
		{"tokens", Options{MaxTokens: 1000}, ReasonTokenLimit, 2},
		{"cost", Options{MaxCost: 0.001, Price: &agent.Price{Input: 1, Output: 1}}, ReasonCostLimit, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, up := scriptedUpstream(t, script)
			tt.opts.Upstream = up
			rec := &syncBuffer{}
			tt.opts.Record = rec
			g, base := newGateway(t, tt.opts)
			body := map[string]any{"model": "demo", "messages": []any{}, "tools": chatTools}
			for i := 0; i < tt.calls; i++ {
				select {
				case <-g.Done():
					t.Fatalf("ended after %d calls", i)
				default:
				}
				if resp, got, _ := call(t, base+"/v1/chat/completions", "bearer", body); resp.StatusCode != 200 {
					t.Fatalf("call %d: %d %s", i, resp.StatusCode, got)
				}
			}
			<-g.Done()
			reason, detail := g.Reason()
			if reason != tt.reason || !strings.Contains(detail, "--max-") {
				t.Errorf("reason %q %q", reason, detail)
			}
			resp, got, _ := call(t, base+"/v1/chat/completions", "bearer", body)
			if resp.StatusCode != 400 || !strings.Contains(string(got), "the run is over") {
				t.Errorf("call after the budget: %d %s", resp.StatusCode, got)
			}
			if st := srv.Status(); st.Played != tt.calls {
				t.Errorf("upstream played %d, want %d (nothing forwarded after the budget)", st.Played, tt.calls)
			}
			if calls, _ := rec.calls(t); len(calls) != tt.calls+1 || calls[tt.calls].Status != 400 {
				t.Errorf("record: %d calls", len(calls))
			}
		})
	}
}

// TestUnreachableUpstreamFailsFast: a closed port answers 502 at once and
// ends the run naming the endpoint; Check says the same before a run.
func TestUnreachableUpstreamFailsFast(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	g, base := newGateway(t, Options{Upstream: dead})
	if err := g.Check(context.Background()); err == nil || !strings.Contains(err.Error(), dead) {
		t.Errorf("Check: %v", err)
	}
	resp, got, _ := call(t, base+"/v1/messages", "x-api-key", map[string]any{"model": "m"})
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(got), ln.Addr().String()) {
		t.Errorf("status %d %s", resp.StatusCode, got)
	}
	select {
	case <-g.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed")
	}
	if reason, detail := g.Reason(); reason != ReasonUnreachable || !strings.Contains(detail, dead) {
		t.Errorf("reason %q %q", reason, detail)
	}
}

func TestRefusals(t *testing.T) {
	if _, err := Listen("0.0.0.0:0"); err == nil {
		t.Error("Listen accepted a non-loopback address")
	}
	if _, err := New(Options{Upstream: "http://127.0.0.1:1/v1"}); err == nil {
		t.Error("New accepted no token")
	}
	if _, err := New(Options{Upstream: "ftp://x", Token: "t"}); err == nil {
		t.Error("New accepted a non-http upstream")
	}
	_, up := scriptedUpstream(t, `{"text":"x"}`)
	_, base := newGateway(t, Options{Upstream: up})
	resp, _, _ := call(t, base+"/v1/embeddings", "bearer", map[string]any{})
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown API: %d", resp.StatusCode)
	}
}

func TestScanRecordTornTail(t *testing.T) {
	rec := `{"seq":1,"api":"messages","status":200,"tokens":{"input":1,"output":2,"reasoning":0,"cache_read":3,"cache_write":0},"cost":0.5,"response":""}` + "\n" + `{"seq":2,"api":"mes`
	tot, err := ScanRecord(strings.NewReader(rec), nil)
	if err != nil || tot.Calls != 1 || tot.Tokens.Total() != 6 || tot.Cost != 0.5 {
		t.Errorf("torn tail: %+v %v", tot, err)
	}
	if _, err := ScanRecord(strings.NewReader("not json\n"), nil); err == nil {
		t.Error("a bad complete line was accepted")
	}
}

// TestOutageAfterSuccessIsRetried: once a call got through, a failed
// connection is answered 502 (the harness retries) and does not end the run.
func TestOutageAfterSuccessIsRetried(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"x","object":"response","output":[]}`)
	}))
	g, base := newGateway(t, Options{Upstream: up.URL + "/v1"})
	if resp, _, _ := call(t, base+"/v1/responses", "bearer", map[string]any{"model": "m"}); resp.StatusCode != 200 {
		t.Fatalf("first call %d", resp.StatusCode)
	}
	up.Close()
	if resp, _, _ := call(t, base+"/v1/responses", "bearer", map[string]any{"model": "m"}); resp.StatusCode != http.StatusBadGateway {
		t.Errorf("call during the outage: %d", resp.StatusCode)
	}
	select {
	case <-g.Done():
		t.Errorf("an outage after a successful call ended the run: %v", g.Totals())
	default:
	}
}
