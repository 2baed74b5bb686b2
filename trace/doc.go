// Package trace is the agent_trace.json contract: its Go types, its JSON
// Schema, a crash-safe per-part writer, a streaming reader and a
// validator. It depends on nothing else in traj.
//
// # Schema, version 1
//
// The field names are those of the original (Python) recorder, so traces
// it wrote load and validate here; they have no schema_version (read as
// version "0"). The JSON Schema (draft 2020-12) is
// schema/agent_trace.schema.json, embedded (SchemaJSON, CompileSchemas).
// Unknown fields are allowed everywhere, for forward compatibility.
//
// Top level, in the order traj writes it:
//
//	schema_version   traj: "1". Absent in original traces.
//	trajectory_id    the run's id.
//	session_id       root OpenCode session.
//	agent            e.g. "opencode".
//	agent_model      PROVIDER/MODEL.
//	started_at       RFC 3339 (traj writes UTC with microseconds).
//	task             traj: the task name.
//	environment      traj: {name, version, test_paths, artifacts,
//	                 deny_c_compiler}: what scored the run; version is
//	                 the one that keys its results, the last two marked
//	                 on it (all that older traces have of them).
//	capture          traj: what the checkpoints record.
//	rerun_of         traj: {trajectory_id, store, agent, until_part}: the
//	                 trajectory a `traj replay rerun` re-executed from its
//	                 recorded model calls; part n is the rerun of its part n.
//	forked_from      traj: {trajectory_id, store, agent, part}: the
//	                 trajectory a `traj run --fork` branched from; parts
//	                 1..part are inherited (rerun), the rest its own.
//	turns            array of turns (below).
//	artifacts        {agent_trace, repo_bundle: URI}; {} while running.
//	session_end      null while running, then {reason, total_parts,
//	                 total_turns, final_git_commit} plus traj's ended_at,
//	                 detail, tokens, cost. reason is one of solved,
//	                 part_limit, timeout, agent_error, envoi_error,
//	                 interrupted, token_limit, cost_limit,
//	                 model_unreachable, recorded_calls_spent (a rerun
//	                 whose harness asked for more calls than recorded).
//
// A turn: turn (number, 1-based), timestamp, prompt, traj's session_id,
// parts, traj's trailing_parts (verbatim server parts after the last
// counted one, uncounted), part_start and part_end (first/last part
// index; null for a turn without parts), traj's ended_at (absent while
// the turn runs).
//
// A part: part (global index, 1..N without gaps across turns), timestamp,
// prompt (the turn's prompt on its first part), message_id, sessions and
// new_messages (verbatim server objects first seen with this part),
// session_ids, envoi_calls (run_tests calls completed in this part:
// path, timestamp, duration_ms, status_code, error, result — result has
// at least passed, failed, total — and traj's call_id and tool_call_id,
// the tool gateway's id of the call), repo_checkpoint
// (commit_before, commit_after, changed_files, and traj's committed),
// git_commit (the workspace commit after the part). traj adds session_id
// (root or sub-agent session), part_id, part_type, tool, content (the
// completed part exactly as the harness sent it: an object, or an array of
// its objects in order when the part is built from several, as a CLI
// harness's tool call and result), other_parts (uncounted
// parts since the previous counted one, verbatim), tokens {input, output,
// reasoning, cache_read, cache_write}, cost, model_call, harness_tokens,
// harness_cost, ground_truth and gateway_calls.
//
// Usage (traj). model_call {seq, model, latency_ms, outputs, join} names
// the model gateway's call a part came from (seq: its line of
// model_calls.jsonl; join: how it was matched: tool_call_id, response_id,
// message, order). A part's tokens and cost are then its share of that
// call (the call's divided evenly among its outputs, the remainder on the
// first) and harness_tokens/harness_cost what the harness itself reported
// in the part's interval. session_end's tokens and cost are the sums of
// the gateway's record when session_end.model_calls (its number of calls)
// is set, with the harness's totals beside (harness_tokens, harness_cost)
// and unattributed {tokens, cost, calls: [{seq, tokens, cost, outputs,
// claimed}]}: the usage no part claims (a call cut by the budget, a
// retried or side call). The parts' tokens plus unattributed equal
// session_end.tokens (Validate checks it). Traces without model_call
// (recorded before) keep the harness's counts in tokens and cost; they
// read as before. trace.Usage is the one owner of these totals.
//
// gateway_calls (traj, on a part and on session_end) lists the calls the
// tool gateway answered that no harness part carries: the agent read the
// stub's token and called the gateway itself (the token cannot be kept
// from it: the harness that starts the stub runs as the agent's user in
// the agent's sandbox). Each is {tool_call_id, tool, arguments, start,
// duration_ms, text (the answer the caller got), is_error}. A call is
// taken into the first part recorded once it is unclaimed for a part and
// two seconds (a harness part carrying it lands within that, and names it
// in its envoi_call's tool_call_id); on session_end, every call still
// unclaimed. So every line of tool_calls.jsonl is in the trace once: an
// envoi_call's tool_call_id or a gateway_calls entry.
//
// The trace holds each harness's objects only, never a second, normalized
// copy: a part's harness-neutral content (kind, text, tool name, call id,
// input, output, status, error, files, sub-agent session) is read from
// content by the adapter of the harness "agent" names (name@version;
// sandbox/harness/recorded.Reader, the agent port's Reader). Measured on traces the
// current writer recorded (real harness, scripted model), a written copy
// would add 7.5 % (OpenCode), 15 % (Claude Code) and 25 % (Codex) to the
// end-to-end trajectories and 37 % (94 of 250 KB) to the 50-part
// OpenCode demo, duplicating text and tool input and output that content
// already holds; reading it instead costs nothing to record, keeps one source
// that cannot disagree with itself, and reads every trace recorded so far.
//
// ground_truth (traj, on a part and on session_end) lists traj's own
// evaluations of checkpoint trees, made in an evaluation sandbox while the
// agent works, in the order they landed: those that completed since the
// previous part was recorded (on session_end: after the last part, the
// final tree's among them). Each is {part (whose checkpoint made the
// commit), commit, tree, timestamp, duration_ms, cached, cache_key,
// key, artifact, artifact_cached, key_why (a task that declares its
// build's artifacts: which key served the tree), suites [{path, passed,
// failed, total, build_ok, sample_size, fixed_like}] in task order, passed,
// failed, total, solved, error, sampled, sample_seed, fixed_like}.
// fixed_like counts the cases whose program did what the case without
// its nonce wants (what a program ignoring its input does): a suspicion
// beside the score, never part of it. A sampled result (sampled:
// true) counts a fixed, seeded sample of each sampled path's cases
// (sample_size of them, the same cases for every tree of the trajectory);
// it is never solved (the schema refuses it): "solved" is only decided on
// the full paths. Absent sampled: every path ran in full. It is a
// summary: the per-case result is
// the evaluation-cache entry cache_key, the one `traj replay evaluate`
// reads. A result rides on the next part because parts are the only
// records appended after the header; this keeps each append O(part).
//
// Invariants checked by Validate beyond the schema: part indices 1..N
// without gaps; each turn's part_start/part_end equal its first/last
// part; every part has a non-empty git_commit; session_end totals equal
// the counted parts and turns.
//
// # Layout on disk
//
// The writer lays the document out so that only a short closing tail
// changes when something is added: header fields, then "turns":[, each
// turn's fixed fields then "parts":[ and its parts, then the turn's
// changing fields (trailing_parts, part_start, part_end, ended_at), and
// last the top-level artifacts and session_end:
//
//	{"schema_version":"1",…,"turns":[
//	{"turn":1,…,"parts":[
//	{"part":1,…},
//	{"part":2,…}],"part_start":1,"part_end":2,"ended_at":"…"},
//	{"turn":2,…,"parts":[
//	{"part":3,…}],"part_start":3,"part_end":3}      <- tail from here
//	],"artifacts":{},"session_end":null}
//
// Appending a part writes ",\n<part>" plus the new tail at the tail's
// offset: O(part size), never a rewrite of the file.
//
// # Part index
//
// Beside the trace the writer keeps agent_trace.index (PartIndexPath): a
// fixed-size record per part (turn, byte offset and length, CRC-32C of
// the part's bytes, commit; format in partindex.go), appended once the
// part is in the trace. LoadPartIndex never trusts it: it checks sampled
// parts' bytes, reads parts it lacks from the trace's tail, rebuilds it by
// one ScanOffsets walk when it does not match, and writes nothing.
//
// The index never runs ahead of the trace, and a kill can tear only its
// last record; it is a cache, never the record. The sample is the first,
// the last and up to 14 parts; a mismatch (a trace recorded again,
// another trace's index) means one scan; bad input changes nothing; the
// writer repairs the index when it reopens the trace. checkout-part reads
// the index and its one part (and checks that part's bytes); replay
// evaluate takes every part's commit from it (9 ms at 10,000 parts) and
// reads the parts only for --html (TestPartCommitsAtEqualsFullRead in
// replay: the same parts and commits as a full read, whatever the index's
// state, also while the trace is written). PartIndexDigest digests the
// parts from the index alone, checked as LoadPartIndex checks it (none for
// a missing, torn, stale or short index). Not through it: export and
// `trace show`, which need every part (their cost is decoding JSON), and
// the viewer, which keeps its own richer index on the same ScanOffsets
// walk. TestCrashResumeLarge kills a writer with SIGKILL once its trace
// holds 20,000 parts (100,000 in make stress: about 4 s of appending and
// 55 s in all on a loaded machine), resumes and finishes it, and checks
// after the kill and at the end that every acknowledged part is there in
// order, that the index serves every part with its commit, and that its
// digest is the one of an index built from nothing (or, short of the
// parts after the kill, refused as stale).
//
// `trace validate` and `show` cut JSON strings at 1 MB while reading
// (capstrings.go): a trace holding a 200 MB string validates in 46 MB of
// RSS; a 50,000-part trace in 38 MB.
//
// # Tampering
//
// Before every mutation the writer checks that both trace files have the
// size, mtime and ctime it left and that both names still point to them
// (tamper.go); a change by anyone stops recording with ErrTampered, the
// last good copy is kept at the shadow path, and RecoverFromShadow
// (recover.go; `traj trace finalize` or `--resume`) puts it back with
// every acknowledged part.
//
// # Crash safety
//
// Writing the tail in place is not enough: a kill can tear a large
// write() of a regular file at a page boundary and leave invalid JSON. So
// the writer keeps two files with the same content, agent_trace.json and
// a hidden twin .agent_trace.json.shadow, and an open descriptor on each.
// Each mutation is written into the twin (and fdatasync'ed with
// WriterOptions.Sync), then renameat2(RENAME_EXCHANGE) swaps the two
// names atomically, then the same bytes are written into the other file,
// which is now the twin. At every instant the name agent_trace.json
// refers to a complete document: the old one before the exchange, the new
// one after. The folder is fsync'ed after the first exchange. Where the
// filesystem cannot exchange names (EINVAL/ENOSYS/EOPNOTSUPP), the writer
// warns once and falls back to copying the whole document to a temp file
// and renaming it over the trace: still crash-safe, but O(trace size) per
// mutation. Without Sync the guarantee covers a killed process (the page
// cache survives); with Sync it also covers power loss, except that the
// very last exchange may be lost.
//
// The exchange decides what a call returns: an error before it (a full
// disk while writing the twin) leaves the file as it was and refuses the
// mutation; once the names are exchanged the file holds the mutation, so
// the call succeeds whatever fails next (a warning is logged, the twin is
// marked stale and rebuilt from the file before the next mutation). The
// caller, the writer and the file therefore always agree: a part is
// either acknowledged or absent.
//
// OpenForAppend resumes a trace after a crash: it walks the file once to
// find where the fixed bytes end and what the tail must say, copies it to
// a fresh twin, and continues part numbering where the file stops.
//
// Writer.Written returns, after each mutation, its new fixed bytes and
// the new tail (WriterOptions.OnChunk reports the same as a callback); the
// concatenation of all chunks' Data plus the last Tail is the file, which
// lets an uploader ship per-part pieces.
package trace
