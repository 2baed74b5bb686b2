package scripted

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Options tune a Server. The zero value is usable.
type Options struct {
	// Models are listed by /v1/models. Default: "demo", "small".
	Models []string
	// SideModels are models whose requests are side requests (title or
	// summary generation): answered with SideText, never consuming the
	// script. Default: "small".
	SideModels []string
	// SideText answers side requests. Default: "Scripted session".
	SideText string
	// ChunkRunes is the size of streamed text and argument deltas.
	// Default 24.
	ChunkRunes int
	// RequestLog, when set, receives every request body as one JSON line,
	// to see exactly what the agent sent.
	RequestLog io.Writer
	// Logger receives one record per request. Default: discard.
	Logger *slog.Logger
	// Now stamps the "created" field. Default: time.Now.
	Now func() time.Time
	// Skip is how many of the script's responses were played already: a
	// fork that continues its source's script starts past them
	// (PlayedLine counts them in the source's record).
	Skip int
}

// defaultSideText answers side requests unless Options.SideText says
// otherwise; ownPrefix opens the answers of an exhausted or diverged
// script. PlayedLine tells both from a script's responses.
const (
	defaultSideText = "Scripted session"
	ownPrefix       = "Scripted model: "
)

// PlayedLine says whether a recorded reply of a Server with the default
// side text (its HTTP status, and its text and tool calls as the model
// gateway's Assemble puts them back together) played a line of the
// script: a side request's answer and the exhausted or diverged answers
// play none. A fork that continues its source's script counts them
// (Options.Skip).
func PlayedLine(status int, text string, toolCalls int) bool {
	if status >= 400 {
		return true // an "error" line
	}
	if toolCalls > 0 {
		return true
	}
	return text != defaultSideText && !strings.HasPrefix(text, ownPrefix)
}

func (o *Options) fill() {
	if len(o.Models) == 0 {
		o.Models = []string{"demo", "small"}
	}
	if o.SideModels == nil {
		o.SideModels = []string{"small"}
	}
	if o.SideText == "" {
		o.SideText = defaultSideText
	}
	if o.ChunkRunes <= 0 {
		o.ChunkRunes = 24
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Server plays a Script back as an OpenAI-compatible chat-completions API.
// It is safe for concurrent use; the script position is shared by all
// requests and advances once per played response.
type Server struct {
	script *Script
	opts   Options
	mux    *http.ServeMux

	mu        sync.Mutex
	next      int // index of the next response to play
	seq       int // completions served, for ids
	side      int
	diverged  int
	exhausted int
	logMu     sync.Mutex
}

// Status is a snapshot of a Server's progress.
type Status struct {
	Played    int // script responses played
	Remaining int // script responses not yet played
	Side      int // side requests answered
	Diverged  int // requests answered with a divergence message
	Exhausted int // requests answered after the script ran out
}

// New returns a Server playing script.
func New(script *Script, opts Options) *Server {
	opts.fill()
	s := &Server{script: script, opts: opts, mux: http.NewServeMux(), next: min(max(opts.Skip, 0), len(script.Responses))}
	s.mux.HandleFunc("GET /v1/models", s.handleModels)
	s.mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
	s.mux.HandleFunc("POST /v1/messages", s.handleMessages)
	s.mux.HandleFunc("POST /v1/responses", s.handleResponses)
	s.mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
	})
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Status reports how far the script has been played.
func (s *Server) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Status{Played: s.next, Remaining: len(s.script.Responses) - s.next, Side: s.side,
		Diverged: s.diverged, Exhausted: s.exhausted}
}

// BaseURL is the OpenAI base URL (ending in /v1) for a listener address.
func BaseURL(addr net.Addr) string { return "http://" + addr.String() + "/v1" }

// Serve answers requests on ln until ctx is cancelled, then shuts down.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if hs.Shutdown(sctx) != nil {
				_ = hs.Close() // a held-back (delay_ms) reply must not keep us alive
			}
		case <-done:
		}
	}()
	err := hs.Serve(ln)
	close(done)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

func (s *Server) handleModels(w http.ResponseWriter, _ *http.Request) {
	list := modelList{Object: "list"}
	created := s.opts.Now().Unix()
	for _, m := range s.opts.Models {
		list.Data = append(list.Data, modelInfo{ID: m, Object: "model", Created: created, OwnedBy: "scripted"})
	}
	writeJSON(w, http.StatusOK, list)
}

// request is what playback needs from a request of any wire API.
type request struct {
	model string
	tools []offeredTool
	// lastInput is the text of the last user message or tool result.
	lastInput string
	// sidePrompt marks a bookkeeping request (title, summary, compaction)
	// recognised by its shape; side models are checked by the Server.
	sidePrompt bool
	// callPrefix starts the ids of the reply's tool calls ("call_", "toolu_").
	callPrefix string
}

// offeredTool is a tool the request offers, with its JSON Schema.
type offeredTool struct {
	name   string
	schema json.RawMessage
	// namespace groups the tool in a Responses request (Codex's MCP and
	// sub-agent tools); the reply's function_call names it.
	namespace string
}

// reply is what one completion says, before it is put on the wire.
type reply struct {
	id        string
	seq       int
	reasoning string
	text      string
	tools     []ToolCall
	callIDs   []string
	usage     Usage
	kind      string // "script", "side", "exhausted", "diverged"
	line      int
	delay     time.Duration
	err       *ErrorReply
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	body, ok := s.readBody(w, r, writeError)
	if !ok {
		return
	}
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("decode request: %v", err))
		return
	}
	rep := s.pick(req.view(), body, "chatcmpl-scripted-")
	s.logReply("chat.completions", rep, req.Model, req.Stream, len(req.Tools))
	if !s.hold(r, rep) {
		return
	}
	if rep.err != nil {
		writeJSON(w, rep.err.Status, apiError{Error: apiErrorBody{Message: rep.err.Message, Type: errorType(rep.err.Status)}})
		return
	}
	if req.Stream {
		s.writeStream(w, &req, rep)
		return
	}
	s.writeCompletion(w, &req, rep)
}

// readBody reads a request body (at most 64 MiB) and logs it; on error it
// answers with writeErr and reports false.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, writeErr func(http.ResponseWriter, int, string)) ([]byte, bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		writeErr(w, http.StatusBadRequest, fmt.Sprintf("read request: %v", err))
		return nil, false
	}
	s.logRequest(body)
	return body, true
}

func (s *Server) logReply(api string, rep reply, model string, stream bool, offered int) {
	s.opts.Logger.Info("scripted completion", "api", api, "kind", rep.kind, "line", rep.line, "model", model,
		"stream", stream, "tools_offered", offered, "tool_calls", len(rep.tools))
}

// hold waits out the reply's delay; false means the client went away.
func (s *Server) hold(r *http.Request, rep reply) bool {
	if rep.delay <= 0 {
		return true
	}
	select {
	case <-time.After(rep.delay):
		return true
	case <-r.Context().Done():
		return false // the agent gave up (abort); nothing to answer
	}
}

// pick chooses the reply for req and advances the script when it plays a
// scripted response.
func (s *Server) pick(req request, body []byte, idPrefix string) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	rep := reply{id: fmt.Sprintf("%s%d", idPrefix, s.seq), seq: s.seq}
	switch {
	case s.isSide(req):
		s.side++
		rep.kind, rep.text = "side", s.opts.SideText
	case s.next >= len(s.script.Responses):
		s.exhausted++
		rep.kind = "exhausted"
		rep.text = fmt.Sprintf(ownPrefix+"the script %s is exhausted (all %d responses were played). Nothing more to do.",
			s.script.Name, len(s.script.Responses))
		s.opts.Logger.Warn("scripted model: script exhausted", "script", s.script.Name, "responses", len(s.script.Responses))
	default:
		resp := s.script.Responses[s.next]
		rep.line = resp.Line
		if err := check(resp, req); err != nil {
			s.diverged++
			rep.kind = "diverged"
			rep.text = fmt.Sprintf(ownPrefix+"the run diverged from the script at %s:%d: %v.", s.script.Name, resp.Line, err)
			s.opts.Logger.Error("scripted model: run diverged from the script", "script", s.script.Name, "line", resp.Line, "err", err)
			break
		}
		s.next++
		rep.kind = "script"
		rep.delay = time.Duration(resp.DelayMS) * time.Millisecond
		if resp.Error != nil {
			rep.kind, rep.err = "error", resp.Error
			return rep
		}
		rep.reasoning, rep.text, rep.tools = resp.Reasoning, resp.Text, resp.Tools
		for i := range resp.Tools {
			rep.callIDs = append(rep.callIDs, fmt.Sprintf("%s%d_%d", req.callPrefix, s.seq, i))
		}
		if resp.Usage != nil {
			rep.usage = *resp.Usage
			return rep
		}
	}
	rep.usage = estimateUsage(body, rep)
	return rep
}

// sidePrompts open the prompts of OpenCode's (1.18) own bookkeeping
// requests: session titles, context compaction, session summaries. They mark
// a side request (when no tools are offered) even on the main model, e.g.
// when no small model is configured.
var sidePrompts = []string{
	"You are a title generator",
	"You are a context summarization agent",
	"Summarize what was done in this conversation",
}

func (s *Server) isSide(req request) bool {
	return slices.Contains(s.opts.SideModels, req.model) || req.sidePrompt
}

// chatSidePrompt reports a tool-less chat request whose system or user
// prompt opens like one of OpenCode's bookkeeping prompts.
func chatSidePrompt(req *chatRequest) bool {
	if len(req.Tools) > 0 {
		return false
	}
	for _, m := range req.Messages {
		if m.Role != "system" && m.Role != "user" {
			continue
		}
		text := strings.TrimSpace(contentText(m.Content))
		for _, p := range sidePrompts {
			if strings.HasPrefix(text, p) {
				return true
			}
		}
	}
	return false
}

// check reports why resp cannot answer req, or nil.
func check(resp Response, req request) error {
	offered := make([]string, 0, len(req.tools))
	for _, t := range req.tools {
		offered = append(offered, t.name)
	}
	for _, tc := range resp.Tools {
		i := slices.Index(offered, tc.Name)
		if i < 0 {
			return fmt.Errorf("the response calls tool %q but the request offers %s", tc.Name, listOrNone(offered))
		}
		if err := validateArgs(tc.Name, req.tools[i].schema, tc.Args); err != nil {
			return err
		}
	}
	e := resp.Expect
	if e == nil {
		return nil
	}
	for _, name := range e.Tools {
		if !slices.Contains(offered, name) {
			return fmt.Errorf("expected the request to offer tool %q, it offers %s", name, listOrNone(offered))
		}
	}
	if e.Model != "" && e.Model != req.model {
		return fmt.Errorf("expected model %q, the request is for %q", e.Model, req.model)
	}
	if e.Contains != "" && !strings.Contains(req.lastInput, e.Contains) {
		return fmt.Errorf("expected the last user or tool message to contain %q, it is %q", e.Contains, clip(req.lastInput, 200))
	}
	return nil
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "no tools"
	}
	return "[" + strings.Join(names, ", ") + "]"
}

// contentText flattens a message content (a string or a list of parts).
func contentText(raw json.RawMessage) string {
	var str string
	if json.Unmarshal(raw, &str) == nil {
		return str
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return string(raw)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func (s *Server) logRequest(body []byte) {
	if s.opts.RequestLog == nil {
		return
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	var compact bytes.Buffer
	if err := json.Compact(&compact, body); err != nil {
		compact.Reset()
		b, _ := json.Marshal(string(body))
		compact.Write(b)
	}
	compact.WriteByte('\n')
	_, _ = s.opts.RequestLog.Write(compact.Bytes())
}

func finishReason(rep reply) string {
	if len(rep.tools) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func (rep reply) wireUsage() *wireUsage {
	u := rep.usage
	return &wireUsage{
		PromptTokens:            u.PromptTokens,
		CompletionTokens:        u.CompletionTokens,
		TotalTokens:             u.PromptTokens + u.CompletionTokens,
		PromptTokensDetails:     &promptTokensDetails{CachedTokens: u.CachedTokens},
		CompletionTokensDetails: &completionTokensDetails{ReasoningTokens: u.ReasoningTokens},
	}
}

func (s *Server) writeCompletion(w http.ResponseWriter, req *chatRequest, rep reply) {
	msg := &wireMessage{Role: "assistant"}
	if rep.text != "" || len(rep.tools) == 0 {
		msg.Content = &rep.text
	}
	if rep.reasoning != "" {
		msg.ReasoningContent = &rep.reasoning
	}
	for i, tc := range rep.tools {
		msg.ToolCalls = append(msg.ToolCalls, wireToolCall{
			ID: rep.callIDs[i], Type: "function",
			Function: wireFunction{Name: tc.Name, Arguments: string(tc.Args)},
		})
	}
	fr := finishReason(rep)
	writeJSON(w, http.StatusOK, completion{
		ID: rep.id, Object: "chat.completion", Created: s.opts.Now().Unix(), Model: req.Model,
		Choices: []completionChoice{{Index: 0, Message: msg, FinishReason: &fr}},
		Usage:   rep.wireUsage(),
	})
}

func (s *Server) writeStream(w http.ResponseWriter, req *chatRequest, rep reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	created := s.opts.Now().Unix()
	send := func(choices []completionChoice, usage *wireUsage) {
		if choices == nil {
			choices = []completionChoice{}
		}
		b, _ := json.Marshal(completion{ID: rep.id, Object: "chat.completion.chunk", Created: created,
			Model: req.Model, Choices: choices, Usage: usage})
		fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	delta := func(m *wireMessage) { send([]completionChoice{{Delta: m}}, nil) }

	delta(&wireMessage{Role: "assistant"})
	for _, piece := range chunks(rep.reasoning, s.opts.ChunkRunes) {
		delta(&wireMessage{ReasoningContent: &piece})
	}
	for _, piece := range chunks(rep.text, s.opts.ChunkRunes) {
		delta(&wireMessage{Content: &piece})
	}
	for i, tc := range rep.tools {
		idx := i
		delta(&wireMessage{ToolCalls: []wireToolCall{{Index: &idx, ID: rep.callIDs[i], Type: "function",
			Function: wireFunction{Name: tc.Name, Arguments: ""}}}})
		for _, piece := range chunks(string(tc.Args), s.opts.ChunkRunes) {
			delta(&wireMessage{ToolCalls: []wireToolCall{{Index: &idx, Function: wireFunction{Arguments: piece}}}})
		}
	}
	fr := finishReason(rep)
	send([]completionChoice{{Delta: &wireMessage{}, FinishReason: &fr}}, nil)
	send(nil, rep.wireUsage())
	fmt.Fprint(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}

// chunks splits s into pieces of at most n runes.
func chunks(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		cut, count := 0, 0
		for i := range s {
			if count == n {
				cut = i
				break
			}
			count++
		}
		if count < n || cut == 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return out
}

// errorType is OpenAI's error type for an HTTP status.
func errorType(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, apiError{Error: apiErrorBody{Message: msg, Type: "invalid_request_error"}})
}
