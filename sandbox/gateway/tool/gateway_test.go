package tool

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

const testToken = "traj-tool-test-token"

// runTests is a tool that counts its runs and waits for release before
// answering, so a test can act while a call is in flight.
type runTests struct {
	runs    atomic.Int32
	started chan struct{} // closed when the first run starts
	release chan struct{} // closed to let runs answer
	once    sync.Once
}

func newRunTests() *runTests {
	return &runTests{started: make(chan struct{}), release: make(chan struct{})}
}

func (r *runTests) tool() Tool {
	return Tool{
		Name:        "run_tests",
		Description: "Build the workspace and run a test path.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"test_path":{"type":"string"}},"required":["test_path"]}`),
		Run: func(ctx context.Context, args json.RawMessage) Result {
			n := r.runs.Add(1)
			r.once.Do(func() { close(r.started) })
			select {
			case <-r.release:
			case <-ctx.Done():
				return Result{Text: "cancelled", IsError: true}
			}
			var a struct {
				TestPath string `json:"test_path"`
			}
			_ = json.Unmarshal(args, &a)
			return Result{Text: `{"path":"` + a.TestPath + `","run":` + string(rune('0'+n)) + `}`}
		},
	}
}

func startGateway(t *testing.T, tools ...Tool) *Gateway {
	t.Helper()
	g, err := New(Options{Token: testToken, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// faultProxy forwards TCP to a gateway; on the first connection after
// arm it cuts both sides when cut is closed, dropping whatever the
// gateway answers. Fault injection only.
type faultProxy struct {
	ln    net.Listener
	cut   chan struct{}
	armed atomic.Bool
	conns atomic.Int32 // connections since armed
}

func newFaultProxy(t *testing.T, target string) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{ln: ln, cut: make(chan struct{})}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			var n int32
			if p.armed.Load() {
				n = p.conns.Add(1)
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			if n == 1 {
				go func() {
					// Swallow the answer; cut when told.
					go func() { _, _ = io.Copy(io.Discard, up) }()
					<-p.cut
					c.Close()
					up.Close()
				}()
				continue
			}
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
	return p
}

func (p *faultProxy) url() string { return "http://" + p.ln.Addr().String() }

// waitFor polls cond until it holds (no timing is asserted).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (g *Gateway) joined(id string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if f, ok := g.calls[id]; ok {
		return f.call.Joined
	}
	return -1
}

func mcpClient(t *testing.T, s *Stub) *client.Client {
	t.Helper()
	ctx := context.Background()
	srv, err := s.MCPServer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.NewInProcessClient(srv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcpgo.InitializeRequest{}
	init.Params.ProtocolVersion = mcpgo.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcpgo.Implementation{Name: "test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	return c
}

func callRunTests(ctx context.Context, c *client.Client, path string) (*mcpgo.CallToolResult, error) {
	req := mcpgo.CallToolRequest{}
	req.Params.Name = "run_tests"
	req.Params.Arguments = map[string]any{"test_path": path}
	return c.CallTool(ctx, req)
}

func resultText(t *testing.T, r *mcpgo.CallToolResult) string {
	t.Helper()
	if len(r.Content) != 1 {
		t.Fatalf("answer has %d contents, want 1", len(r.Content))
	}
	tc, ok := r.Content[0].(mcpgo.TextContent)
	if !ok {
		t.Fatalf("answer content is %T", r.Content[0])
	}
	return tc.Text
}

// The connection is killed while the tests run: the stub retries with the
// same tool_call_id, joins the call in flight, and the agent gets one
// answer from one run; the record has one call.
func TestConnectionKilledMidCallRunsOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		// releaseBeforeCut: the call completes before the connection is cut
		// (the retry gets the completed answer) instead of after the retry
		// joined the call in flight.
		releaseBeforeCut bool
	}{
		{name: "retry joins the call in flight"},
		{name: "retry gets the completed answer", releaseBeforeCut: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := newRunTests()
			g := startGateway(t, rt.tool())
			p := newFaultProxy(t, g.Addr())
			var ids []string
			s := &Stub{URL: p.url(), Token: testToken, Client: &http.Client{},
				Backoff: Backoff{Base: 10 * time.Millisecond, Max: 50 * time.Millisecond, Attempts: 8},
				NewID: func() string {
					id := "tc_fixed_" + string(rune('a'+len(ids)))
					ids = append(ids, id)
					return id
				}}
			c := mcpClient(t, s)
			// The tool list came over a kept-alive connection; the call
			// gets a new one, the faulty one.
			s.Client.CloseIdleConnections()
			p.armed.Store(true)

			type answer struct {
				r   *mcpgo.CallToolResult
				err error
			}
			got := make(chan answer, 1)
			go func() {
				r, err := callRunTests(context.Background(), c, "basics/smoke")
				got <- answer{r, err}
			}()
			<-rt.started
			if tc.releaseBeforeCut {
				close(rt.release)
				waitFor(t, "the call to complete", func() bool { return len(g.Calls()) == 1 })
				close(p.cut)
			} else {
				close(p.cut)
				waitFor(t, "the retry to join", func() bool { return g.joined("tc_fixed_a") == 1 })
				close(rt.release)
			}
			a := <-got
			if a.err != nil {
				t.Fatal(a.err)
			}
			if a.r.IsError {
				t.Fatalf("error answer: %s", resultText(t, a.r))
			}
			if txt := resultText(t, a.r); txt != `{"path":"basics/smoke","run":1}` {
				t.Fatalf("answer %s", txt)
			}
			if n := rt.runs.Load(); n != 1 {
				t.Fatalf("the tests ran %d times, want 1", n)
			}
			if len(ids) != 1 {
				t.Fatalf("%d tool_call_ids made for one logical call: %v", len(ids), ids)
			}
			if n := p.conns.Load(); n < 2 {
				t.Fatalf("%d connections: the stub did not retry", n)
			}
			calls := g.Calls()
			if len(calls) != 1 || calls[0].ToolCallID != "tc_fixed_a" || calls[0].Joined != 1 {
				t.Fatalf("calls %+v, want one call tc_fixed_a joined once", calls)
			}
		})
	}
}

// Two logical calls are two runs, and each gets its own answer.
func TestDistinctCallsRunSeparately(t *testing.T) {
	rt := newRunTests()
	close(rt.release)
	g := startGateway(t, rt.tool())
	c := mcpClient(t, &Stub{URL: "http://" + g.Addr(), Token: testToken})
	for _, path := range []string{"basics/smoke", "wacct/chapter_1"} {
		r, err := callRunTests(context.Background(), c, path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(resultText(t, r), path) {
			t.Fatalf("answer %s does not name %s", resultText(t, r), path)
		}
	}
	if n := rt.runs.Load(); n != 2 {
		t.Fatalf("%d runs, want 2", n)
	}
	if calls := g.Calls(); len(calls) != 2 || calls[0].ToolCallID == calls[1].ToolCallID {
		t.Fatalf("calls %+v", calls)
	}
}

func TestGatewayRefuses(t *testing.T) {
	rt := newRunTests()
	close(rt.release)
	g := startGateway(t, rt.tool())
	post := func(token, path, body string) int {
		req, _ := http.NewRequest(http.MethodPost, "http://"+g.Addr()+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		name, token, path, body string
		want                    int
	}{
		{"no token", "", "/v1/tools/run_tests", `{"tool_call_id":"a","arguments":{}}`, 401},
		{"wrong token", "other", "/v1/tools/run_tests", `{"tool_call_id":"a","arguments":{}}`, 401},
		{"unknown tool", testToken, "/v1/tools/rm", `{"tool_call_id":"a","arguments":{}}`, 404},
		{"no id", testToken, "/v1/tools/run_tests", `{"arguments":{}}`, 400},
		{"first use of an id", testToken, "/v1/tools/run_tests", `{"tool_call_id":"x","arguments":{"test_path":"a"}}`, 200},
		{"same id, same arguments", testToken, "/v1/tools/run_tests", `{"tool_call_id":"x","arguments":{ "test_path" : "a"}}`, 200},
		{"same id, other arguments", testToken, "/v1/tools/run_tests", `{"tool_call_id":"x","arguments":{"test_path":"b"}}`, 409},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := post(tc.token, tc.path, tc.body); got != tc.want {
				t.Fatalf("status %d, want %d", got, tc.want)
			}
		})
	}
	if n := rt.runs.Load(); n != 1 {
		t.Fatalf("%d runs, want 1", n)
	}
}

// A wrong token is an answer, not a connection failure: the stub does not
// retry it, and says what happened.
func TestStubDoesNotRetryRefusals(t *testing.T) {
	rt := newRunTests()
	g := startGateway(t, rt.tool())
	s := &Stub{URL: "http://" + g.Addr(), Token: "wrong", Backoff: Backoff{Base: time.Millisecond, Max: time.Millisecond, Attempts: 3}}
	_, err := s.Call(context.Background(), "run_tests", map[string]any{"test_path": "a"})
	var se *statusError
	if !errors.As(err, &se) || se.code != 401 {
		t.Fatalf("err %v, want a 401", err)
	}
}

// A gateway that never comes up: the stub gives up after its attempts
// with an error naming the call.
func TestStubGivesUp(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := &Stub{URL: "http://" + addr, Token: testToken, Backoff: Backoff{Base: time.Millisecond, Max: 2 * time.Millisecond, Attempts: 3}}
	_, err = s.Call(context.Background(), "run_tests", nil)
	if err == nil || !strings.Contains(err.Error(), "3 attempts") || !strings.Contains(err.Error(), "tool_call_id tc_") {
		t.Fatalf("err %v", err)
	}
}

// TestUnclaimed: a call a harness part claims is never returned; a call
// nobody claims (made with the token outside the harness) is returned
// once, and only when it completed before the time asked.
func TestUnclaimed(t *testing.T) {
	rt := newRunTests()
	close(rt.release)
	g := startGateway(t, rt.tool())
	harness := &Stub{URL: "http://" + g.Addr(), Token: testToken, NewID: func() string { return "tc_harness" }}
	direct := &Stub{URL: "http://" + g.Addr(), Token: testToken, NewID: func() string { return "tc_direct" }}
	before := time.Now()
	for _, s := range []*Stub{harness, direct} {
		if _, err := s.Call(t.Context(), "run_tests", map[string]any{"test_path": "basics"}); err != nil {
			t.Fatal(err)
		}
	}
	g.Claim("tc_harness")
	if got := g.Unclaimed(before); len(got) != 0 {
		t.Fatalf("Unclaimed(before the calls) = %+v, want none", got)
	}
	got := g.Unclaimed(time.Now().Add(time.Second))
	if len(got) != 1 || got[0].ToolCallID != "tc_direct" || got[0].Result.Text == "" {
		t.Fatalf("Unclaimed = %+v, want the direct call with its answer", got)
	}
	if again := g.Unclaimed(time.Now().Add(time.Second)); len(again) != 0 {
		t.Fatalf("a call returned twice: %+v", again)
	}
	if n := len(g.Calls()); n != 2 {
		t.Fatalf("Calls lists %d, want 2", n)
	}
}
