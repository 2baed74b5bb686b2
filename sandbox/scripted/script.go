package scripted

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
)

// Script is an ordered list of assistant responses, played back one per
// (non-side) chat-completions request.
type Script struct {
	// Name is the file name used in error messages and logs.
	Name      string
	Responses []Response
}

// Response is one scripted assistant reply. Reasoning, Text and Tools may be
// combined; they are emitted in that order.
type Response struct {
	// Line is the 1-based line of the script this response came from.
	Line      int        `json:"-"`
	Reasoning string     `json:"reasoning,omitempty"`
	Text      string     `json:"text,omitempty"`
	Tools     []ToolCall `json:"tools,omitempty"`
	// Usage, when set, is reported verbatim instead of an estimate.
	Usage *Usage `json:"usage,omitempty"`
	// Expect guards against a run that diverged from the script.
	Expect *Expect `json:"expect,omitempty"`
	// DelayMS holds the reply back this long (a slow model), so tests can
	// abort or interrupt a run while the model is answering.
	DelayMS int `json:"delay_ms,omitempty"`
	// Error, when set, answers with this HTTP error instead of a completion
	// (failure injection); it consumes the line like any response.
	Error *ErrorReply `json:"error,omitempty"`
}

// ErrorReply is an HTTP error the server answers with.
type ErrorReply struct {
	Status  int    `json:"status"`
	Message string `json:"message"`
}

// ToolCall is one function call the assistant makes.
type ToolCall struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// Usage is the token accounting reported for a response. Zero fields are
// estimated unless the whole object is given.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	ReasoningTokens  int `json:"reasoning_tokens,omitempty"`
	CachedTokens     int `json:"cached_tokens,omitempty"`
}

// Expect lists conditions the incoming request must meet before the response
// is played; a mismatch is answered with an explanatory text and does not
// consume the response.
type Expect struct {
	// Tools must all be offered in the request's tool list.
	Tools []string `json:"tools,omitempty"`
	// Model, when set, must equal the request's model.
	Model string `json:"model,omitempty"`
	// Contains must occur in the text of the last user or tool message.
	Contains string `json:"contains,omitempty"`
}

// ErrEmptyScript is returned when a script holds no responses.
var ErrEmptyScript = errors.New("script has no responses")

// toolNameRE with a length check (validToolName): a counted repetition
// ({1,64}) compiles to 64 copies, at every process's start.
var toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// validToolName: 1 to 64 of letters, digits, '_', '.', '-'.
func validToolName(s string) bool { return len(s) <= 64 && toolNameRE.MatchString(s) }

// Load reads and parses the script at path.
func Load(path string) (*Script, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open script: %w", err)
	}
	defer f.Close()
	return Parse(path, f)
}

// Parse reads a JSON Lines script. name prefixes error messages
// ("name:line: what is wrong").
func Parse(name string, r io.Reader) (*Script, error) {
	s := &Script{Name: name}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 || raw[0] == '#' {
			continue
		}
		resp, err := parseLine(raw)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		resp.Line = line
		s.Responses = append(s.Responses, resp)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: read: %w", name, line+1, err)
	}
	if len(s.Responses) == 0 {
		return nil, fmt.Errorf("%s: %w", name, ErrEmptyScript)
	}
	return s, nil
}

func parseLine(raw []byte) (Response, error) {
	var resp Response
	if err := checkKeys(raw); err != nil {
		return resp, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&resp); err != nil {
		return resp, describeJSONError(err)
	}
	if dec.More() {
		return resp, errors.New("extra data after the JSON object (one response per line)")
	}
	if resp.DelayMS < 0 || resp.DelayMS > 600_000 {
		return resp, errors.New(`"delay_ms" must be between 0 and 600000`)
	}
	if e := resp.Error; e != nil {
		if e.Status < 400 || e.Status > 599 {
			return resp, fmt.Errorf(`error.status %d: must be an HTTP error status (400-599)`, e.Status)
		}
		if resp.Reasoning != "" || resp.Text != "" || len(resp.Tools) > 0 || resp.Usage != nil {
			return resp, errors.New(`an "error" response cannot also hold reasoning, text, tools or usage`)
		}
		return resp, nil
	}
	if resp.Reasoning == "" && resp.Text == "" && len(resp.Tools) == 0 {
		return resp, errors.New(`empty response: give at least one of "reasoning", "text", "tools" (or "error")`)
	}
	for i, tc := range resp.Tools {
		if tc.Name == "" {
			return resp, fmt.Errorf("tools[%d]: missing \"name\"", i)
		}
		if !validToolName(tc.Name) {
			return resp, fmt.Errorf("tools[%d]: invalid tool name %q", i, tc.Name)
		}
		args := bytes.TrimSpace(tc.Args)
		if len(args) == 0 || string(args) == "null" {
			resp.Tools[i].Args = json.RawMessage("{}")
			continue
		}
		if args[0] != '{' {
			return resp, fmt.Errorf("tools[%d] (%s): \"args\" must be a JSON object", i, tc.Name)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, args); err != nil {
			return resp, fmt.Errorf("tools[%d] (%s): args: %w", i, tc.Name, err)
		}
		resp.Tools[i].Args = compact.Bytes()
	}
	if u := resp.Usage; u != nil {
		if u.PromptTokens < 0 || u.CompletionTokens < 0 || u.ReasoningTokens < 0 || u.CachedTokens < 0 {
			return resp, errors.New("usage: token counts must not be negative")
		}
		if u.ReasoningTokens > u.CompletionTokens {
			return resp, errors.New("usage: reasoning_tokens exceeds completion_tokens")
		}
		if u.CachedTokens > u.PromptTokens {
			return resp, errors.New("usage: cached_tokens exceeds prompt_tokens")
		}
	}
	if e := resp.Expect; e != nil {
		for i, name := range e.Tools {
			if !validToolName(name) {
				return resp, fmt.Errorf("expect.tools[%d]: invalid tool name %q", i, name)
			}
		}
	}
	return resp, nil
}

// describeJSONError turns encoding/json errors into messages that say what
// is wrong in script terms.
func describeJSONError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("bad JSON at column %d: %v", syn.Offset, syn)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return fmt.Errorf("a response must be a JSON object, got %s", typ.Value)
		}
		return fmt.Errorf("field %q: expected %s, got %s", field, typ.Type, typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("bad JSON: unexpected end of line")
	}
	return fmt.Errorf("bad JSON: %w", err)
}

// checkKeys reports the first key of the object raw that is not allowed,
// naming where it sat, so a typo points at the right object.
func checkKeys(raw []byte) error {
	var top map[string]json.RawMessage
	if json.Unmarshal(raw, &top) != nil {
		return nil // the typed decode reports the real problem
	}
	if err := unknownKey(top, "", "reasoning", "text", "tools", "usage", "expect", "delay_ms", "error"); err != nil {
		return err
	}
	var tools []map[string]json.RawMessage
	if json.Unmarshal(top["tools"], &tools) == nil {
		for i, tc := range tools {
			if err := unknownKey(tc, fmt.Sprintf("tools[%d]", i), "name", "args"); err != nil {
				return err
			}
		}
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(top["usage"], &obj) == nil {
		if err := unknownKey(obj, "usage", "prompt_tokens", "completion_tokens", "reasoning_tokens", "cached_tokens"); err != nil {
			return err
		}
	}
	obj = nil
	if json.Unmarshal(top["error"], &obj) == nil {
		if err := unknownKey(obj, "error", "status", "message"); err != nil {
			return err
		}
	}
	obj = nil
	if json.Unmarshal(top["expect"], &obj) == nil {
		if err := unknownKey(obj, "expect", "tools", "model", "contains"); err != nil {
			return err
		}
	}
	return nil
}

func unknownKey(obj map[string]json.RawMessage, where string, allowed ...string) error {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.Contains(allowed, k) {
			if where != "" {
				where = " in " + where
			}
			return fmt.Errorf("unknown key %q%s (allowed: %s)", k, where, strings.Join(allowed, ", "))
		}
	}
	return nil
}
