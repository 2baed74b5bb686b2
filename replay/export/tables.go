package export

import "time"

// The Parquet tables, one Go type per table: the struct tags are the
// column names and types, documented in doc.go. Changing a name or type is
// a new SchemaVersion; adding a nullable column at the end is not.

// TrajectoryRow is one row of the trajectories table.
type TrajectoryRow struct {
	TrajectoryID       string     `parquet:"trajectory_id"`
	TraceSchemaVersion *string    `parquet:"trace_schema_version,optional"`
	Harness            string     `parquet:"harness,dict"`
	HarnessVersion     *string    `parquet:"harness_version,optional"`
	Model              string     `parquet:"model,dict"`
	Task               *string    `parquet:"task,optional,dict"`
	Environment        *string    `parquet:"environment,optional,dict"`
	EnvironmentVersion *string    `parquet:"environment_version,optional"`
	SessionID          *string    `parquet:"session_id,optional"`
	StartedAt          *time.Time `parquet:"started_at,optional,timestamp(microsecond:utc)"`
	EndedAt            *time.Time `parquet:"ended_at,optional,timestamp(microsecond:utc)"`
	EndReason          *string    `parquet:"end_reason,optional,dict"`
	Parts              int64      `parquet:"parts"`
	Turns              int32      `parquet:"turns"`
	SubagentSessions   int32      `parquet:"subagent_sessions"`
	ToolParts          int64      `parquet:"tool_parts"`
	Checkpoints        int64      `parquet:"checkpoints"`
	RunTestsCalls      int64      `parquet:"run_tests_calls"`
	FinalCommit        *string    `parquet:"final_commit,optional"`
	TokensInput        *int64     `parquet:"tokens_input,optional"`
	TokensOutput       *int64     `parquet:"tokens_output,optional"`
	TokensReasoning    *int64     `parquet:"tokens_reasoning,optional"`
	TokensCacheRead    *int64     `parquet:"tokens_cache_read,optional"`
	TokensCacheWrite   *int64     `parquet:"tokens_cache_write,optional"`
	CostUSD            *float64   `parquet:"cost_usd,optional"`
	Evaluated          bool       `parquet:"evaluated"`
	FinalPassed        *int64     `parquet:"final_passed,optional"`
	FinalFailed        *int64     `parquet:"final_failed,optional"`
	FinalTotal         *int64     `parquet:"final_total,optional"`
	FinalPassRate      *float64   `parquet:"final_pass_rate,optional"`
	BestPassRate       *float64   `parquet:"best_pass_rate,optional"`
	BestPart           *int64     `parquet:"best_part,optional"`
	ScoreSource        *string    `parquet:"score_source,optional,dict"`
	TraceRebuilt       bool       `parquet:"trace_rebuilt"`
	Source             string     `parquet:"source"`
	RerunOf            *string    `parquet:"rerun_of,optional"`
	ForkedFrom         *string    `parquet:"forked_from,optional"`
	ForkPart           *int64     `parquet:"fork_part,optional"`
	// The totals' source and what beside them (trace.Usage): the model
	// gateway's record or the harness's own counts; the harness's counts
	// and the gateway's usage no part claims.
	TokensSource          *string  `parquet:"tokens_source,optional,dict"`
	ModelCalls            *int64   `parquet:"model_calls,optional"`
	HarnessTokensInput    *int64   `parquet:"harness_tokens_input,optional"`
	HarnessTokensOutput   *int64   `parquet:"harness_tokens_output,optional"`
	HarnessTokensTotal    *int64   `parquet:"harness_tokens_total,optional"`
	HarnessCostUSD        *float64 `parquet:"harness_cost_usd,optional"`
	UnattributedTokens    *int64   `parquet:"unattributed_tokens,optional"`
	UnattributedCostUSD   *float64 `parquet:"unattributed_cost_usd,optional"`
	UnattributedCallCount *int64   `parquet:"unattributed_calls,optional"`
	// FinalFreshGap is replay.FreshGap of the final result (the one
	// final_pass_rate is): public pass rate minus the fresh suite's.
	FinalFreshGap *float64 `parquet:"final_fresh_gap,optional"`
}

// PartRow is one row of the parts table: one counted part.
type PartRow struct {
	TrajectoryID     string     `parquet:"trajectory_id,dict"`
	Part             int64      `parquet:"part,delta"`
	Turn             int32      `parquet:"turn"`
	Timestamp        *time.Time `parquet:"timestamp,optional,timestamp(microsecond:utc)"`
	SessionID        *string    `parquet:"session_id,optional,dict"`
	ParentSessionID  *string    `parquet:"parent_session_id,optional,dict"`
	Subagent         bool       `parquet:"subagent"`
	Harness          string     `parquet:"harness,dict"`
	Model            *string    `parquet:"model,optional,dict"`
	MessageID        *string    `parquet:"message_id,optional"`
	PartID           *string    `parquet:"part_id,optional"`
	PartType         *string    `parquet:"part_type,optional,dict"`
	Tool             *string    `parquet:"tool,optional,dict"`
	ToolCallID       *string    `parquet:"tool_call_id,optional"`
	ToolStatus       *string    `parquet:"tool_status,optional,dict"`
	ToolTitle        *string    `parquet:"tool_title,optional"`
	ToolInput        *string    `parquet:"tool_input,optional"`
	ToolInputBytes   *int64     `parquet:"tool_input_bytes,optional"`
	ToolOutput       *string    `parquet:"tool_output,optional"`
	ToolOutputBytes  *int64     `parquet:"tool_output_bytes,optional"`
	ToolError        *string    `parquet:"tool_error,optional"`
	ToolDurationMs   *int64     `parquet:"tool_duration_ms,optional"`
	SubagentSession  *string    `parquet:"subagent_session_id,optional"`
	ToolKind         *string    `parquet:"tool_kind,optional,dict"`
	Command          *string    `parquet:"command,optional"`
	FilePath         *string    `parquet:"file_path,optional"`
	ExitCode         *int32     `parquet:"exit_code,optional"`
	Text             *string    `parquet:"text,optional"`
	TextBytes        *int64     `parquet:"text_bytes,optional"`
	ValueCapBytes    int64      `parquet:"value_cap_bytes"`
	TokensInput      *int64     `parquet:"tokens_input,optional"`
	TokensOutput     *int64     `parquet:"tokens_output,optional"`
	TokensReasoning  *int64     `parquet:"tokens_reasoning,optional"`
	TokensCacheRead  *int64     `parquet:"tokens_cache_read,optional"`
	TokensCacheWrite *int64     `parquet:"tokens_cache_write,optional"`
	CostUSD          *float64   `parquet:"cost_usd,optional"`
	Commit           *string    `parquet:"commit,optional"`
	CommitBefore     *string    `parquet:"commit_before,optional"`
	Committed        bool       `parquet:"committed"`
	FilesChanged     int32      `parquet:"files_changed"`
	ChangedFiles     []string   `parquet:"changed_files,list"`
	LinesAdded       *int64     `parquet:"lines_added,optional"`
	LinesRemoved     *int64     `parquet:"lines_removed,optional"`
	RunTestsCalls    int32      `parquet:"run_tests_calls"`
	// ModelCallSeq joins model_calls (seq): the model call the part came
	// from; ModelCallMs its duration. Tokens and cost are then the part's
	// share of the call; HarnessTokensTotal what the harness reported.
	ModelCallSeq       *int64   `parquet:"model_call_seq,optional"`
	ModelCallMs        *float64 `parquet:"model_call_ms,optional"`
	HarnessTokensTotal *int64   `parquet:"harness_tokens_total,optional"`
	HarnessCostUSD     *float64 `parquet:"harness_cost_usd,optional"`
}

// EvaluationRow is one row of the evaluations table: one suite's result at
// one commit, from an evaluate report (source "evaluate"), from traj's
// ground truth during the run (source "ground_truth") or from a run_tests
// call the agent made (source "run_tests").
type EvaluationRow struct {
	TrajectoryID string     `parquet:"trajectory_id,dict"`
	Source       string     `parquet:"source,dict"`
	Commit       *string    `parquet:"commit,optional"`
	Tree         *string    `parquet:"tree,optional"`
	Part         *int64     `parquet:"part,optional"`
	Suite        *string    `parquet:"suite,optional,dict"`
	Passed       *int64     `parquet:"passed,optional"`
	Failed       *int64     `parquet:"failed,optional"`
	Total        *int64     `parquet:"total,optional"`
	PassRate     *float64   `parquet:"pass_rate,optional"`
	ResultSource *string    `parquet:"result_source,optional,dict"`
	Error        *string    `parquet:"error,optional"`
	DurationMs   *int64     `parquet:"duration_ms,optional"`
	Timestamp    *time.Time `parquet:"timestamp,optional,timestamp(microsecond:utc)"`
	// FreshGap is replay.FreshGap of the whole result the row is a suite
	// of (evaluate, ground_truth), the same on each of its rows.
	FreshGap *float64 `parquet:"fresh_gap,optional"`
}

// TestRow is one row of the tests table: one test case's history over the
// parts of a trajectory, from the evaluate report's attribution.
type TestRow struct {
	TrajectoryID  string  `parquet:"trajectory_id,dict"`
	Test          string  `parquet:"test"`
	Suite         string  `parquet:"suite,dict"`
	Source        string  `parquet:"source,dict"`
	FirstPassPart *int64  `parquet:"first_pass_part,optional"`
	BrokenAt      []int64 `parquet:"broken_at,list"`
	FixedAt       []int64 `parquet:"fixed_at,list"`
	TimesBroken   int32   `parquet:"times_broken"`
	PassingAtEnd  bool    `parquet:"passing_at_end"`
}

// ModelCallRow is one row of the model_calls table: one model call as the
// model gateway recorded it (sandbox/gateway/model, model_calls.jsonl).
type ModelCallRow struct {
	TrajectoryID      string     `parquet:"trajectory_id,dict"`
	Seq               int64      `parquet:"seq"`
	StartedAt         *time.Time `parquet:"started_at,optional,timestamp(microsecond:utc)"`
	LatencyMs         float64    `parquet:"latency_ms"`
	FirstByteMs       *float64   `parquet:"first_byte_ms,optional"`
	API               string     `parquet:"api,dict"`
	Path              string     `parquet:"path,dict"`
	Status            int32      `parquet:"status"`
	Model             *string    `parquet:"model,optional,dict"`
	Stream            bool       `parquet:"stream"`
	RequestSHA256     string     `parquet:"request_sha256"`
	RequestBytes      int64      `parquet:"request_bytes"`
	ResponseID        *string    `parquet:"response_id,optional"`
	ToolCallIDs       []string   `parquet:"tool_call_ids,list"`
	TokensInput       *int64     `parquet:"tokens_input,optional"`
	TokensOutput      *int64     `parquet:"tokens_output,optional"`
	TokensReasoning   *int64     `parquet:"tokens_reasoning,optional"`
	TokensCacheRead   *int64     `parquet:"tokens_cache_read,optional"`
	TokensCacheWrite  *int64     `parquet:"tokens_cache_write,optional"`
	CostUSD           *float64   `parquet:"cost_usd,optional"`
	PartsBefore       *int64     `parquet:"parts_before,optional"`
	Error             *string    `parquet:"error,optional"`
	Response          *string    `parquet:"response,optional"`
	ResponseBytes     int64      `parquet:"response_bytes"`
	ResponseTruncated bool       `parquet:"response_truncated"`
}

// LabelRow is one row of the labels table: one failure label of a
// trajectory (replay/labels) and the evidence that triggered it.
type LabelRow struct {
	TrajectoryID string `parquet:"trajectory_id,dict"`
	Label        string `parquet:"label,dict"`
	Part         *int64 `parquet:"part,optional"`
	Evidence     string `parquet:"evidence"`
	Source       string `parquet:"source,dict"`
}

// SweepRow is one row of the sweeps table: the value of the trajectory's
// state at one part swept by a fork sweep of it (replay/sweepvalue).
type SweepRow struct {
	TrajectoryID  string   `parquet:"trajectory_id,dict"`
	Sweep         string   `parquet:"sweep,dict"`
	Part          int64    `parquet:"part"`
	ForkPart      int64    `parquet:"fork_part"`
	Model         string   `parquet:"model,dict"`
	Forks         int64    `parquet:"forks"`
	Counted       int64    `parquet:"counted"`
	NotReproduced int64    `parquet:"not_reproduced"`
	MeanValue     *float64 `parquet:"mean_value,optional"`
	StdValue      *float64 `parquet:"std_value,optional"`
	MinValue      *float64 `parquet:"min_value,optional"`
	MaxValue      *float64 `parquet:"max_value,optional"`
	Solved        int64    `parquet:"solved"`
	ShareSolved   *float64 `parquet:"share_solved,optional"`
	Decisive      bool     `parquet:"decisive"`
}

// Table names, in the order they are written.
const (
	TableTrajectories = "trajectories"
	TableParts        = "parts"
	TableEvaluations  = "evaluations"
	TableTests        = "tests"
	TableModelCalls   = "model_calls"
	TableLabels       = "labels"
	TableSweeps       = "sweeps"
)

// TableNames lists the Parquet tables every export writes.
func TableNames() []string {
	return []string{TableTrajectories, TableParts, TableEvaluations, TableTests, TableModelCalls, TableLabels, TableSweeps}
}
