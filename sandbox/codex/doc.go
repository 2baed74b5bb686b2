// Package codex is the adapter of the Codex CLI (0.169.0, @openai/codex,
// pinned in npm/) behind the agent port. It and its package wire (the
// translator and the Reader, which start nothing) own all of Codex's
// JSON; nothing above them parses a Codex object.
//
// # How it runs (measured here)
//
// Each turn is one process, started through the sandbox as a service:
//
//	codex exec [resume] --json --skip-git-repo-check
//	  --dangerously-bypass-approvals-and-sandbox -m MODEL
//	  -c model_provider=traj
//	  -c 'model_providers.traj={name="traj",base_url=GATEWAY/v1,env_key=VAR,wire_api="responses"}'
//	  -c 'mcp_servers.tests={command=…,args=[…],startup_timeout_sec=60,tool_timeout_sec=3600}'
//	  [THREAD_ID] -- PROMPT
//
// with CODEX_HOME and HOME in the trajectory's state folder (codex/, home/;
// an isolated sandbox shows them at /opt/codex/config and /opt/codex/home,
// the musl binary at /opt/codex/bin/codex, never the state file beside
// them: Mounts) and VAR holding
// the per-trajectory token (never the real key). Codex POSTs streaming
// /v1/responses. The first turn starts a thread (thread.started names it;
// the state file traj-codex.json keeps it); later turns `exec resume` it,
// so the conversation continues, also after the trajectory is resumed.
// The root session id is traj's own (codex-…), fixed before the thread
// exists.
//
// The configuration cannot come from the workspace: every setting is a -c
// flag on every turn, traj rewrites CODEX_HOME/config.toml before each
// turn, and Codex does not read a workspace .codex/config.toml of an
// untrusted project ("Untrusted project-local configuration is disabled";
// checked with a hostile one). Offered tools for an unknown model:
// exec_command, write_stdin, view_image, request_user_input, the
// multi_agent_v1 and goal tools, web_search, and MCP tools in the
// namespace mcp__SERVER (run_tests).
//
// # Output → agent events
//
// stdout is one JSON object a line. thread.started → the root session's
// Raw. A turn's items all belong to one assistant message here (the exec
// stream has no message ids, no model ids, no per-response usage); the
// recorder names each part's message after the model call it came from
// (harness.Harness.TurnMessages; matched by order at the model gateway,
// engine.ModelCalls), so the trace has one message per model response,
// and each part its share of that call's tokens: reasoning → a reasoning part, agent_message
// → a text part, command_execution (tool exec_command: command,
// aggregated_output, exit_code) and mcp_tool_call (tool
// mcp__SERVER__TOOL, as Claude Code names MCP tools) → tool parts, done at
// item.completed (Raw: [item.started, item.completed]); file_change → a
// patch part; error and other items are kept uncounted. turn.completed
// carries the usage, cumulative over the thread: the adapter sends the
// difference to the previous turn's (kept in the state file) as an
// uncounted "turn.completed" part, normalized as the trace counts tokens
// (input without cached, output without reasoning). Codex reports usage
// per turn only, not per model call; cost comes from the endpoint's price.
// turn.failed is an error. Abort stops the turn's process group; tool
// calls without a result are sent not done (trailing parts).
package codex
