package calls

import (
	"reflect"
	"testing"
)

// TestAssemble puts streamed and whole replies of each API back together:
// text and reasoning concatenated from their deltas, tool calls with their
// arguments pieced from fragments, in stream order.
func TestAssemble(t *testing.T) {
	for _, tc := range []struct {
		name, api, body string
		want            Reply
		ok              bool
	}{
		{"chat stream", "chat.completions", `data: {"choices":[{"delta":{"role":"assistant","reasoning_content":"think "}}]}

data: {"choices":[{"delta":{"reasoning_content":"more"}}]}

data: {"choices":[{"delta":{"content":"Hel"}}]}

data: {"choices":[{"delta":{"content":"lo"}}]}

data: {"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1","function":{"name":"bash","arguments":"{\"comm"}}]}}]}

data: {"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"and\":\"ls\"}"}}]}}]}

data: [DONE]

`, Reply{Text: "Hello", Reasoning: "think more", ToolCalls: []ReplyCall{{ID: "call_1", Name: "bash", Arguments: `{"command":"ls"}`}}}, true},
		{"chat body", "chat.completions", `{"choices":[{"message":{"content":"done","tool_calls":[{"id":"c","function":{"name":"write","arguments":"{}"}}]}}]}`,
			Reply{Text: "done", ToolCalls: []ReplyCall{{ID: "c", Name: "write", Arguments: "{}"}}}, true},
		{"messages stream", "messages", `event: message_start
data: {"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":3}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"plan"}}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Writing."}}

event: content_block_start
data: {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"Write","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"file_path\":"}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"\"a.c\"}"}}

`, Reply{Text: "Writing.", Reasoning: "plan", ToolCalls: []ReplyCall{{ID: "toolu_1", Name: "Write", Arguments: `{"file_path":"a.c"}`}}}, true},
		{"responses stream", "responses", `data: {"type":"response.output_text.delta","delta":"Hi"}

data: {"type":"response.output_item.done","output_index":0,"item":{"type":"reasoning","summary":[{"text":"why"}]}}

data: {"type":"response.output_item.done","output_index":1,"item":{"type":"message","content":[{"type":"output_text","text":"Hi"}]}}

data: {"type":"response.output_item.done","output_index":2,"item":{"type":"function_call","call_id":"fc_1","name":"exec_command","arguments":"{\"cmd\":\"ls\"}"}}

`, Reply{Text: "Hi", Reasoning: "why", ToolCalls: []ReplyCall{{ID: "fc_1", Name: "exec_command", Arguments: `{"cmd":"ls"}`}}}, true},
		{"not a reply", "chat.completions", "<html>bad gateway</html>", Reply{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Assemble(tc.api, []byte(tc.body))
			if ok != tc.ok || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Assemble = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
