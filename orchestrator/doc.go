// Package orchestrator records a trajectory: it runs an agent (OpenCode) on
// a task in a sandbox, turn after turn, counts every completed agent part
// against the part budget and records each one durably as it completes.
//
// # A run
//
// Run resolves the task (package task), makes the trajectory folder and the
// sandbox, starts the agent's services (the scripted model when --script is
// given, OpenCode with the run_tests MCP server), creates the root session
// and hands over to the Loop. Each turn the Loop sends a prompt, follows the
// server's events and, for every part that completes in the root session or
// any descendant session (sub-agents, found through parentID), in this
// order:
//
//  1. checkpoints the workspace in git if files changed (gitstate);
//  2. appends the part record to agent_trace.json, durably (trace.Writer):
//     the part verbatim (content), its session, the sessions and message
//     infos first seen with it, the uncounted parts since the previous
//     counted one (other_parts: "step-start", "step-finish", the user's prompt,
//     …), the run_tests calls it completed (envoi_calls, with results), the
//     checkpoint, the effective git commit, and the tokens and cost reported
//     since the previous counted part;
//  3. publishes: the trace writer's chunk for the part and, when it made a
//     commit, the incremental history bundle go to the asynchronous
//     uploader; nothing on this path waits for the network.
//
// A part counts when it is complete: text and reasoning parts once their
// end time is set, tool parts in state completed or error, patch parts.
// Other part types, and parts of user messages, are kept uncounted. When a
// turn settles (the root session is idle) the Loop lists the session
// family's messages and records anything the event stream missed. Whatever
// is still unwritten at the end of a turn (parts after an abort, parts that
// never completed, message and session infos no counted part carried) goes
// into the turn's trailing_parts: every object the server returned appears
// in the trace exactly once.
//
// The budget is exact: at --max-parts the Loop aborts the session, keeps
// reading until it is idle (or AbortGrace passes) and keeps what arrives as
// trailing parts. Continuation prompts report the latest run_tests status of
// each required test path, unsolved first.
//
// End reasons: solved (every required test path passed in its latest run,
// checked after each turn), part_limit, timeout (--timeout), agent_error
// (the server died, reported an error for the root session, or answered
// three turns in a row with no part), envoi_error (a run_tests call failed
// inside the environment, status_code >= 500), interrupted (SIGINT or
// SIGTERM, or the recorder itself failed; the detail says which). Every end
// finishes the same way: the services stop, a final checkpoint, session_end
// with totals, repo.bundle, the artifacts map, final uploads.
//
// # Local layout
//
// Under the work folder (the store's folder for a local store, default
// ./runs; else ./runs or --work-dir):
//
//	trajectories/<id>/agent_trace.json   the trace, complete and valid after every part
//	trajectories/<id>/repo.bundle        git bundle of all refs (at the end)
//	trajectories/<id>/history/<part>.bundle  incremental bundle per committed checkpoint
//	trajectories/<id>/run.json           run state (RunState): options, paths, status
//	trajectories/<id>/logs/              service logs, secrets redacted (at the end)
//	sandboxes/<id>/workspace/            the agent's workspace (a git repository)
//	sandboxes/<id>/…                     OpenCode's config, data and raw logs
//
// The trajectory folder holds exactly what the store holds for the
// trajectory, so with the default local store it is the store: nothing is
// copied. With another store (S3, another folder) the same objects are
// uploaded, plus the trace's per-part chunks (see package chunk). The
// sandbox stays local: it holds the workspace's build outputs and the agent
// server's state, and may hold credentials the server was given.
//
// # Testing
//
// The Loop talks to the agent through the small Agent interface. Package
// agenttest provides an in-memory agent that plays scripted turns of
// OpenCode-shaped events, for fast tests of ordering, budget and end
// reasons and for the 10,000-part benchmark; the end-to-end tests run the
// real OpenCode with the scripted model.
package orchestrator
