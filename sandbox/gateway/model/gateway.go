package model

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
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trajlab/traj/sandbox/agent"
	"github.com/trajlab/traj/trace"
)

// Options configure a Gateway.
type Options struct {
	// Upstream is the provider's base URL including its version path
	// ("https://api.anthropic.com/v1", "http://127.0.0.1:PORT/v1").
	Upstream string
	// APIKey is the real key sent upstream; empty sends none (the scripted
	// model needs none).
	APIKey string
	// Token is the per-trajectory secret the harness must present. Required.
	Token string
	// Record receives one JSON line per model call; nil keeps none.
	Record io.Writer
	// Price computes each call's cost; nil records no cost.
	Price *agent.Price
	// MaxTokens and MaxCost are budgets over all calls (0: none). Tokens
	// count as trace.Tokens.Total: input, output, reasoning and cache.
	MaxTokens int64
	MaxCost   float64
	// Varying matches what the harness documents as varying from run to
	// run in its requests (nil: nothing): the record's normalized digest.
	Varying *regexp.Regexp
	// Parts, when set, is the recorder's part counter (how many parts
	// the trace holds, stored by the recording loop); each call records
	// it as parts_before.
	Parts *atomic.Int64
	// OnResponse, when set, is told the tool call ids each model
	// response asked for, once the harness has it: the recorder defers a
	// checkpoint while calls of its response are not recorded yet
	// (engine.ResponseTools).
	OnResponse func(toolCallIDs []string)
	// OnCallStart and OnCall, when set, are told a call began and, once
	// recorded (its sequence number set), the call without its response
	// body: the recorder attributes calls to the parts they produced
	// (engine.ModelCalls).
	OnCallStart func()
	OnCall      func(Call)
	// Prior adds up the record's calls before this gateway (a resumed
	// trajectory appends to its record): seq goes on from its LastSeq and
	// the budgets count them.
	Prior Totals
	// DialTimeout bounds connecting to the upstream. Default 5 s.
	DialTimeout time.Duration
	// MaxResponseBytes caps the verbatim response kept in the record (the
	// harness always gets all of it). Default 64 MiB.
	MaxResponseBytes int
	Logger           *slog.Logger
	Now              func() time.Time
}

// cost prices t with p (agent.Price.Cost: the rule adapters use too).
func cost(p agent.Price, t trace.Tokens) float64 {
	return p.Cost(agent.Usage{Input: t.Input, Output: t.Output, Reasoning: t.Reasoning,
		CacheRead: t.CacheRead, CacheWrite: t.CacheWrite})
}

// End reasons a Gateway can report.
const (
	ReasonTokenLimit  = trace.EndTokenLimit
	ReasonCostLimit   = trace.EndCostLimit
	ReasonUnreachable = trace.EndModelUnreachable
)

// Gateway forwards model calls upstream and records them. It is an
// http.Handler; Serve runs it on a loopback listener.
type Gateway struct {
	opts     Options
	upstream *url.URL
	client   *http.Client

	// reached is set once the upstream answered a call.
	reached atomic.Bool

	mu     sync.Mutex
	seq    int
	totals Totals
	recErr error
	done   chan struct{}
	reason string
	detail string
}

// New returns a Gateway for opts.
func New(opts Options) (*Gateway, error) {
	if opts.Token == "" {
		return nil, errors.New("model gateway: no token")
	}
	u, err := url.Parse(strings.TrimRight(opts.Upstream, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("model gateway: upstream %q: want an http(s) base URL such as https://api.anthropic.com/v1", opts.Upstream)
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 5 * time.Second
	}
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = 64 << 20
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: opts.DialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   opts.DialTimeout,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
		ResponseHeaderTimeout: 10 * time.Minute, // a model may think long before its first byte
	}
	return &Gateway{opts: opts, upstream: u, client: &http.Client{Transport: tr}, done: make(chan struct{}), seq: opts.Prior.LastSeq, totals: opts.Prior}, nil
}

// Endpoint is the upstream, for messages.
func (g *Gateway) Endpoint() string { return g.upstream.String() }

// Done is closed when the run must end: a budget was reached or the
// upstream cannot be reached. Reason says why.
func (g *Gateway) Done() <-chan struct{} { return g.done }

// Reason is the end reason (ReasonTokenLimit, ReasonCostLimit,
// ReasonUnreachable) and a sentence for people, once Done is closed.
func (g *Gateway) Reason() (reason, detail string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.reason, g.detail
}

// Totals returns what the calls so far add up to.
func (g *Gateway) Totals() Totals {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.totals
}

// RecordErr is the first error writing the record, if any.
func (g *Gateway) RecordErr() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.recErr
}

// end closes Done once, with the first reason.
// Halt ends the run from outside the gateway (a rerun's recorded calls
// are spent): as a budget does, Done closes with reason and detail, and
// every further call is refused.
func (g *Gateway) Halt(reason, detail string) { g.end(reason, detail) }

func (g *Gateway) end(reason, detail string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.reason != "" {
		return
	}
	g.reason, g.detail = reason, detail
	close(g.done)
	g.opts.Logger.Warn("model gateway ends the run", "reason", reason, "detail", detail)
}

// Check dials the upstream, so a run with an endpoint that cannot be
// reached fails before it starts, naming the endpoint.
func (g *Gateway) Check(ctx context.Context) error {
	return CheckEndpoint(ctx, g.upstream.String(), g.opts.DialTimeout)
}

// CheckEndpoint dials the host of baseURL within timeout.
func CheckEndpoint(ctx context.Context, baseURL string, timeout time.Duration) error {
	u, err := url.Parse(baseURL)
	if err != nil || u.Host == "" {
		return fmt.Errorf("model endpoint %q: not a URL", baseURL)
	}
	host := u.Host
	if u.Port() == "" {
		port := "443"
		if u.Scheme == "http" {
			port = "80"
		}
		host = net.JoinHostPort(u.Hostname(), port)
	}
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return fmt.Errorf("model endpoint %s cannot be reached: %w", baseURL, err)
	}
	return conn.Close()
}

// apiOf names the wire API of a request path, "" when not served.
func apiOf(method, path string) string {
	switch {
	case method == http.MethodPost && path == "/v1/chat/completions":
		return "chat.completions"
	case method == http.MethodPost && path == "/v1/messages":
		return "messages"
	case method == http.MethodPost && path == "/v1/responses":
		return "responses"
	case method == http.MethodGet && (path == "/v1/models" || strings.HasPrefix(path, "/v1/models/")):
		return "models"
	}
	return ""
}

// authorized reports whether r presents the token, and the header it used.
func (g *Gateway) authorized(r *http.Request) (header string, ok bool) {
	tok := []byte(g.opts.Token)
	if k := r.Header.Get("X-Api-Key"); k != "" {
		return "X-Api-Key", subtle.ConstantTimeCompare([]byte(k), tok) == 1
	}
	if a, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); found {
		return "Authorization", subtle.ConstantTimeCompare([]byte(a), tok) == 1
	}
	return "", false
}

// hopHeaders are not forwarded (RFC 9110 connection-specific fields) nor
// are the credentials, replaced by the real key, nor Accept-Encoding (the
// record needs the body uncompressed; Go's transport asks for gzip and
// decompresses).
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authorization", "Te", "Trailer",
	"Transfer-Encoding", "Upgrade", "Host", "Content-Length", "Authorization", "X-Api-Key", "Accept-Encoding"}

// ServeHTTP forwards one model call and records it.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := g.opts.Now()
	api := apiOf(r.Method, r.URL.Path)
	if api == "" {
		writeError(w, http.StatusNotFound, "not_found_error", fmt.Sprintf("traj model gateway: %s %s is not a model API this gateway serves", r.Method, r.URL.Path))
		return
	}
	authHeader, ok := g.authorized(r)
	if !ok {
		g.opts.Logger.Warn("model gateway: refused a call without the trajectory token", "path", r.URL.Path)
		writeError(w, http.StatusUnauthorized, "authentication_error", "traj model gateway: missing or wrong token")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 512<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("traj model gateway: read request: %v", err))
		return
	}
	call := Call{API: api, Method: r.Method, Path: r.URL.Path, StartedAt: trace.Timestamp(start),
		Request: DigestOf(body, g.opts.Varying)}
	var head struct {
		Model  string            `json:"model"`
		Stream bool              `json:"stream"`
		Tools  []json.RawMessage `json:"tools"`
	}
	_ = json.Unmarshal(body, &head)
	call.Model, call.Stream, call.Tools = head.Model, head.Stream, len(head.Tools)
	if g.opts.Parts != nil {
		n := int(g.opts.Parts.Load())
		call.PartsBefore = &n
	}
	if g.opts.OnCallStart != nil {
		g.opts.OnCallStart()
	}
	if reason, detail := g.Reason(); reason != "" {
		call.Status = http.StatusBadRequest
		call.Error = "refused: " + detail
		writeError(w, call.Status, "invalid_request_error", "traj model gateway: the run is over: "+detail)
		g.finish(&call, start, nil)
		return
	}

	target := g.upstream.String() + strings.TrimPrefix(r.URL.Path, "/v1")
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, target, bytes.NewReader(body))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("traj model gateway: %v", err))
		return
	}
	for k, vs := range r.Header {
		out.Header[k] = vs
	}
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	if g.opts.APIKey != "" {
		if authHeader == "X-Api-Key" {
			out.Header.Set("X-Api-Key", g.opts.APIKey)
		} else {
			out.Header.Set("Authorization", "Bearer "+g.opts.APIKey)
		}
	}
	resp, err := g.client.Do(out)
	if err != nil {
		if r.Context().Err() != nil {
			call.Status = 499 // the harness went away (an abort)
			call.Error = "client closed the request"
			g.finish(&call, start, nil)
			return
		}
		call.Status = http.StatusBadGateway
		call.Error = fmt.Sprintf("%s %s: %v", r.Method, target, err)
		writeError(w, call.Status, "api_error", "traj model gateway: the model endpoint cannot be reached: "+call.Error)
		g.finish(&call, start, nil)
		// Before any call got through the endpoint is wrong or down: end
		// the run now rather than let the harness retry for a minute.
		// Later, a failed connection is an outage the harness retries.
		if !g.reached.Load() {
			g.end(ReasonUnreachable, fmt.Sprintf("the model endpoint %s cannot be reached: %v", g.upstream, err))
		}
		return
	}
	defer resp.Body.Close()
	g.reached.Store(true)
	for k, vs := range resp.Header {
		if k == "Content-Length" || k == "Connection" || k == "Transfer-Encoding" {
			continue
		}
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	call.Status = resp.StatusCode
	flusher, _ := w.(http.Flusher)
	var kept bytes.Buffer
	buf := make([]byte, 32<<10)
	first := true
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if first {
				ms := msSince(g.opts.Now(), start)
				call.FirstByteMS = &ms
				first = false
			}
			room := g.opts.MaxResponseBytes - kept.Len()
			kept.Write(buf[:max(0, min(n, room))])
			if n > room {
				call.ResponseTruncated = true
			}
			if _, werr := w.Write(buf[:n]); werr != nil {
				call.Error = "write to the harness: " + werr.Error()
				break
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			call.Error = "read upstream response: " + rerr.Error()
			break
		}
	}
	g.finish(&call, start, kept.Bytes())
}

// finish fills the call's usage from the response, adds it to the totals,
// checks the budgets and appends the call to the record.
func (g *Gateway) finish(call *Call, start time.Time, resp []byte) {
	call.LatencyMS = msSince(g.opts.Now(), start)
	call.Response = string(resp)
	if call.Status < 400 && len(resp) > 0 {
		if u, ok := parseResponse(call.API, resp); ok {
			call.ResponseID, call.ToolCallIDs, call.Outputs = u.id, u.toolCallIDs, u.outputs
			if g.opts.OnResponse != nil {
				g.opts.OnResponse(u.toolCallIDs)
			}
			if u.hasUsage {
				t := u.tokens
				call.Tokens = &t
				if g.opts.Price != nil {
					c := cost(*g.opts.Price, t)
					call.Cost = &c
				}
			}
		}
	}
	g.mu.Lock()
	g.seq++
	call.Seq = g.seq
	g.totals.Add(*call)
	totals := g.totals
	var line []byte
	if g.opts.Record != nil {
		var err error
		if line, err = json.Marshal(call); err == nil {
			line = append(line, '\n')
			_, err = g.opts.Record.Write(line)
		}
		if err != nil && g.recErr == nil {
			g.recErr = fmt.Errorf("write model-call record: %w", err)
			g.opts.Logger.Error("model gateway: record", "err", err)
		}
	}
	g.mu.Unlock()
	if g.opts.OnCall != nil {
		c := *call
		c.Response = ""
		g.opts.OnCall(c)
	}
	g.opts.Logger.Debug("model call", "seq", call.Seq, "api", call.API, "status", call.Status,
		"latency_ms", call.LatencyMS, "model", call.Model)
	if g.opts.MaxTokens > 0 && totals.Tokens.Total() >= g.opts.MaxTokens {
		g.end(ReasonTokenLimit, fmt.Sprintf("the model calls used %d tokens, the budget is %d (--max-tokens)", totals.Tokens.Total(), g.opts.MaxTokens))
	}
	if g.opts.MaxCost > 0 && totals.Cost >= g.opts.MaxCost {
		g.end(ReasonCostLimit, fmt.Sprintf("the model calls cost $%.4f, the budget is $%.4f (--max-cost)", totals.Cost, g.opts.MaxCost))
	}
}

func msSince(now, start time.Time) float64 {
	return float64(now.Sub(start).Microseconds()) / 1000
}

// writeError answers in a shape both OpenAI and Anthropic clients read:
// {"type":"error","error":{"type":…,"message":…}}.
func writeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
}

// Listen opens a loopback listener on addr ("127.0.0.1:0" for any port);
// other addresses are refused: the gateway holds the real key.
func Listen(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("model gateway address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("model gateway address %q: only loopback addresses are allowed", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("model gateway: listen on %s: %w", addr, err)
	}
	return ln, nil
}

// Serve answers on ln until ctx ends, then shuts down (in-flight calls get
// a few seconds).
func (g *Gateway) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: g, ReadHeaderTimeout: 30 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		if hs.Shutdown(sctx) != nil {
			_ = hs.Close()
		}
	}()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("model gateway: serve: %w", err)
	}
	return nil
}
