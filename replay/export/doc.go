// Package export writes trajectories out for analysis tools: Parquet
// tables that DuckDB, pandas and polars read, and ATIF documents (Harbor's
// Agent Trajectory Interchange Format, v1.7) for Harbor's viewer and
// training pipelines. `traj export REF… --format parquet|atif --out DIR`
// is its command.
//
// # What is exported
//
// A reference is anything trace/store/ref resolves (a trajectory id in
// --store, a trajectory folder, an agent_trace.json path, an
// s3://…/trajectories/<id> URL), a whole store (a folder with
// trajectories/, a file:// or s3:// store URL: every trajectory with a
// trace or trace chunks) or a folder of trajectory folders; Options.StoreIDs
// adds trajectories of the store by id, skipping those it does not hold
// (`--experiment` passes an experiment's attempt ids). Each
// trajectory is read as a stream (trace.Scan: one part in memory at a
// time), with its evaluation report (trajectories/<id>/evaluation.json,
// written by `traj replay evaluate`) and its git history (repo.bundle or
// history/*.bundle, for lines added and removed; held in memory as replay
// does). A trajectory that cannot be read is reported and skipped; the
// command then exits 1.
//
// A part's text, tool name, call id, input, output, status, error and
// sub-agent session come from the harness's reader (sandbox/harness/recorded.Reader
// for the trace's "agent", name@version), the adapter that recorded the
// part; this package decodes no harness object, so every harness exports
// alike. Schema 2: harness is the name without the version (harness_version
// holds it), and ATIF's extra keeps each part's harness object verbatim.
// Schema 3: the parts' harness-neutral tool columns (tool_kind, command,
// file_path, exit_code, from the adapter's agent.Action), and tool_input
// written one way for every harness (agent.PlainJSON: compact, <, > and &
// unescaped; before, two harnesses' inputs carried \u003c escapes).
// Still schema 3, added nullable: the public − fresh gap
// (evaluations.fresh_gap, trajectories.final_fresh_gap).
//
// # Layout, versions, incremental export
//
//	DIR/export.json                    manifest: format, schema_version, value cap,
//	                                   per trajectory its source, fingerprint, rows
//	DIR/<table>/<trajectory id>.parquet   parquet: one file per table and trajectory
//	DIR/<trajectory id>/trajectory.json   atif: one document per trajectory
//
// Query a table with a glob: `SELECT … FROM read_parquet('DIR/parts/*.parquet')`
// (DuckDB), `pd.read_parquet('DIR/parts')` (pandas with pyarrow),
// `pl.read_parquet('DIR/parts/*.parquet')` (polars). Every table file is
// written for every trajectory, empty when it has no rows, so globs always
// match and schemas always agree.
//
// Trajectories are exported --workers at a time (default 2).
//
// SchemaVersion (now "3") versions the column names, types and meanings
// below and the ATIF mapping; it is in each Parquet file's key-value
// metadata ("traj.export.schema_version", with "traj.export.table",
// "traj.export.value_cap_bytes", "traj.trajectory_id", "traj.version"), in
// ATIF's extra and in the manifest. Renaming or retyping a column, or
// changing what it means, makes a new version; a new nullable column does
// not, nor a new table (labels came in schema 3, sweeps after it: an earlier export lacks
// its files, so the next export writes its trajectories again).
//
// Exporting into the same DIR again writes only what changed: a
// trajectory's fingerprint is the key, size and modification time of its
// trace (or chunks), evaluation report and bundles, taken with Stat and
// List only (a store of a thousand trajectories is checked without
// reading any trace). A trajectory whose fingerprint, schema version and
// value cap match the manifest, and whose files exist, is skipped;
// --full rewrites all, --prune removes trajectories the references no
// longer name. Files are written to a temporary name and renamed, and the
// manifest is saved every second and at the end, so an interrupted export
// leaves complete files and resumes about where it stopped.
//
// Measured (make bench, 2 cores shared with a load average of ~25):
// BenchmarkReexportStore1000 exports a store of 1,000 trajectories of 50
// parts in 42–65 s of wall time one at a time and 31 s with the default 2
// workers (about 9 ms of CPU per trajectory; the rest is the machine's
// load), and exports it again with nothing changed in 0.3–1.4 s.
// BenchmarkExport runs `traj export` on a trajectory of 10,000 and
// 50,000 parts (39 and 196 MB of trace), side by side with the binary
// TRAJ_BASELINE_BIN names: the binary of the day export's 5x target was
// set, 5 runs each, quiet machine (load 1.3). Parquet 10k 201 ms vs
// 1,595 ms (7.9x), 50k 758 ms vs 7,623 ms (10.1x); ATIF 10k 510 ms vs
// 3,537 ms (6.9x), 50k 2,246 ms vs 15,721 ms (7.0x). Peak RSS: Parquet
// 69-87 MB (was 93-137), ATIF 45-49 MB (was 33). Process start (~20 ms
// here) weighs most at 10k: on an earlier machine where it took ~60 ms,
// Parquet 10k was 4.5-4.6x (312-321 ms vs 1,395-1,478 ms) and ATIF 10k
// 4.8x. RSS does not follow the trace.
//
// Lines added and removed come from githistory.Diff, checkpoint after
// checkpoint: it reads only the folders on the way to a change and the
// packs' objects itself (replay/githistory's doc), where go-git's tree
// diff decoded each changed folder whole at every checkpoint (a
// synthetic 100,000-part trajectory, 18,735 checkpoints: 22x `trace
// show` and 375 MB). orchestrator/synth's BenchmarkScale (make
// bench-scale) measures the export beside `trace show` on synthetic
// trajectories of 10,000 and 100,000 parts; its doc has the numbers. The
// evaluation report is read lean when it holds its labels
// (evaluation.go: of its part evaluations only the final and the best,
// decoded one at a time): at 100,000 parts it is 46 MB of JSON, and
// decoded whole it took the export from 210 to 511 MB (286 MB now).
//
// Each part is read once: one byte walk finds the parts
// (trace.ScanOffsets, ~1 GB/s; 256 KB at a time, so the window stays in
// cache), one decoder a core decodes each (decodePart in partdecode.go:
// the trace's fields in one walk, content and other_parts kept as slices;
// then the harness's reader decodes the content once: OpenCode's with
// trace/jsondec, not encoding/json), and the export's code sees them in
// order (read.go). Parquet pages are compressed by the export's own zstd
// codec (zstd.go: parquet-go's settings with a 1 MB window instead of 8
// MB, whose 16 MB history buffer an encoder was a third of the live heap;
// same bytes); the five Parquet files close and commit at once
// (eachFile). Where the time goes (perf, 10,000 parts): page faults ~19 %
// of the CPU, the Parquet writer ~19 % (on the in-order goroutine), the
// OpenCode reader's decode ~17 % (most of it copying tool outputs into
// fresh strings), the walk ~12 %, decodePart ~8 %, process start ~60 ms
// of ~320 ms (the jsonschema library's init, which compiles every draft's
// meta-schema, ~7 ms of it and ~18 ms of CPU; the Kubernetes types are no
// longer linked, orchestrator/batch/kubeapi.go). ATIF: a part's extra
// is marshalled on the decoders into a buffer sized for its verbatim
// values (atifextra.go), and canonicalJSON (whether a raw value can be
// copied as it is) searches with bytes.IndexByte; marshalling the entries
// is the in-order goroutine's largest cost (a pipeline that marshalled
// them on every core was tried: no gain). Claude Code's and Codex's
// readers still decode with encoding/json (they replay lines through the
// live translator). The export does not read the part index (it needs
// every part; the walk costs less than checking an index), so a stale or
// missing index changes nothing (TestExportIgnoresPartIndex).
//
// # Parquet tables (schema version 3)
//
// Strings are UTF-8 (BYTE_ARRAY STRING), times are TIMESTAMP(MICROS,
// UTC), integers INT64 unless noted, fractions DOUBLE. Columns marked
// "null" are nullable; a null means the trace does not say. Files are
// zstd-compressed; a row group closes when its rows reach 32 MiB, so
// memory is bounded by a row group and not by the trace.
//
// trajectories — one row per trajectory:
//
//	trajectory_id          trajectory id
//	trace_schema_version   null; the trace's schema_version ("0": the original recorder)
//	harness                the agent program: opencode, claude-code, codex (the
//	                       trace's "agent" is name@version)
//	harness_version        null; the harness's version from the trace's "agent"
//	model                  PROVIDER/MODEL (trace "agent_model")
//	task, environment, environment_version, session_id   null
//	started_at, ended_at   null; ended_at from session_end
//	end_reason             null; session_end.reason (solved, part_limit, …)
//	parts                  counted parts
//	turns                  INT32
//	subagent_sessions      INT32; sub-agent sessions seen
//	tool_parts, checkpoints, run_tests_calls   parts that are tool calls, parts that
//	                       made a commit, run_tests calls recorded
//	final_commit           null; session_end.final_git_commit
//	tokens_input, tokens_output, tokens_reasoning, tokens_cache_read,
//	tokens_cache_write, cost_usd
//	                       null; the trajectory's totals by trace.Usage (session_end
//	                       totals when present, else the sum over parts)
//	evaluated              BOOLEAN; an evaluation report was found
//	final_passed, final_failed, final_total, final_pass_rate
//	                       null; the evaluation at the last part; without an
//	                       evaluation report, the trace's last full ground truth
//	                       (replay.FullGroundTruth: no error, not sampled)
//	best_pass_rate, best_part   null; the best pass rate and the first part at it
//	                       (from the same source)
//	score_source           null; where the scores above come from: "evaluate" (the
//	                       evaluation report) or "ground_truth" (the trace); null:
//	                       neither has a result
//	trace_rebuilt          BOOLEAN; the trace was rebuilt from chunks (the run died)
//	source                 where the trajectory was read from
//	rerun_of               null; the trajectory this one reran (traj replay rerun)
//	forked_from, fork_part null; the trajectory this one forked from and the fork
//	                       point (its parts 1..fork_part are inherited)
//	tokens_source          null; "model_gateway" (the totals are the sums of
//	                       model_calls.jsonl) or "harness" (older traces)
//	model_calls            null; calls in the gateway's record
//	harness_tokens_input, harness_tokens_output, harness_tokens_total,
//	harness_cost_usd       null; what the harness itself reported, beside
//	unattributed_tokens, unattributed_cost_usd, unattributed_calls
//	                       null; the gateway's usage no part claims (a call cut
//	                       by the budget, a retried call): parts + these = totals
//	final_fresh_gap        null; the public − fresh gap of the final result above
//	                       (replay.FreshGap: the pass rate of every suite but
//	                       "fresh", cases pooled, minus fresh's, its levels
//	                       pooled); null when that result lacks either side
//
// parts — one row per counted part (row count = the trace's parts):
//
//	trajectory_id, part    the part index (1-based, the replay key)
//	turn                   INT32; the 1-based position of the part's turn
//	timestamp              null; when the part completed
//	session_id             null; the part's session
//	parent_session_id      null; for sub-agent parts, the parent session
//	subagent               BOOLEAN; the part is from a sub-agent session
//	harness                as in trajectories
//	model                  null; PROVIDER/MODEL of the message the part belongs to
//	message_id, part_id, part_type   null; the harness's ids and part type
//	                       (text, reasoning, tool, patch, …)
//	tool, tool_call_id, tool_status, tool_title   null; tool parts
//	tool_input             null; the call's arguments as JSON text, capped; compact,
//	                       <, > and & as themselves whatever the harness wrote
//	tool_input_bytes       null; the arguments' full length in bytes
//	tool_output            null; the tool's output, capped
//	tool_output_bytes      null; its full length
//	tool_error             null; the tool's error, capped
//	tool_duration_ms       null; tool start to end
//	subagent_session_id    null; the sub-agent session a task tool started
//	tool_kind              null; what the tool call does, the same for every
//	                       harness: shell, edit, write, read, search, run_tests,
//	                       sub-agent, todo (agent.Action.ToolKind, decided by the
//	                       adapter that knows the tool); null for a tool it does
//	                       not know
//	command                null; a shell call's command line, capped
//	file_path              null; the file an edit, write or read names (as given)
//	exit_code              null; a shell call's exit status when the harness
//	                       reports it (OpenCode's bash metadata, Codex's
//	                       exit_code, Claude Code's "Exit code N" error)
//	text                   null; text and reasoning parts' text, capped
//	text_bytes             null; its full length
//	value_cap_bytes        the cap in force (--value-cap; -1: none). A value whose
//	                       *_bytes exceeds it was cut at a UTF-8 boundary.
//	tokens_input, tokens_output, tokens_reasoning, tokens_cache_read,
//	tokens_cache_write, cost_usd
//	                       null; the usage the trace attributes to the part (the model
//	                       calls reported in its interval); a turn's last part also
//	                       carries the usage of the turn's trailing parts (OpenCode's
//	                       closing step-finish), so the sums over a trajectory's parts
//	                       equal its totals whenever session_end carries them
//	commit                 null; the effective commit after the part (join key)
//	commit_before          null; the commit before the part
//	committed              BOOLEAN; the part made a checkpoint
//	files_changed          INT32; len(changed_files)
//	changed_files          LIST<STRING>; paths the checkpoint changed
//	lines_added, lines_removed   null when the history is unavailable; text lines
//	                       added and removed by the checkpoint (0 for parts that
//	                       changed nothing; binary files count no lines); the
//	                       line diff's work is bounded (replay/linediff): a file
//	                       too large to diff counts the lines of a correct but
//	                       not minimal diff, with a warning naming the part
//	run_tests_calls        INT32; run_tests calls completed by the part
//	model_call_seq         null; the model call the part came from (joins
//	                       model_calls.seq); its tokens and cost are then the
//	                       part's share of that call, and no trailing usage is added
//	model_call_ms          null; that call's latency
//	harness_tokens_total, harness_cost_usd   null; what the harness reported
//	                       in the part's interval
//
// evaluations — one row per commit and suite of the evaluation report
// (source "evaluate"), one per ground-truth evaluation and required test
// path recorded in the trace during the run (source "ground_truth"), and
// one per run_tests call the agent made (source "run_tests"):
//
//	trajectory_id, source
//	commit, tree           null; the evaluated commit and its tree (join parts on commit)
//	part                   null; evaluate: the first part at the commit; ground_truth:
//	                       the part whose checkpoint made the commit; run_tests: the
//	                       part that completed the call
//	suite                  null; the test path (null: a commit with no suite results,
//	                       e.g. one that could not be evaluated; its counts are the
//	                       commit's)
//	passed, failed, total  null; counts
//	pass_rate              null; passed/total
//	result_source          null; evaluate: evaluated | cache | same_tree | failed;
//	                       ground_truth: evaluated | cache; run_tests: the call's
//	                       status code
//	error                  null; build or evaluation error
//	duration_ms            null
//	timestamp              null; run_tests: when the call completed; ground_truth:
//	                       when the result landed
//	fresh_gap              null; evaluate and ground_truth: the public − fresh gap
//	                       (replay.FreshGap) of the whole result the row is a
//	                       suite of, the same on each of its rows; null when the
//	                       result lacks the fresh suite or a public one, and on
//	                       run_tests rows (one path each)
//
// tests — one row per test case of the evaluation report's attribution,
// or, without a report, of the trace's full ground truth with each result's
// cases read from the store's evaluation cache, where the run put them
// (replay.GroundTruthAttribution; parts are then the ground-truth parts,
// and a result missing from the cache leaves the table empty, with a
// warning):
//
//	trajectory_id, test    test id ("basics/smoke/hello.c")
//	suite                  the test id's first segment
//	source                 "evaluate" or "ground_truth" (as score_source)
//	first_pass_part        null; the part that first made it pass
//	broken_at, fixed_at    LIST<INT64>; parts after which it broke / passed again
//	times_broken           INT32
//	passing_at_end         BOOLEAN
//
// # ATIF (RFC 0001 v1.7, schema_version "ATIF-v1.7")
//
// ATIF's own names ("steps", "step_id", …) are data and kept verbatim; in
// traj's words, ATIF's list holds entries, and the mapping is:
//
//	turn prompt            a user entry (timestamp: the turn's start)
//	model message          one agent entry: its text parts joined as message, its
//	                       reasoning parts as reasoning_content, its tool parts as
//	                       tool_calls (tool_call_id = the harness's call id,
//	                       function_name = tool, arguments = the input object) with
//	                       their results as observation.results (source_call_id =
//	                       the call; content = output, or the error)
//	per-entry metrics      when the parts name the model gateway's calls
//	                       (part.model_call): one entry per call, its metrics the
//	                       parts' shares (the call's usage, as recorded), llm_call_count
//	                       its calls, extra.traj.model_calls their seqs,
//	                       metrics_source "model gateway"; else
//	                       from the harness's per-call usage (OpenCode step-finish):
//	                       prompt_tokens = input + cache read + cache write,
//	                       completion_tokens = output + reasoning, cached_tokens =
//	                       cache read, cost_usd; llm_call_count = calls seen; traj's
//	                       own breakdown in metrics.extra.traj_tokens. A trace
//	                       without per-call usage uses the usage traj attributed to
//	                       the entry's parts.
//	sub-agent session      an embedded trajectory in subagent_trajectories
//	                       (trajectory_id = session id, its own entries from 1, a user
//	                       entry with the task prompt first), referenced from the task
//	                       call's result by subagent_trajectory_ref.trajectory_id;
//	                       nested sub-agents nest the same way
//	final_metrics          the trajectory's totals by trace.Usage (sub-agents
//	                       included), total_steps = the document's entries
//	extra.traj             on each agent entry: message_id, session_id and parts —
//	                       every part's trace record verbatim (index, timestamp,
//	                       commit and checkpoint, run_tests calls, tokens, sessions,
//	                       messages, uncounted parts) with its harness object
//	                       verbatim; on the document: schema
//	                       versions, task, environment, session_end, artifacts,
//	                       turns (with trailing parts), usage that reached no entry
//
// Root entries are written as they are made; a sub-agent's entries are
// spilled to a temporary file and copied in at the end, so memory holds one
// model message per session. CheckATIF checks a document against the RFC's
// rules (sequential ids, observations naming a tool call of their entry,
// ISO 8601 times, agent-only fields on agent entries, resolvable sub-agent
// references).
//
// model_calls — one row per model call of the model gateway's record
// (sandbox/gateway/model, model_calls.jsonl in the trajectory's folder);
// empty for trajectories recorded without the gateway:
//
//	trajectory_id, seq     the call's sequence number (1-based)
//	started_at             null
//	latency_ms             DOUBLE; to the end of the response
//	first_byte_ms          null; DOUBLE
//	api, path              wire API (chat_completions, messages, responses) and path
//	status                 INT32; HTTP status (0: no answer)
//	model                  null; the model the request named
//	stream                 BOOLEAN
//	request_sha256, request_bytes   the request body by digest and size
//	response_id            null; the provider's message id
//	tool_call_ids          LIST<STRING>; tool calls the response made (join parts.tool_call_id)
//	tokens_input, tokens_output, tokens_reasoning, tokens_cache_read,
//	tokens_cache_write, cost_usd   null; the call's usage, as the parts count it
//	parts_before           null; parts the trace held when the call started
//	error                  null
//	response               null; the response body as received, capped
//	response_bytes         its full length
//	response_truncated     BOOLEAN; the gateway itself cut the response
//
// labels — one row per failure label of the trajectory (replay/labels:
// premature_stop, declared_infeasible, regression_loop, plateau, stall,
// passing_then_lost, budget_exhausted_improving, suspect; the rules and
// thresholds are that package's doc); empty when it has none:
//
//	trajectory_id, label
//	part                   null; the part where the label shows (join parts.part);
//	                       null: the whole trajectory
//	evidence               what triggered it, in words ("best 10/10 at part 3,
//	                       final 6/10 at part 4")
//	source                 "evaluate": the labels the evaluation report holds
//	                       (`traj replay evaluate`, with its thresholds);
//	                       "computed": computed here with the default thresholds
//	                       from the trace and the evaluation report, if any
//
// sweeps — one row per part a fork sweep of the trajectory swept (`traj
// sweep`, replay/sweepvalue: the value of the state at that part); empty
// when it has none:
//
//	trajectory_id          the swept (source) trajectory
//	sweep                  the sweep's name; model: the forks' model
//	part, fork_part        the part asked for; the fork point its forks recorded
//	forks, counted         its forks; those whose value counts (prefix reproduced, a result)
//	not_reproduced         forks whose inherited parts differ from the source's
//	mean_value, std_value, min_value, max_value   null without counted forks; the
//	                       best ground-truth pass rate a fork reached from its fork point on
//	solved, share_solved   counted forks that passed every case, and their share
//	decisive               BOOLEAN; the part where the mean value drops most
package export
