// Package playback is the model a rerun talks to: it answers a harness's
// model calls with the responses a recorded trajectory received
// (model_calls.jsonl of the model gateway, package
// sandbox/gateway/model), verbatim, and never calls a provider. It sits
// where a provider or the scripted model would, behind the run's model
// gateway, so the rerun is recorded like any run.
//
// # Which recorded call answers a request
//
// Only calls the upstream answered are played (not the gateway's own
// refusals, calls the harness abandoned before an answer, or an endpoint
// that could not be reached). A request is answered by an unplayed call
// with the same path and model: the one whose request digest is the
// request's (a harness that sends the same conversation), else the
// earliest. A request equal once the fields the harness documents as
// varying from run to run are blanked (Options.Varying: OpenCode's
// session ids) counts as the same bytes. The second case is a divergence of the request, kept with the
// recorded and the new digest and size (Status): a field that varies
// from run to run (a date in a system prompt) is enough, and the record
// keeps digests only, so what differs cannot be said beyond the size;
// whether the *parts* differ is the rerun's comparison's to say. Two
// models (OpenCode's title requests go to the small model) keep their own
// order, so a request racing another does not take its answer.
//
// A fork (Options.ForkAt, Then) plays the calls that started before the
// source held ForkAt parts (Options.Placed: placed by the source trace's
// part → call attribution, calls.Placement), then hands the harness's next request, and
// every one after it, to the new upstream.
//
// A request no unplayed call answers (the harness asks for more than the
// source recorded, or for a model or path it never used) gets a
// non-retryable 400 that says so, and Options.OnSpent is called, which
// ends the run (trace.EndRecordedCallsSpent). A recorded response the
// gateway truncated (over its size cap) cannot be played: the same.
package playback

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
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/trajlab/traj/sandbox/gateway/model"
	"github.com/trajlab/traj/sandbox/gateway/model/calls"
)

// Load reads the calls of a model-call record a rerun can play
// (calls.LoadAnswered).
func Load(path string) ([]model.Call, error) { return calls.LoadAnswered(path) }

// Answered says whether the upstream answered call c (calls.Answered).
func Answered(c model.Call) bool { return calls.Answered(c) }

// Options configure a Server.
type Options struct {
	// OnSpent is called once, when a request finds no recorded call to
	// answer it (detail says why).
	OnSpent func(detail string)
	// ForkAt and Then make a fork (traj run --fork): recorded calls are
	// played while the source held fewer than ForkAt parts when they
	// started (Placed); the first request that would take a later
	// call, or finds none, and every request after it go to the upstream
	// Then (a base URL, as the model gateway's Upstream), headers and
	// body as they came.
	ForkAt int
	Then   string
	// Placed places the recorded calls among the source's parts: the
	// source trace's part → call attribution, parts_before without one
	// (calls.Place); a harness can ask before traj records the part that
	// ended (Codex), so parts_before alone can lag.
	Placed calls.Placement
	// Varying matches what the harness documents as varying from run to
	// run (the model gateway's Options.Varying): a request equal to a
	// recorded one but there is no divergence.
	Varying *regexp.Regexp
	// Models maps a request's model to the recorded calls' (a fork's
	// harness asks for its new model from the first call on, the
	// recorded calls name the source's).
	Models map[string]string
	Logger *slog.Logger
}

// Divergence is a request answered by a recorded call whose request was
// not the same bytes.
type Divergence struct {
	// Request is the rerun's request number (1-based, in arrival order);
	// Seq the recorded call that answered it.
	Request int    `json:"request"`
	Seq     int    `json:"seq"`
	Path    string `json:"path"`
	Model   string `json:"model,omitempty"`
	// Recorded and Got are the two requests' digests.
	Recorded model.Digest `json:"recorded"`
	Got      model.Digest `json:"got"`
	Why      string       `json:"why"`
}

// Status is what the server played so far.
type Status struct {
	Recorded, Played int
	// Divergences are the requests that were not the recorded bytes, in
	// arrival order.
	Divergences []Divergence
	// Spent says why a request found no call (empty while none did).
	Spent string
	// SwitchedAt is the request (1-based) a fork's new upstream answered
	// first; 0 while the recorded calls answer.
	SwitchedAt int
}

// Remaining is how many recorded calls are not played yet.
func (s Status) Remaining() int { return s.Recorded - s.Played }

// Server plays recorded calls. It is an http.Handler; Serve runs it.
type Server struct {
	opts Options

	mu       sync.Mutex
	calls    []model.Call
	played   []bool
	requests int
	st       Status
	spent    bool
	then     *httputil.ReverseProxy
	switched bool
}

// New returns a Server playing calls (in the record's order).
func New(calls []model.Call, opts Options) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: opts, calls: calls, played: make([]bool, len(calls)), st: Status{Recorded: len(calls)}}
	if opts.ForkAt > 0 {
		u, err := url.Parse(strings.TrimRight(opts.Then, "/"))
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("fork: upstream %q: want a base URL", opts.Then)
		}
		s.then = &httputil.ReverseProxy{
			Rewrite: func(r *httputil.ProxyRequest) {
				r.SetURL(u)
				r.Out.URL.Path = u.Path + strings.TrimPrefix(r.In.URL.Path, "/v1")
				r.Out.URL.RawPath = ""
				r.Out.Host = u.Host
			},
			FlushInterval: -1, // a stream goes through as it comes
		}
	}
	return s, nil
}

// BaseURL is the upstream base URL of a Server listening on addr.
func BaseURL(addr net.Addr) string { return "http://" + addr.String() + "/v1" }

// Status reports what was played so far.
func (s *Server) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	st.Divergences = append([]Divergence(nil), s.st.Divergences...)
	return st
}

// ServeHTTP answers one request with its recorded call.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("traj playback: read request: %v", err))
		return
	}
	var head struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(body, &head)
	got := model.DigestOf(body, s.opts.Varying)
	mdl := head.Model
	if m, ok := s.opts.Models[mdl]; ok {
		mdl = m
	}
	c, ok, fork := s.take(r.Method, r.URL.Path, mdl, got)
	if fork {
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		s.then.ServeHTTP(w, r)
		return
	}
	if !ok {
		s.refuse(w)
		return
	}
	ct := "application/json"
	if c.Stream || isSSE(c.Response) {
		ct = "text/event-stream"
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(c.Status)
	_, _ = w.Write([]byte(c.Response))
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// take finds and marks the recorded call answering a request; false when
// none does (the reason is kept in the status). fork: a fork's new
// upstream answers it.
func (s *Server) take(method, path, mdl string, got model.Digest) (_ model.Call, ok, fork bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	if s.switched {
		return model.Call{}, false, true
	}
	first := -1
	for i, c := range s.calls {
		if s.played[i] || c.Method != method || c.Path != path || c.Model != mdl {
			continue
		}
		if c.Request.Same(got) {
			first = i
			break
		}
		if first < 0 {
			first = i
		}
	}
	if s.then != nil && (first < 0 || !s.opts.Placed.StartedBefore(s.calls[first], s.opts.ForkAt)) {
		s.switched, s.st.SwitchedAt = true, s.requests
		s.opts.Logger.Info("fork: the new upstream answers from here", "request", s.requests)
		return model.Call{}, false, true
	}
	if first < 0 {
		switch {
		case s.st.Played == s.st.Recorded:
			s.st.Spent = fmt.Sprintf("the harness asked for model call %d; the source recorded %d, all played", s.requests, s.st.Recorded)
		default:
			s.st.Spent = fmt.Sprintf("the harness asked for model call %d (%s %s, model %q); no unplayed recorded call is one (%d of %d played)",
				s.requests, method, path, mdl, s.st.Played, s.st.Recorded)
		}
		return model.Call{}, false, false
	}
	c := s.calls[first]
	if c.Cut > 0 {
		s.st.Spent = fmt.Sprintf("recorded model call %d is a record line of %d bytes, over the %d a reader holds (model.MaxLineBytes): it was read with its strings cut and cannot be played", c.Seq, c.Cut, model.MaxLineBytes)
		return model.Call{}, false, false
	}
	if c.ResponseTruncated {
		s.st.Spent = fmt.Sprintf("recorded model call %d was kept truncated (over the gateway's size cap): it cannot be played", c.Seq)
		return model.Call{}, false, false
	}
	s.played[first] = true
	s.st.Played++
	if !c.Request.Same(got) {
		d := Divergence{Request: s.requests, Seq: c.Seq, Path: path, Model: mdl, Recorded: c.Request, Got: got,
			Why: got.Differs(c.Request)}
		s.st.Divergences = append(s.st.Divergences, d)
		s.opts.Logger.Info("playback: a request differs from the recorded one", "request", d.Request, "seq", d.Seq,
			"bytes", got.Bytes, "recorded_bytes", c.Request.Bytes)
	}
	return c, true, false
}

// refuse answers a request no recorded call answers, and reports the end
// once.
func (s *Server) refuse(w http.ResponseWriter) {
	s.mu.Lock()
	detail, first := s.st.Spent, !s.spent
	s.spent = true
	s.mu.Unlock()
	writeError(w, http.StatusBadRequest, "traj playback: "+detail)
	if first && s.opts.OnSpent != nil {
		s.opts.OnSpent(detail)
	}
}

// Serve answers requests on ln until ctx is cancelled.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = hs.Shutdown(sctx)
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

func readBody(r *http.Request) ([]byte, error) {
	var b bytes.Buffer
	_, err := b.ReadFrom(http.MaxBytesReader(nil, r.Body, 512<<20))
	return b.Bytes(), err
}

// isSSE says whether a recorded body is a server-sent event stream.
func isSSE(body string) bool {
	return strings.HasPrefix(body, "data:") || strings.HasPrefix(body, "event:") || strings.HasPrefix(body, ":")
}

// writeError answers in a shape the OpenAI and Anthropic clients read, as
// the model gateway does; 400 so no harness retries.
func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": "invalid_request_error", "message": msg}})
	_, _ = w.Write(b)
}
