package model

import (
	"encoding/json"
	"strings"

	"github.com/trajlab/traj/sandbox/gateway/model/calls"
	"github.com/trajlab/traj/trace"
)

// parsed is what the record keeps from a response besides its bytes.
type parsed struct {
	id          string
	toolCallIDs []string
	tokens      trace.Tokens
	hasUsage    bool
	// outputs are the response's output items by kind, in order.
	outputs []string
	// chatReasoning, chatText: a chat completion's reasoning and text
	// seen (one output each, before its tool calls).
	chatReasoning, chatText bool
}

// Output kinds of a response (Call.Outputs).
const (
	OutputReasoning = "reasoning"
	OutputText      = "text"
	OutputTool      = "tool"
)

// parseResponse reads a response of api (an SSE stream or one JSON body)
// for its id, tool call ids and usage. Usage is normalized as trace.Tokens
// counts it (OpenCode's convention): input without cache reads, output
// without reasoning.
func parseResponse(api string, body []byte) (parsed, bool) {
	var p parsed
	objs := calls.SSEData(body)
	if objs == nil {
		if !json.Valid(body) {
			return p, false
		}
		objs = [][]byte{body}
	}
	for _, o := range objs {
		switch api {
		case "chat.completions":
			p.chat(o)
		case "messages":
			p.messages(o)
		case "responses":
			p.responses(o)
		}
	}
	if api == "chat.completions" {
		p.chatOutputs()
	}
	return p, true
}

func (p *parsed) chat(o []byte) {
	var c struct {
		ID      string `json:"id"`
		Choices []struct {
			Delta   *chatMsg `json:"delta"`
			Message *chatMsg `json:"message"`
		} `json:"choices"`
		Usage *struct {
			PromptTokens        int64 `json:"prompt_tokens"`
			CompletionTokens    int64 `json:"completion_tokens"`
			PromptTokensDetails *struct {
				CachedTokens int64 `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
			CompletionTokensDetails *struct {
				ReasoningTokens int64 `json:"reasoning_tokens"`
			} `json:"completion_tokens_details"`
		} `json:"usage"`
	}
	if json.Unmarshal(o, &c) != nil {
		return
	}
	if p.id == "" {
		p.id = c.ID
	}
	for _, ch := range c.Choices {
		for _, m := range []*chatMsg{ch.Delta, ch.Message} {
			if m == nil {
				continue
			}
			if m.ReasoningContent != "" || m.Reasoning != "" {
				p.chatReasoning = true
			}
			if m.Content != "" {
				p.chatText = true
			}
			for _, tc := range m.ToolCalls {
				if tc.ID != "" {
					p.toolCallIDs = append(p.toolCallIDs, tc.ID)
				}
			}
		}
	}
	if u := c.Usage; u != nil {
		var cached, reasoning int64
		if u.PromptTokensDetails != nil {
			cached = u.PromptTokensDetails.CachedTokens
		}
		if u.CompletionTokensDetails != nil {
			reasoning = u.CompletionTokensDetails.ReasoningTokens
		}
		p.tokens = trace.Tokens{Input: u.PromptTokens - cached, Output: u.CompletionTokens - reasoning,
			Reasoning: reasoning, CacheRead: cached}
		p.hasUsage = true
	}
}

// chatOutputs lists a chat completion's outputs: its reasoning, its
// text, then its tool calls (the order the harness records them).
func (p *parsed) chatOutputs() {
	p.outputs = p.outputs[:0]
	if p.chatReasoning {
		p.outputs = append(p.outputs, OutputReasoning)
	}
	if p.chatText {
		p.outputs = append(p.outputs, OutputText)
	}
	for range p.toolCallIDs {
		p.outputs = append(p.outputs, OutputTool)
	}
}

type chatMsg struct {
	Content          string `json:"content"`
	ReasoningContent string `json:"reasoning_content"`
	Reasoning        string `json:"reasoning"`
	ToolCalls        []struct {
		ID string `json:"id"`
	} `json:"tool_calls"`
}

type anthropicUsage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
}

// merge takes the fields u sets: message_start carries the input side,
// message_delta the final output count (and, from some providers, input
// counts again).
func (p *parsed) mergeAnthropic(u *anthropicUsage) {
	if u == nil {
		return
	}
	p.hasUsage = true
	if u.InputTokens != nil {
		p.tokens.Input = *u.InputTokens
	}
	if u.OutputTokens != nil {
		p.tokens.Output = *u.OutputTokens
	}
	if u.CacheReadInputTokens != nil {
		p.tokens.CacheRead = *u.CacheReadInputTokens
	}
	if u.CacheCreationInputTokens != nil {
		p.tokens.CacheWrite = *u.CacheCreationInputTokens
	}
}

func (p *parsed) messages(o []byte) {
	var e struct {
		Type    string `json:"type"`
		ID      string `json:"id"`
		Message *struct {
			ID    string          `json:"id"`
			Usage *anthropicUsage `json:"usage"`
		} `json:"message"`
		ContentBlock *struct {
			Type string `json:"type"`
			ID   string `json:"id"`
		} `json:"content_block"`
		Content []struct {
			Type string `json:"type"`
			ID   string `json:"id"`
		} `json:"content"`
		Usage *anthropicUsage `json:"usage"`
	}
	if json.Unmarshal(o, &e) != nil {
		return
	}
	switch e.Type {
	case "message_start":
		if e.Message != nil {
			p.id = e.Message.ID
			p.mergeAnthropic(e.Message.Usage)
		}
	case "content_block_start":
		if e.ContentBlock != nil {
			p.anthropicOutput(e.ContentBlock.Type)
			if e.ContentBlock.Type == "tool_use" {
				p.toolCallIDs = append(p.toolCallIDs, e.ContentBlock.ID)
			}
		}
	case "message_delta":
		p.mergeAnthropic(e.Usage)
	case "message": // a whole (non-streamed) reply
		p.id = e.ID
		for _, b := range e.Content {
			p.anthropicOutput(b.Type)
			if b.Type == "tool_use" {
				p.toolCallIDs = append(p.toolCallIDs, b.ID)
			}
		}
		p.mergeAnthropic(e.Usage)
	}
}

// anthropicOutput lists a content block of type typ as an output.
func (p *parsed) anthropicOutput(typ string) {
	switch typ {
	case "thinking", "redacted_thinking":
		p.outputs = append(p.outputs, OutputReasoning)
	case "text":
		p.outputs = append(p.outputs, OutputText)
	case "tool_use", "server_tool_use":
		p.outputs = append(p.outputs, OutputTool)
	}
}

type responsesBody struct {
	ID     string `json:"id"`
	Object string `json:"object"`
	Output []struct {
		Type   string `json:"type"`
		CallID string `json:"call_id"`
	} `json:"output"`
	Usage *struct {
		InputTokens        int64 `json:"input_tokens"`
		OutputTokens       int64 `json:"output_tokens"`
		InputTokensDetails *struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokensDetails *struct {
			ReasoningTokens int64 `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
	} `json:"usage"`
}

func (p *parsed) responses(o []byte) {
	var e struct {
		Type     string         `json:"type"`
		Response *responsesBody `json:"response"`
	}
	if json.Unmarshal(o, &e) != nil {
		return
	}
	r := e.Response
	switch {
	case e.Type == "response.completed" || e.Type == "response.incomplete" || e.Type == "response.failed":
	case e.Type == "response.created" && r != nil:
		p.id = r.ID
		return
	case e.Type == "":
		r = &responsesBody{} // a whole (non-streamed) reply
		if json.Unmarshal(o, r) != nil || r.Object != "response" {
			return
		}
	default:
		return
	}
	if r == nil {
		return
	}
	p.id = r.ID
	p.toolCallIDs = p.toolCallIDs[:0]
	p.outputs = p.outputs[:0]
	for _, it := range r.Output {
		if it.CallID != "" {
			p.toolCallIDs = append(p.toolCallIDs, it.CallID)
		}
		switch {
		case it.Type == "reasoning":
			p.outputs = append(p.outputs, OutputReasoning)
		case it.Type == "message":
			p.outputs = append(p.outputs, OutputText)
		case it.CallID != "" || strings.HasSuffix(it.Type, "_call"):
			p.outputs = append(p.outputs, OutputTool)
		}
	}
	if u := r.Usage; u != nil {
		var cached, reasoning int64
		if u.InputTokensDetails != nil {
			cached = u.InputTokensDetails.CachedTokens
		}
		if u.OutputTokensDetails != nil {
			reasoning = u.OutputTokensDetails.ReasoningTokens
		}
		p.tokens = trace.Tokens{Input: u.InputTokens - cached, Output: u.OutputTokens - reasoning,
			Reasoning: reasoning, CacheRead: cached}
		p.hasUsage = true
	}
}
