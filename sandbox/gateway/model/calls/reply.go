package calls

import (
	"bufio"
	"bytes"
	"encoding/json"
	"sort"
	"strings"
)

// Reply is a recorded response put back together: what the model said,
// thought and called, for a reader who should not read SSE chunks.
type Reply struct {
	Text      string      `json:"text,omitempty"`
	Reasoning string      `json:"reasoning,omitempty"`
	ToolCalls []ReplyCall `json:"tool_calls,omitempty"`
}

// ReplyCall is one tool call of a reply, its arguments as sent (JSON).
type ReplyCall struct {
	ID        string `json:"id,omitempty"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Assemble puts a response of api (as the record names it:
// chat.completions, messages, responses; an SSE stream or one JSON body)
// back together. ok is false when the body is neither.
func Assemble(api string, body []byte) (Reply, bool) {
	objs := SSEData(body)
	if objs == nil {
		if !json.Valid(body) {
			return Reply{}, false
		}
		objs = [][]byte{body}
	}
	a := assembler{calls: map[int]*ReplyCall{}}
	for _, o := range objs {
		switch api {
		case "chat.completions":
			a.chat(o)
		case "messages":
			a.messages(o)
		case "responses":
			a.responses(o)
		}
	}
	r := Reply{Text: a.text.String(), Reasoning: a.reasoning.String()}
	keys := make([]int, 0, len(a.calls))
	for k := range a.calls {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	for _, k := range keys {
		r.ToolCalls = append(r.ToolCalls, *a.calls[k])
	}
	return r, true
}

type assembler struct {
	text, reasoning strings.Builder
	// calls by the stream's index of the call (chat, responses) or
	// content block (messages).
	calls map[int]*ReplyCall
}

func (a *assembler) call(i int) *ReplyCall {
	c := a.calls[i]
	if c == nil {
		c = &ReplyCall{}
		a.calls[i] = c
	}
	return c
}

func (a *assembler) chat(o []byte) {
	type msg struct {
		Content          *string `json:"content"`
		ReasoningContent *string `json:"reasoning_content"`
		Reasoning        *string `json:"reasoning"`
		ToolCalls        []struct {
			Index    *int   `json:"index"`
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	}
	var c struct {
		Choices []struct {
			Delta   *msg `json:"delta"`
			Message *msg `json:"message"`
		} `json:"choices"`
	}
	if json.Unmarshal(o, &c) != nil {
		return
	}
	for _, ch := range c.Choices {
		for _, m := range []*msg{ch.Delta, ch.Message} {
			if m == nil {
				continue
			}
			if m.Content != nil {
				a.text.WriteString(*m.Content)
			}
			for _, r := range []*string{m.ReasoningContent, m.Reasoning} {
				if r != nil {
					a.reasoning.WriteString(*r)
				}
			}
			for i, tc := range m.ToolCalls {
				idx := len(a.calls) + i
				if tc.Index != nil {
					idx = *tc.Index
				}
				rc := a.call(idx)
				if tc.ID != "" {
					rc.ID = tc.ID
				}
				rc.Name += tc.Function.Name
				rc.Arguments += tc.Function.Arguments
			}
		}
	}
}

type anthropicBlock struct {
	Type     string          `json:"type"`
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Text     string          `json:"text"`
	Thinking string          `json:"thinking"`
	Input    json.RawMessage `json:"input"`
}

func (a *assembler) block(i int, b anthropicBlock) {
	switch b.Type {
	case "text":
		a.text.WriteString(b.Text)
	case "thinking":
		a.reasoning.WriteString(b.Thinking)
	case "tool_use":
		c := a.call(i)
		c.ID, c.Name = b.ID, b.Name
		if len(b.Input) > 0 && string(b.Input) != "{}" {
			c.Arguments = string(b.Input)
		}
	}
}

func (a *assembler) messages(o []byte) {
	var e struct {
		Type         string           `json:"type"`
		Index        int              `json:"index"`
		ContentBlock *anthropicBlock  `json:"content_block"`
		Content      []anthropicBlock `json:"content"`
		Delta        *struct {
			Type        string `json:"type"`
			Text        string `json:"text"`
			Thinking    string `json:"thinking"`
			PartialJSON string `json:"partial_json"`
		} `json:"delta"`
	}
	if json.Unmarshal(o, &e) != nil {
		return
	}
	switch e.Type {
	case "content_block_start":
		if e.ContentBlock != nil {
			a.block(e.Index, *e.ContentBlock)
		}
	case "content_block_delta":
		if d := e.Delta; d != nil {
			switch d.Type {
			case "text_delta":
				a.text.WriteString(d.Text)
			case "thinking_delta":
				a.reasoning.WriteString(d.Thinking)
			case "input_json_delta":
				a.call(e.Index).Arguments += d.PartialJSON
			}
		}
	case "message":
		for i, b := range e.Content {
			a.block(i, b)
		}
	}
}

type responsesItem struct {
	Type      string `json:"type"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Content   []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	Summary []struct {
		Text string `json:"text"`
	} `json:"summary"`
}

// responses reads only whole output items (output_item.done events or
// the final body), so text is never counted twice from its deltas.
func (a *assembler) responses(o []byte) {
	var e struct {
		Type        string          `json:"type"`
		OutputIndex int             `json:"output_index"`
		Item        *responsesItem  `json:"item"`
		Output      []responsesItem `json:"output"`
		Object      string          `json:"object"`
	}
	if json.Unmarshal(o, &e) != nil {
		return
	}
	switch {
	case e.Type == "response.output_item.done" && e.Item != nil:
		a.item(e.OutputIndex, *e.Item)
	case e.Object == "response":
		for i, it := range e.Output {
			a.item(i, it)
		}
	}
}

func (a *assembler) item(i int, it responsesItem) {
	switch it.Type {
	case "message":
		for _, c := range it.Content {
			a.text.WriteString(c.Text)
		}
	case "reasoning":
		for _, s := range it.Summary {
			a.reasoning.WriteString(s.Text)
		}
	case "function_call":
		c := a.call(i)
		c.ID, c.Name, c.Arguments = it.CallID, it.Name, it.Arguments
	}
}

// SSEData returns the data payloads of an SSE body, nil when body is not
// an event stream.
func SSEData(body []byte) [][]byte {
	trimmed := bytes.TrimLeft(body, " \r\n")
	if !bytes.HasPrefix(trimmed, []byte("data:")) && !bytes.HasPrefix(trimmed, []byte("event:")) && !bytes.HasPrefix(trimmed, []byte(":")) {
		return nil
	}
	out := [][]byte{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 64<<20)
	var cur []byte
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if len(cur) > 0 {
				out = append(out, cur)
				cur = nil
			}
		case bytes.HasPrefix(line, []byte("data:")):
			d := bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))
			if len(cur) > 0 {
				cur = append(cur, '\n')
			}
			cur = append(cur, d...)
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}
