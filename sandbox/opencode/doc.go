// Package opencode runs and talks to `opencode serve` (opencode-ai
// 1.18.33, pinned in sandbox/opencode/npm) for one trajectory: it finds
// the binary, writes the trajectory's OpenCode config, starts the server
// as a sandbox service and waits until it is ready, and is the HTTP + SSE
// client the orchestrator uses.
//
// # Binary
//
// ResolveBinary: the --agent-bin flag, then $TRAJ_OPENCODE_BIN, then
// sandbox/opencode/npm/node_modules/opencode-<os>-<arch>/bin/opencode found
// by walking up from the traj executable and from the working folder, then
// `opencode` on PATH. Nothing found: ErrNoBinary, which says to run
// `make setup`.
//
// # Per-trajectory state, config and secrets
//
// Everything lives in <trajectory>/opencode (0700), outside the workspace
// so git checkpoints never see it; an isolated sandbox shows the XDG
// folders at /opt/opencode/xdg/{config,data,state,cache} and the binary at
// /opt/opencode/bin/opencode (Mounts), never the password file:
//
//	opencode/xdg/{config,data,state,cache}   XDG_*_HOME of the server: sessions,
//	                                         snapshots, logs; never shared
//	opencode/xdg/config/opencode/opencode.json  the config (ConfigPath)
//	opencode/password                        0600, the server password, removed when the server ends
//
// The config sets model and small_model, providers (API keys only as
// {env:NAME} references; the key itself goes into the server's environment
// through ServerOptions.Env), permission {"*":"allow","edit":"allow",
// "bash":"allow","question":"deny"} so a headless run never waits for a
// human, autoupdate off, sharing disabled, and the `tests` MCP server
// (type local; in a run the tool stub `traj tool-stub --gateway URL` with
// its token in the server's own "environment", `traj mcp --workspace DIR`
// in tests; timeout 30 min per tool call). The password (24 random bytes, hex) is in the child's environment
// and in the 0600 password file only; it is never logged (Start redacts it
// from the log tail it reports) and never belongs in a trace. Do not upload
// <trajectory>/opencode to a store. Caveat: the agent's bash tool and the
// MCP server inherit OpenCode's environment (measured: `env` in the bash
// tool shows OPENCODE_SERVER_PASSWORD and the API-key variable), so a
// recorder must redact Server.Secrets() from tool outputs it stores.
//
// # The configuration is traj's, not the workspace's
//
// Measured in 1.18.33 (TestWorkspaceCannotConfigureOpenCode fails without
// these settings): OpenCode merges, in order, the global config folder
// ($XDG_CONFIG_HOME/opencode: config.json, opencode.json, opencode.jsonc),
// $OPENCODE_CONFIG, every opencode.json(c) from the working folder up to the
// git worktree root, $OPENCODE_CONFIG_CONTENT; and it loads agents,
// commands, modes and plugins (code it runs) from the config folders: the
// global one, every .opencode/ from the working folder up to the worktree,
// $HOME/.opencode (always) and $OPENCODE_CONFIG_DIR; AGENTS.md/CLAUDE.md
// are found upwards as instructions. A file the agent writes in its
// workspace could therefore add an MCP server, a plugin or another model
// on the next start (a resume). traj closes each way in: the server gets
// OPENCODE_DISABLE_PROJECT_CONFIG=1 (no workspace or parent opencode.json,
// .opencode/ or AGENTS.md), never OPENCODE_CONFIG, _DIR or _CONTENT (the
// sandbox's environment allowlist drops them), its config folder is
// mounted read-only (Mounts; OpenCode insists on writing a .gitignore
// there, so Mounts writes it first), and $HOME/.opencode is an empty
// read-only folder in isolated sandboxes; with the local provider the
// server's HOME is a fresh folder of traj's at each start.
//
// # Start and stop
//
// Start runs `opencode serve --hostname 127.0.0.1 --port 0 --print-logs`
// in the workspace, logging to <trajectory>/logs/opencode.log, reads the
// port from the server's "opencode server listening on http://127.0.0.1:N"
// line (no port race between parallel trajectories), and polls GET
// /global/health with backoff (200 ms, ×1.5, at most 2 s per attempt, 30 s
// in total). On failure the error holds the tail of the log. Server.Stop
// ends the process group (SIGTERM, 5 s, SIGKILL) and reaps it; Server.Done
// is closed if the server dies. The server lives as long as the ctx given
// to Start. Startup measured 8–12 s alone and up to 27 s for two at once
// on 2 cores at load 15 (tests allow 90 s).
//
// Watching live: Server.AttachCommand(sessionID) is
//
//	OPENCODE_SERVER_PASSWORD="$(cat <trajectory>/opencode/password)" <bin> attach http://127.0.0.1:PORT --session ses_…
//
// safe to print and log: it names the password file, not the password.
//
// # Client
//
// Every request carries basic auth (user "opencode"); without it the
// server answers 401. Sessions: CreateSession, Sessions, Session, Children,
// Descendants, Abort. Messages (with parts) and Message. PromptAsync posts
// to /session/{id}/prompt_async (204, returns at once). SendPrompt is the
// reliable form: it sets the user message id itself (OpenCode-style
// ascending msg_ id), posts, and verifies via GET
// /session/{id}/message/{messageID} that the message landed; if not within
// 2 s it posts again, at most 3 attempts, and checks before each re-post
// so a late prompt is never sent twice.
//
// Every decoded type keeps the server's JSON verbatim in Raw (and
// MarshalJSON writes it back), so a trace can hold exactly what the server
// sent.
//
// # Events (GET /event, server-sent events)
//
// Subscribe returns once the server's first event (server.connected)
// arrived, so subscribe before sending a prompt. Each SSE message is one
// "data: {json}" line: {"id":"evt_…","type":…,"properties":{…}}. On a
// dropped connection the Stream reconnects (200 ms, ×1.5, ≤5 s; gives up
// after 30 s without a connection, or on 401) and sends a synthetic
// EventStreamReconnected event: events in the gap are lost, so list the
// messages of every followed session (Client.Messages, and Descendants for
// new children) and diff by part id to resynchronise. A stream silent for
// 60 s (heartbeats come every ~10 s) is treated as dropped.
//
// Event types seen in a run with tools and a sub-agent (1.18.33):
//
//   - server.connected, server.heartbeat: connection only.
//   - session.created / session.updated {sessionID, info: Session}. A
//     sub-agent's session appears as session.created with info.parentID =
//     the parent session (title "… (@general subagent)"). Its events then
//     flow on the same stream with properties.sessionID = the child's id.
//   - session.status {sessionID, status: {type: "busy"|"idle"|"retry"}};
//     session.idle {sessionID}: the session finished its work (the prompt's
//     turn is over for that session). A child goes idle before its parent.
//   - message.updated {sessionID, info: MessageInfo}: sent repeatedly; an
//     assistant message is finished when info.time.completed is set, and
//     then info.tokens {total,input,output,reasoning,cache{read,write}},
//     info.cost and info.finish ("tool-calls", "stop") are final. The user
//     message (role "user") comes first, with no completed time.
//   - message.part.updated {sessionID, part: Part, time}: sent on every
//     change of a part. Completion (Part.Completed):
//     text / reasoning: part.time.end set (part.time.start when it began;
//     the user's prompt text part has no time at all);
//     tool: part.state.status "completed" (state.output, state.metadata,
//     state.time.end) or "error" (state.error), after "pending" and
//     "running" updates; part.tool is the tool name (write, bash, task,
//     tests_run_tests, …), part.callID the model's call id;
//     "step-start", "step-finish", patch: sent once, complete when they appear.
//     "step-finish" carries the model call's tokens and cost (the same numbers
//     land in the message's info.tokens / info.cost); patch lists the files
//     the call changed ("files", absolute paths) and a snapshot "hash".
//     A task tool part's state.metadata.sessionId is the child session
//     (from state "running" on); its completed output holds the child's
//     final text in <task_result>.
//   - message.part.delta {sessionID, messageID, partID, field: "text",
//     delta}: streaming text; the full text comes with the part's
//     completing update, so deltas can be ignored for recording.
//   - session.diff, file.edited, file.watcher.updated, plugin.added,
//     catalog.updated, …: informational.
//
// Abort (POST /session/{id}/abort) on a busy session: the session goes
// idle within about a second and the unfinished assistant message gets
// info.error {"name":"MessageAbortedError",…} (tested).
//
// # Behind the agent port
//
// StartAgent starts the server for an agent.Spec (the scripted model or
// any OpenAI-compatible endpoint as a custom provider, the tests MCP
// server), checks the tests MCP server connected (ErrTestsMCP),
// subscribes to the events and creates the root session; Adapter is the
// agent.Agent the orchestrator drives. Translate maps events, and the
// Normalize methods (package wire, with the object types, which this
// package aliases, and the Reader) map sessions, message infos and parts,
// to the port's types: part kinds are OpenCode's part types, a "step-finish" part
// carries the model call's Usage, an assistant message is Final when it
// completed without waiting for tool results, and the error OpenCode
// reports for our own abort (MessageAbortedError) is dropped. Every
// normalized object keeps the server's JSON in Raw. Nothing above this
// package and wire parses OpenCode's JSON.
//
// Counting rule for the orchestrator: follow the root session and every
// session whose parentID chain reaches it; count an assistant message's
// part once, by part id, the first time Part.Completed is true; a turn is
// over when the root session sends session.idle (or session.status idle).
package opencode
