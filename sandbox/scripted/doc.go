// Package scripted is a model server that plays back a script of assistant
// responses over the three wire APIs the harnesses speak (OpenAI chat
// completions for OpenCode, Anthropic Messages for Claude Code, OpenAI
// Responses for Codex), so every harness runs offline and deterministically
// in tests and in the demos. `traj model serve --script FILE` runs it from
// the command line (Serve: the script on a loopback address only; a bad
// script or address is a RequestError).
//
// # Endpoints
//
//   - GET /v1/models lists Options.Models ("demo", "small" by default).
//   - POST /v1/chat/completions answers with the next scripted response,
//     streamed as OpenAI chat.completion.chunk events ("stream": true) or as
//     one chat.completion. A stream sends, in order: a role delta,
//     reasoning_content deltas, content deltas, per tool call a first delta
//     with index, id, type and name followed by argument deltas, a chunk
//     with finish_reason ("tool_calls" or "stop"), a chunk with empty
//     choices and the usage, then "data: [DONE]". Usage is always sent.
//   - POST /v1/messages (Anthropic Messages, Claude Code; "?beta=true" is
//     accepted) streams message_start, then per block content_block_start,
//     its deltas and content_block_stop — a thinking block (thinking_delta,
//     signature_delta) for reasoning, a text block (text_delta), one
//     tool_use block per call (input_json_delta) — then message_delta with
//     stop_reason ("tool_use" or "end_turn") and the usage, and
//     message_stop. Usage is Anthropic's: input_tokens exclude the cached
//     tokens, reported as cache_read_input_tokens. Tool-less requests are
//     side requests (below). Errors use Anthropic's error body.
//   - POST /v1/responses (OpenAI Responses, Codex) streams response.created
//     and response.in_progress, then per output item (a reasoning item
//     with a summary, a message with output_text, one function_call per
//     call) response.output_item.added, its deltas
//     (reasoning_summary_text, output_text, function_call_arguments) and
//     response.output_item.done, then response.completed with the usage.
//     Tools offered inside a namespace (Codex puts MCP tools in
//     "mcp__SERVER") are called by their own name; the function_call
//     carries the namespace. Requests without function tools are side
//     requests.
//   - GET /health answers 200 (readiness).
//
// # Script format
//
// JSON Lines: one response per line. Blank lines and lines starting with #
// are ignored. Every error names file:line and what is wrong (bad JSON,
// unknown key, empty response, malformed tool call, impossible usage).
//
//	# round 1: think, say something, then call two tools
//	{"reasoning":"Start small.","text":"Writing the build script.","tools":[{"name":"write","args":{"filePath":"build.sh","content":"#!/bin/sh\n"}},{"name":"bash","args":{"command":"chmod +x build.sh"}}]}
//	{"tools":[{"name":"tests_run_tests","args":{"test_path":"basics/smoke"}}],"expect":{"tools":["tests_run_tests"]}}
//	{"text":"Done.","usage":{"prompt_tokens":9000,"completion_tokens":3,"cached_tokens":8000}}
//
// Keys of a response (at least one of reasoning, text, tools, or an error):
//
//   - "reasoning": text streamed as reasoning_content (OpenCode records a
//     reasoning part).
//   - "text": the assistant's visible text (a text part).
//   - "tools": calls, each {"name": TOOL, "args": {…}}, emitted in order;
//     OpenCode runs them and sends the results in its next request. A
//     response with tools ends with finish_reason "tool_calls", so the agent
//     continues; one without tools ends the agent's turn.
//   - "usage": {"prompt_tokens", "completion_tokens", "reasoning_tokens",
//     "cached_tokens"} reported verbatim. Without it usage is estimated
//     deterministically at about four bytes a token: prompt from the request
//     body, completion from reasoning, text and tool calls, reasoning from
//     the reasoning text, cached 0.
//   - "expect": guards against a run that diverged: {"tools": [names the
//     request must offer], "model": "demo", "contains": "text the last user
//     or tool message must hold"}.
//   - "delay_ms": wait this long before answering (a slow model; lets tests
//     abort or interrupt mid-answer). The wait ends if the client goes away.
//   - "error": {"status": 503, "message": "…"} answers with that HTTP error
//     (OpenAI error body; type server_error, rate_limit_error or
//     invalid_request_error) instead of a completion, for failure injection.
//     It consumes its line. OpenCode 1.18.33 retries 429 and 5xx after about
//     2 s, and the retry gets the next line; any other 4xx ends the turn with
//     an assistant message whose error is an APIError (isRetryable false).
//
// Tool names and arguments are OpenCode's (1.18.33, read from the schemas
// it sends): write {filePath, content}; edit {filePath, oldString,
// newString, replaceAll?}; bash {command, timeout?, workdir?} (a
// "description" is accepted too); read {filePath, offset?, limit?}; glob
// {pattern, path?}; grep {pattern, path?, include?}; todowrite {todos:
// [{content, status, priority}]}; task {description, prompt, subagent_type
// ("general"), task_id?, command?}. Relative paths resolve against the
// project folder. MCP tools are named SERVER_TOOL: the run_tests tool of the
// "tests" server is tests_run_tests {test_path}.
//
// Claude Code 2.1.330 offers (measured, Anthropic input_schema): Bash
// {command, timeout?, description?, run_in_background?}; Write {file_path,
// content} and Edit {file_path, old_string, new_string, replace_all?} and
// Read {file_path, offset?, limit?} with absolute paths; Agent
// {description, prompt, subagent_type} starts a sub-agent (the tool its
// init event still lists as Task); MCP tools are named mcp__SERVER__TOOL
// (mcp__tests__run_tests). Codex 0.169.0 offers (Responses function
// tools): exec_command {cmd, workdir?, …} (runs in a shell; files are
// written with it too, no apply_patch is offered for an unknown model),
// write_stdin, view_image, and MCP tools in the namespace mcp__SERVER:
// run_tests {test_path}.
//
// What OpenCode 1.18.33 makes of it (measured): usage becomes the assistant
// message's tokens as input = prompt_tokens - cached_tokens, output =
// completion_tokens - reasoning_tokens, reasoning = reasoning_tokens,
// cache.read = cached_tokens, and cost follows the model's "cost" in
// opencode.json. glob and grep need ripgrep, which OpenCode cannot fetch
// offline: they end in a tool error ("ripgrep execution failed"). The task
// tool's output reads `<task id="ses_…" state="completed"><task_result>…the
// sub-agent's last text…</task_result></task>`; the sub-agent's requests
// offer its own tool list (no task, todowrite or question) and its first
// request's last user message is the task prompt.
//
// # Playback rules
//
// Requests consume responses strictly in arrival order; a mutex guards the
// position, so concurrent requests never play a response twice. A sub-agent
// (task tool) runs in a child session while the parent waits, so its
// requests simply come next in the script: the parent's task call, then
// the child's responses, then the parent's next response (see
// demo/c-compiler.jsonl).
//
// Side requests never consume the script: requests for a model in
// Options.SideModels ("small" by default, OpenCode's small_model) and
// tool-less requests whose system or user prompt opens like OpenCode's
// title, compaction or session-summary prompts are answered with
// Options.SideText. OpenCode 1.18.33 sends one title request (small model,
// no tools, streaming) per root session; child sessions of sub-agents get
// no title request.
//
// Before a response is played it is checked against the request: each tool
// it calls must be offered, its args must satisfy the JSON Schema the agent
// sent for that tool, and its "expect" must hold. If not, the server answers
// with a text saying where and how the run diverged (file:line), logs an
// error, and keeps the response for the next request. When every response
// has been played, requests get a text saying the script is exhausted.
//
// A fork that inherits its source's script (traj run --fork without
// --script) starts past the responses the source played before the fork
// point (Options.Skip): launch counts them in the source's model-call
// record with PlayedLine, which tells a played line from a side answer
// and from the server's own exhausted or diverged text (the recorded reply
// put back together, as the stream splits text into chunks).
package scripted
