package tool

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Tool is one tool the gateway executes.
type Tool struct {
	// Name is the MCP tool name (e.g. "run_tests").
	Name string `json:"name"`
	// Description is shown to the model.
	Description string `json:"description"`
	// InputSchema is the tool's JSON Schema for its arguments (an object).
	InputSchema json.RawMessage `json:"input_schema"`
	// Run executes one call. It gets the gateway's context (a dropped
	// connection does not cancel it) and the raw arguments.
	Run func(ctx context.Context, args json.RawMessage) Result `json:"-"`
}

// Result is a tool's answer: text for the model, and whether it is an
// error result.
type Result struct {
	Text    string `json:"text"`
	IsError bool   `json:"is_error"`
}

// Call is one completed tool call, as listed by Calls and recorded.
type Call struct {
	ToolCallID string          `json:"tool_call_id"`
	Tool       string          `json:"tool"`
	Arguments  json.RawMessage `json:"arguments"`
	Start      time.Time       `json:"start"`
	DurationMS int64           `json:"duration_ms"`
	Result     Result          `json:"result"`
	// Joined counts the requests beyond the first that got this answer
	// (retries that joined the call in flight or came after it).
	Joined int `json:"joined"`
}

// Options configure a Gateway.
type Options struct {
	// Token is the per-trajectory token a request must present.
	Token string
	// Tools are the tools served.
	Tools []Tool
	// Record, when set, receives one JSON line per completed call.
	Record io.Writer
	// Logger receives diagnostics; nil discards.
	Logger *slog.Logger
}

// Gateway executes tool calls for the stub in the sandbox.
type Gateway struct {
	opts  Options
	tools map[string]Tool
	log   *slog.Logger
	ctx   context.Context
	stop  context.CancelFunc
	srv   *http.Server
	ln    net.Listener
	wg    sync.WaitGroup

	mu    sync.Mutex
	calls map[string]*flight
	done  []*flight
}

// flight is one logical call: in flight until done is closed.
type flight struct {
	call Call
	args []byte
	done chan struct{}
	// end is when the call completed; claimed: a harness part carries it;
	// taken: Unclaimed has returned it.
	end            time.Time
	claimed, taken bool
}

// New checks opts and returns a Gateway; Listen or ServeHTTP serve it.
func New(opts Options) (*Gateway, error) {
	if opts.Token == "" {
		return nil, errors.New("tool gateway: empty token")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	g := &Gateway{opts: opts, tools: map[string]Tool{}, log: opts.Logger, calls: map[string]*flight{}}
	for _, t := range opts.Tools {
		if t.Name == "" || t.Run == nil {
			return nil, fmt.Errorf("tool gateway: tool %q has no name or no Run", t.Name)
		}
		if _, dup := g.tools[t.Name]; dup {
			return nil, fmt.Errorf("tool gateway: tool %q twice", t.Name)
		}
		g.tools[t.Name] = t
	}
	g.ctx, g.stop = context.WithCancel(context.Background())
	return g, nil
}

// Listen serves on addr (e.g. "127.0.0.1:0") until Close; Addr says where.
func (g *Gateway) Listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen tool gateway %s: %w", addr, err)
	}
	g.ln = ln
	g.srv = &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		if err := g.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			g.log.Error("tool gateway", "err", err)
		}
	}()
	return nil
}

// Addr is the listening address ("127.0.0.1:PORT").
func (g *Gateway) Addr() string {
	if g.ln == nil {
		return ""
	}
	return g.ln.Addr().String()
}

// Close stops serving and cancels the calls still running.
func (g *Gateway) Close() error {
	g.stop()
	var err error
	if g.srv != nil {
		err = g.srv.Close()
	}
	g.wg.Wait()
	return err
}

// Calls lists the completed calls in completion order, each once.
func (g *Gateway) Calls() []Call {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]Call, len(g.done))
	for i, f := range g.done {
		out[i] = f.call
	}
	return out
}

// request is the body of POST /v1/tools/{name}.
type request struct {
	ToolCallID string          `json:"tool_call_id"`
	Arguments  json.RawMessage `json:"arguments"`
}

// response is the answer to POST /v1/tools/{name}.
type response struct {
	ToolCallID string `json:"tool_call_id"`
	Result
}

// ServeHTTP implements http.Handler.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !g.authorized(r) {
		httpError(w, http.StatusUnauthorized, "missing or wrong tool gateway token")
		return
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/tools":
		list := make([]Tool, 0, len(g.opts.Tools))
		list = append(list, g.opts.Tools...)
		writeJSON(w, http.StatusOK, list)
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/tools/"):
		g.serveCall(w, r, strings.TrimPrefix(r.URL.Path, "/v1/tools/"))
	default:
		httpError(w, http.StatusNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
	}
}

func (g *Gateway) authorized(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(g.opts.Token)) == 1
}

func (g *Gateway) serveCall(w http.ResponseWriter, r *http.Request, name string) {
	t, ok := g.tools[name]
	if !ok {
		httpError(w, http.StatusNotFound, fmt.Sprintf("unknown tool %q", name))
		return
	}
	var req request
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		httpError(w, http.StatusBadRequest, "decode tool call: "+err.Error())
		return
	}
	if req.ToolCallID == "" {
		httpError(w, http.StatusBadRequest, "tool_call_id is required")
		return
	}
	if len(req.Arguments) == 0 {
		req.Arguments = json.RawMessage("{}")
	}
	f, status, msg := g.join(t, req)
	if status != 0 {
		httpError(w, status, msg)
		return
	}
	select {
	case <-f.done:
		writeJSON(w, http.StatusOK, response{ToolCallID: req.ToolCallID, Result: f.call.Result})
	case <-r.Context().Done():
		// The caller left; the call goes on and its answer waits for the retry.
	case <-g.ctx.Done():
		httpError(w, http.StatusServiceUnavailable, "tool gateway closing")
	}
}

// join returns the flight for req's id, starting the call if it is new.
func (g *Gateway) join(t Tool, req request) (*flight, int, string) {
	args := compact(req.Arguments)
	g.mu.Lock()
	defer g.mu.Unlock()
	if f, ok := g.calls[req.ToolCallID]; ok {
		if f.call.Tool != t.Name || !bytes.Equal(f.args, args) {
			return nil, http.StatusConflict, fmt.Sprintf("tool_call_id %q was used for another call", req.ToolCallID)
		}
		f.call.Joined++
		g.log.Info("tool call retried", "tool", t.Name, "tool_call_id", req.ToolCallID)
		return f, 0, ""
	}
	f := &flight{
		call: Call{ToolCallID: req.ToolCallID, Tool: t.Name, Arguments: json.RawMessage(args), Start: time.Now()},
		args: args,
		done: make(chan struct{}),
	}
	g.calls[req.ToolCallID] = f
	g.wg.Add(1)
	go g.run(t, f)
	return f, 0, ""
}

func (g *Gateway) run(t Tool, f *flight) {
	defer g.wg.Done()
	g.log.Info("tool call", "tool", t.Name, "tool_call_id", f.call.ToolCallID)
	res := t.Run(context.WithValue(g.ctx, callIDKey{}, f.call.ToolCallID), f.call.Arguments)
	g.mu.Lock()
	f.call.Result = res
	f.end = time.Now()
	f.call.DurationMS = f.end.Sub(f.call.Start).Milliseconds()
	g.done = append(g.done, f)
	call := f.call
	close(f.done)
	if g.opts.Record != nil {
		if line, err := json.Marshal(call); err == nil {
			if _, err := g.opts.Record.Write(append(line, '\n')); err != nil {
				g.log.Error("record tool call", "tool_call_id", call.ToolCallID, "err", err)
			}
		}
	}
	g.mu.Unlock()
}

// Claim marks the call toolCallID as carried by a harness part: the
// recorder found it in a tool result the harness reported, so Unclaimed
// never returns it.
func (g *Gateway) Claim(toolCallID string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if f, ok := g.calls[toolCallID]; ok {
		f.claimed = true
	}
}

// Unclaimed returns, once each and in completion order, the completed
// calls that no harness part claimed and that completed before t: calls
// that did not come through the harness (the agent used the stub's token
// itself), for the recorder to take into the trace.
func (g *Gateway) Unclaimed(t time.Time) []Call {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []Call
	for _, f := range g.done {
		if !f.claimed && !f.taken && f.end.Before(t) {
			f.taken = true
			out = append(out, f.call)
		}
	}
	return out
}

type callIDKey struct{}

// CallID is the tool_call_id of the call a Tool.Run serves ("" outside
// one): a tool that keeps more than it answers files it under this id.
func CallID(ctx context.Context) string {
	id, _ := ctx.Value(callIDKey{}).(string)
	return id
}

func compact(raw json.RawMessage) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func httpError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}
