// Package claudecode is the adapter of Claude Code (2.1.330,
// @anthropic-ai/claude-code, pinned in npm/) behind the agent port. It
// and its package wire (the translator and the Reader, which start
// nothing) own all of Claude Code's JSON; nothing above them parses a
// Claude Code object.
//
// # How it runs (measured here)
//
// Each turn is one process, started through the sandbox as a service:
//
//	claude --output-format stream-json --verbose --include-partial-messages
//	  --forward-subagent-text --permission-mode bypassPermissions --model M
//	  --setting-sources user --strict-mcp-config --mcp-config '{"mcpServers":…}'
//	  (--session-id ID | --resume ID) -p -- PROMPT
//
// with HOME and CLAUDE_CONFIG_DIR in the trajectory's state folder (home/,
// claude/; an isolated sandbox shows them at /opt/claude-code/home and
// /opt/claude-code/config, the binary at /opt/claude-code/bin/claude,
// never the state file beside them: Mounts),
// ANTHROPIC_BASE_URL at the model gateway (without /v1: Claude Code POSTs
// /v1/messages?beta=true), ANTHROPIC_API_KEY the per-trajectory token,
// CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1, IS_SANDBOX=1 as root
// (bypassPermissions refuses root otherwise) and ENABLE_TOOL_SEARCH=false:
// without it MCP tools are deferred behind a ToolSearch tool and the model
// does not see mcp__tests__run_tests in its tool list. The first turn
// creates the session with a UUID traj chose (--session-id); later turns
// --resume it, so the conversation continues (the state file
// traj-claudecode.json keeps the id for a resumed trajectory).
//
// The configuration cannot come from the workspace: --setting-sources user
// reads settings only from CLAUDE_CONFIG_DIR (traj rewrites its
// settings.json before every turn), so a workspace .claude/settings.json
// (env, model, hooks) is ignored; --strict-mcp-config ignores a workspace
// .mcp.json. Both were checked with hostile files in the workspace.
//
// # Output → agent events
//
// stdout is one JSON object a line. system/init → the root session (its
// Raw). assistant lines hold one content block each, grouped by the API
// message id: text → a text part, thinking → a reasoning part, tool_use →
// a tool part, done when the user line with its tool_result arrives (Raw:
// [assistant line, user line]). The Agent tool (listed as Task in init)
// starts a sub-agent: system/task_started names its tool_use_id, and the
// sub-agent's lines carry parent_tool_use_id; the adapter names the child
// session after that tool call id, its parent the caller's session, and
// the Agent part's ChildSessionID points at it. Sub-agents run in the
// foreground only when the call says "run_in_background": false (the
// default runs them in the background while the parent continues).
//
// Usage: stream_event lines (--include-partial-messages) give each model
// call's usage, message_start the input side and message_delta the final
// output tokens, for the root session's calls; each becomes an uncounted
// "usage" part of that message. The result line's modelUsage totals every
// model call of the turn (sub-agents' too); what the per-call parts did
// not show goes out with the result line, so the trace's tokens equal the
// model gateway's record. Tokens are normalized as the trace counts them:
// input without cache reads, output with thinking (Anthropic does not
// split it). Cost comes from the endpoint's price when set (the gateway's
// rule), else from Claude Code's total_cost_usd per turn.
//
// Abort stops the turn's process group (SIGTERM, 3 s, SIGKILL); lines it
// printed before are still read, and tool calls without a result are sent
// not done (trailing parts). Other stream-json lines (system/status,
// task_progress, the stream_event deltas) are kept in the turn's log
// (logs/claude-turn-N.log), not in the trace; stderr goes to
// state/stderr/claude-turn-N.stderr.
package claudecode
