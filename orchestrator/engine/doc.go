// Package engine is the recording engine of one trajectory: the turn
// Loop over an agent (the agent port, sandbox/agent), the capture of
// counted parts from its normalized events, and the test status from
// run_tests results.
//
// Each turn the Loop sends a prompt, follows the
// server's events and, for every part that completes in the root session or
// any descendant session (sub-agents, found through parentID), in this
// order:
//
//  1. checkpoints the workspace in git if files changed (gitstate);
//  2. appends the part record to agent_trace.json, durably (trace.Writer),
//     after LoopConfig.Redact cleared its secrets on a copy (the prompt and
//     trailing parts too; the caller's objects are never written):
//     the part verbatim (content), its session, the sessions and message
//     infos first seen with it, the uncounted parts since the previous
//     counted one (other_parts: "step-start", "step-finish", the user's prompt,
//     …), the run_tests calls it completed (envoi_calls, with results), the
//     checkpoint, the effective git commit, and its model call (ModelCalls:
//     the model gateway's call it came from, matched by tool call id,
//     response id, message or order) with its share of that call's tokens
//     and cost, the harness's own report beside (harness_tokens);
//  3. publishes: the loop asks the writer what it fixed (Written) and
//     hands that chunk to the Publisher (every turn start and end too),
//     then the part, whose commit, if any, becomes the incremental history
//     bundle; both go to the asynchronous uploader, and nothing on this
//     path waits for the network or runs behind a callback;
//  4. stores the part's index in LoopConfig.Parts, the counter the model
//     gateway reads for each call's parts_before.
//
// Handing each chunk to the Publisher, instead of the writer calling an
// uploader back, costs nothing measurable: BenchmarkLoop10kParts, 8
// alternating runs each on a loaded 2-core machine, median p50 0.151
// against 0.147 ms per part, p99 38.4 against 37.9 ms, wall 23.1 against
// 23.2 s (the runs of either spread ±7 % at p50).
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
// (the server died, reported an error for the root session, answered
// three turns in a row with no part, or stalled: a turn with no new part
// for StallTimeout, default 30 min, is aborted and sent again once in the
// same session, and a second stall in a row ends the run), envoi_error (a run_tests call failed
// inside the environment, status_code >= 500), interrupted (SIGINT or
// SIGTERM, or the recorder itself failed; the detail says which). Every end
// finishes the same way: the services stop, a final checkpoint, session_end
// with totals, repo.bundle, the artifacts map, final uploads.
//
// # Testing
//
// The Loop talks to the harness only through the agent port; it parses
// no harness's JSON. Package orchestrator/agenttest plays scripted turns of
// normalized events for fast tests of ordering, budget and end reasons and
// for the 10,000-part benchmark; the end-to-end tests (package
// orchestrator) run the real harnesses with the scripted model.
//
// # Deferred checkpoints
//
// A tool part recorded while other tool calls of its model response are
// still open takes no checkpoint (repo_checkpoint.deferred): the harness
// runs them side by side, so the changes land in the last one's
// checkpoint whichever finished first, and a rerun's checkpoints equal
// its source's (capture.toolBeside). A harness can report a response's
// second tool call only after the first completed (a fast rerun; Codex
// always), so the model gateway also tells the loop each response's tool
// call ids (model.Options.OnResponse -> ResponseTools) and the loop
// defers while calls of the part's response are not recorded: by call
// id, or by count for Codex, whose parts do not carry the model's ids
// (harness.Harness.LateToolEvents, LoopConfig.CountTools).
package engine
