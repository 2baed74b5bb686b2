package opencode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Username is the basic-auth user OpenCode expects with
// OPENCODE_SERVER_PASSWORD.
const Username = "opencode"

// Sentinel errors for HTTP statuses callers act on.
var (
	ErrNotFound     = errors.New("not found")
	ErrUnauthorized = errors.New("unauthorized")
)

// APIError is a non-2xx answer. It wraps ErrNotFound (404) or
// ErrUnauthorized (401) so errors.Is works.
type APIError struct {
	Method, Path string
	Status       int
	Body         string // first 2 KiB
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s %s: %d %s: %s", e.Method, e.Path, e.Status, http.StatusText(e.Status), strings.TrimSpace(e.Body))
}

func (e *APIError) Unwrap() error {
	switch e.Status {
	case http.StatusNotFound:
		return ErrNotFound
	case http.StatusUnauthorized:
		return ErrUnauthorized
	}
	return nil
}

// Client talks to one `opencode serve` over HTTP with basic auth. It is
// safe for concurrent use.
type Client struct {
	base     string
	password string
	http     *http.Client
	// stream has no overall timeout (the event stream stays open).
	stream *http.Client
	ids    idGen

	promptAttempts int
	promptInterval time.Duration
}

// NewClient returns a client for baseURL (http://127.0.0.1:PORT); an
// empty password sends no credentials.
func NewClient(baseURL, password string) *Client {
	return &Client{
		base:     strings.TrimRight(baseURL, "/"),
		password: password,
		http:     &http.Client{Timeout: 60 * time.Second},
		stream:   &http.Client{},

		promptAttempts: DefaultPromptAttempts,
		promptInterval: DefaultPromptInterval,
	}
}

// BaseURL is the server's URL.
func (c *Client) BaseURL() string { return c.base }

func (c *Client) newRequest(ctx context.Context, method, path string, body any) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("%s %s: encode body: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.password != "" {
		req.SetBasicAuth(Username, c.password)
	}
	return req, nil
}

// do sends a request and decodes a JSON answer into out (unless nil).
func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	req, err := c.newRequest(ctx, method, path, body)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
		return &APIError{Method: method, Path: path, Status: resp.StatusCode, Body: string(b)}
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return nil
}

// Health is GET /global/health.
type Health struct {
	Healthy bool   `json:"healthy"`
	Version string `json:"version"`
}

// Health asks the server whether it is ready.
func (c *Client) Health(ctx context.Context) (Health, error) {
	var h Health
	err := c.do(ctx, http.MethodGet, "/global/health", nil, &h)
	return h, err
}

// CreateSessionRequest is the body of POST /session; all optional.
type CreateSessionRequest struct {
	Title    string `json:"title,omitempty"`
	ParentID string `json:"parentID,omitempty"`
	Agent    string `json:"agent,omitempty"`
}

// CreateSession creates a session.
func (c *Client) CreateSession(ctx context.Context, req CreateSessionRequest) (*Session, error) {
	var s Session
	if err := c.do(ctx, http.MethodPost, "/session", req, &s); err != nil {
		return nil, fmt.Errorf("create session: %w", err)
	}
	return &s, nil
}

// Sessions lists every session of the server's project (roots and
// children), most recently updated first.
func (c *Client) Sessions(ctx context.Context) ([]Session, error) {
	var ss []Session
	if err := c.do(ctx, http.MethodGet, "/session", nil, &ss); err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	return ss, nil
}

// Session gets one session.
func (c *Client) Session(ctx context.Context, id string) (*Session, error) {
	var s Session
	if err := c.do(ctx, http.MethodGet, "/session/"+url.PathEscape(id), nil, &s); err != nil {
		return nil, fmt.Errorf("get session %s: %w", id, err)
	}
	return &s, nil
}

// Children lists the direct child sessions (sub-agents) of a session.
func (c *Client) Children(ctx context.Context, id string) ([]Session, error) {
	var ss []Session
	if err := c.do(ctx, http.MethodGet, "/session/"+url.PathEscape(id)+"/children", nil, &ss); err != nil {
		return nil, fmt.Errorf("list children of %s: %w", id, err)
	}
	return ss, nil
}

// Descendants lists every session below id (children, their children, …)
// breadth first.
func (c *Client) Descendants(ctx context.Context, id string) ([]Session, error) {
	var out []Session
	queue := []string{id}
	seen := map[string]bool{id: true}
	for len(queue) > 0 {
		kids, err := c.Children(ctx, queue[0])
		if err != nil {
			return nil, err
		}
		queue = queue[1:]
		for _, k := range kids {
			if !seen[k.ID] {
				seen[k.ID] = true
				out = append(out, k)
				queue = append(queue, k.ID)
			}
		}
	}
	return out, nil
}

// Abort stops a session's running work.
func (c *Client) Abort(ctx context.Context, id string) error {
	var ok bool
	if err := c.do(ctx, http.MethodPost, "/session/"+url.PathEscape(id)+"/abort", nil, &ok); err != nil {
		return fmt.Errorf("abort session %s: %w", id, err)
	}
	return nil
}

// Messages lists a session's messages with their parts, oldest first.
func (c *Client) Messages(ctx context.Context, sessionID string) ([]Message, error) {
	var ms []Message
	if err := c.do(ctx, http.MethodGet, "/session/"+url.PathEscape(sessionID)+"/message", nil, &ms); err != nil {
		return nil, fmt.Errorf("list messages of %s: %w", sessionID, err)
	}
	return ms, nil
}

// Message gets one message with its parts; the error wraps ErrNotFound
// when the session has no such message.
func (c *Client) Message(ctx context.Context, sessionID, messageID string) (*Message, error) {
	var m Message
	path := "/session/" + url.PathEscape(sessionID) + "/message/" + url.PathEscape(messageID)
	if err := c.do(ctx, http.MethodGet, path, nil, &m); err != nil {
		return nil, fmt.Errorf("get message %s: %w", messageID, err)
	}
	return &m, nil
}

// ModelRef picks a model for a prompt.
type ModelRef struct {
	ProviderID string `json:"providerID"`
	ModelID    string `json:"modelID"`
}

// ParseModel splits "provider/model".
func ParseModel(s string) (ModelRef, error) {
	p, m, ok := strings.Cut(s, "/")
	if !ok || p == "" || m == "" {
		return ModelRef{}, fmt.Errorf("model %q: want provider/model", s)
	}
	return ModelRef{ProviderID: p, ModelID: m}, nil
}

// PromptPart is one input part; traj sends text.
type PromptPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Prompt is the body of POST /session/{id}/prompt_async.
type Prompt struct {
	// MessageID is the user message's id; SendPrompt fills it (see
	// NewMessageID) so delivery can be checked and retried safely.
	MessageID string       `json:"messageID,omitempty"`
	Model     *ModelRef    `json:"model,omitempty"`
	Agent     string       `json:"agent,omitempty"`
	System    string       `json:"system,omitempty"`
	Parts     []PromptPart `json:"parts"`
}

// TextPrompt is a prompt of one text part.
func TextPrompt(text string) Prompt {
	return Prompt{Parts: []PromptPart{{Type: "text", Text: text}}}
}

// PromptAsync posts a prompt and returns as soon as the server accepted
// it (204); the work shows up on the event stream. It does not check
// delivery: SendPrompt does.
func (c *Client) PromptAsync(ctx context.Context, sessionID string, p Prompt) error {
	if err := c.do(ctx, http.MethodPost, "/session/"+url.PathEscape(sessionID)+"/prompt_async", p, nil); err != nil {
		return fmt.Errorf("prompt session %s: %w", sessionID, err)
	}
	return nil
}

// MCPStatus is GET /mcp: server name → status object ({"status":"connected"}, …).
func (c *Client) MCPStatus(ctx context.Context) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := c.do(ctx, http.MethodGet, "/mcp", nil, &m); err != nil {
		return nil, fmt.Errorf("mcp status: %w", err)
	}
	return m, nil
}

// Config is GET /config: the configuration the server runs with.
func (c *Client) Config(ctx context.Context) (json.RawMessage, error) {
	var m json.RawMessage
	if err := c.do(ctx, http.MethodGet, "/config", nil, &m); err != nil {
		return nil, fmt.Errorf("get config: %w", err)
	}
	return m, nil
}
