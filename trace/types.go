package trace

import (
	"encoding/json"
	"time"
)

// SchemaVersion is written into every trace traj records. Traces from the
// original recorder have none; readers treat them as version "0".
const SchemaVersion = "1"

// End reasons recorded in session_end.reason.
const (
	EndSolved      = "solved"
	EndPartLimit   = "part_limit"
	EndTimeout     = "timeout"
	EndAgentError  = "agent_error"
	EndEnvoiError  = "envoi_error"
	EndInterrupted = "interrupted"
	// The model gateway's budgets (--max-tokens, --max-cost) and a model
	// endpoint that could not be reached.
	EndTokenLimit       = "token_limit"
	EndCostLimit        = "cost_limit"
	EndModelUnreachable = "model_unreachable"
	// EndRecordedCallsSpent ends a rerun whose harness asked for more
	// model calls than its source recorded.
	EndRecordedCallsSpent = "recorded_calls_spent"
)

// Artifact keys in the artifacts map.
const (
	ArtifactTrace  = "agent_trace"
	ArtifactBundle = "repo_bundle"
)

// Trace is the whole agent_trace.json document. Field names are the
// original recorder's contract; fields marked "traj" are additions,
// optional for readers so original traces still load.
type Trace struct {
	SchemaVersion string `json:"schema_version,omitempty"` // traj
	TrajectoryID  string `json:"trajectory_id"`
	SessionID     string `json:"session_id"`
	Agent         string `json:"agent"`
	AgentModel    string `json:"agent_model"`
	StartedAt     string `json:"started_at"`
	// Task names the task the trajectory ran (traj).
	Task string `json:"task,omitempty"`
	// Environment names the test environment and its version digest (traj).
	Environment *EnvironmentInfo `json:"environment,omitempty"`
	// Capture is what the checkpoints record: traj's and the task's
	// rules, never the workspace's .gitignore (traj).
	Capture *CaptureRules `json:"capture,omitempty"`
	// RerunOf names the trajectory this one re-executed from its recorded
	// model calls (`traj replay rerun`): part n here is the rerun of the
	// source's part n (traj).
	RerunOf *Lineage `json:"rerun_of,omitempty"`
	// ForkedFrom names the trajectory this one branched from (`traj run
	// --fork`): parts 1..Part are its, rerun from its model calls; the
	// parts after are this trajectory's own (traj).
	ForkedFrom *Lineage          `json:"forked_from,omitempty"`
	Turns      []Turn            `json:"turns"`
	Artifacts  map[string]string `json:"artifacts"`
	SessionEnd *SessionEnd       `json:"session_end"`
}

// Lineage names the trajectory another one came from (traj).
type Lineage struct {
	TrajectoryID string `json:"trajectory_id"`
	// Store is the source's store URL when it is not this trajectory's.
	Store string `json:"store,omitempty"`
	// Agent is the source's agent field (name@version), which may differ
	// from this trajectory's (--allow-other-version).
	Agent string `json:"agent,omitempty"`
	// UntilPart is the last source part the rerun was asked to reach
	// (0: all of them).
	UntilPart int `json:"until_part,omitempty"`
	// Part is a fork's point: the source's parts 1..Part are inherited.
	Part int `json:"part,omitempty"`
}

// String names the source: its id, its agent and store when known.
func (l Lineage) String() string {
	s := l.TrajectoryID
	if l.Agent != "" {
		s += " (" + l.Agent + ")"
	}
	if l.Store != "" {
		s += " in " + l.Store
	}
	return s
}

// EnvironmentInfo identifies the environment a trajectory was scored by.
type EnvironmentInfo struct {
	Name      string   `json:"name"`
	Version   string   `json:"version,omitempty"`
	TestPaths []string `json:"test_paths,omitempty"`
	// Artifacts are what the task's build produces and its compiles are
	// only shown (the task's `artifacts`); DenyCCompiler: the task took
	// every C compiler out of its evaluations (`deny_c_compiler`). Read
	// back by environment/evaluation's Recorded. Version carries both as
	// marks too ("+artifacts=cc+deny-c-compiler": the version that keys
	// the results), which is all traces recorded before these fields
	// have (traj).
	Artifacts     []string `json:"artifacts,omitempty"`
	DenyCCompiler bool     `json:"deny_c_compiler,omitempty"`
}

// Turn is one prompt/response loop. Grouping metadata only: parts, not
// turns, are the unit of progress.
type Turn struct {
	Turn      int    `json:"turn"`
	Timestamp string `json:"timestamp"`
	Prompt    string `json:"prompt"`
	// SessionID is the root session the turn prompted (traj).
	SessionID string `json:"session_id,omitempty"`
	Parts     []Part `json:"parts"`
	// TrailingParts holds parts the server returned after the turn's last
	// counted part (for example after an abort at the part budget), verbatim
	// and uncounted, so nothing is lost (traj).
	TrailingParts []json.RawMessage `json:"trailing_parts,omitempty"`
	// PartStart and PartEnd are nil for a turn with no counted parts.
	PartStart *int `json:"part_start"`
	PartEnd   *int `json:"part_end"`
	// EndedAt is set when the turn finished (traj).
	EndedAt string `json:"ended_at,omitempty"`
}

// Part is one counted, completed agent part and the state around it.
type Part struct {
	Part      int    `json:"part"`
	Timestamp string `json:"timestamp"`
	// Prompt is the turn's prompt on the turn's first part, empty after.
	Prompt    string `json:"prompt"`
	MessageID string `json:"message_id"`
	// Sessions are the session objects known when the part completed that
	// were not recorded before, verbatim from the server.
	Sessions   []json.RawMessage `json:"sessions"`
	SessionIDs []string          `json:"session_ids"`
	// NewMessages are message infos first seen with this part, verbatim.
	NewMessages    []json.RawMessage `json:"new_messages"`
	EnvoiCalls     []EnvoiCall       `json:"envoi_calls"`
	RepoCheckpoint *RepoCheckpoint   `json:"repo_checkpoint"`
	GitCommit      string            `json:"git_commit"`

	// SessionID is the session the part belongs to: the root or a
	// descendant (sub-agent) session (traj).
	SessionID string `json:"session_id,omitempty"`
	// PartID is the harness's id for the part and PartType its kind in
	// the agent port's words (text, reasoning, tool, patch) (traj).
	PartID   string `json:"part_id,omitempty"`
	PartType string `json:"part_type,omitempty"`
	// Tool is the tool name for tool parts (traj).
	Tool string `json:"tool,omitempty"`
	// Content is the completed part as its harness sent it, secrets
	// redacted (traj): one object, or a JSON array of its objects in order
	// when the part is built from several (a CLI harness's tool call and
	// its result). Only the harness's reader decodes it
	// (sandbox/harness/recorded.Reader).
	Content json.RawMessage `json:"content,omitempty"`
	// OtherParts are uncounted parts (step-start, step-finish, user parts,
	// …) completed since the previous counted part, verbatim (traj).
	OtherParts []json.RawMessage `json:"other_parts,omitempty"`
	// Tokens and Cost are the part's usage (traj). With ModelCall: the
	// part's share of its model call as the model gateway recorded it
	// (the call's tokens divided evenly among its outputs). Without
	// (traces recorded before the gateway's attribution): what the
	// harness reported in the part's interval.
	Tokens *Tokens  `json:"tokens,omitempty"`
	Cost   *float64 `json:"cost,omitempty"`
	// ModelCall is the model gateway's call that produced the part
	// (traj): its seq joins model_calls.jsonl.
	ModelCall *PartCall `json:"model_call,omitempty"`
	// HarnessTokens and HarnessCost are what the harness itself reported
	// in the part's interval (traj), kept beside the gateway's so a
	// disagreement shows; absent when the harness reported nothing.
	HarnessTokens *Tokens  `json:"harness_tokens,omitempty"`
	HarnessCost   *float64 `json:"harness_cost,omitempty"`
	// GroundTruth holds the ground-truth evaluations that completed since
	// the previous part was recorded, in the order they landed (traj).
	GroundTruth []GroundTruth `json:"ground_truth,omitempty"`
	// GatewayCalls are the calls the tool gateway answered that no
	// harness part carries (the agent reached the gateway itself), taken
	// into the next part after they completed.
	GatewayCalls []GatewayCall `json:"gateway_calls,omitempty"`
}

// PartCall names the model call a part came from (traj).
type PartCall struct {
	// Seq is the call's seq in the model gateway's record
	// (model_calls.jsonl).
	Seq int `json:"seq"`
	// Model is the model the call asked for; LatencyMS its duration to
	// the end of the response.
	Model     string  `json:"model,omitempty"`
	LatencyMS float64 `json:"latency_ms"`
	// Outputs is how many output items the response had: the part's
	// tokens and cost are 1/Outputs of the call's (0: a part that is no
	// output of the call, such as a file change, with no share).
	Outputs int `json:"outputs"`
	// Join says how the part was matched to the call: "tool_call_id"
	// (the model's id of the tool call), "response_id" (the part's
	// message id is the response's), "message" (an earlier part of the
	// same message was matched), "order" (the next output of the same
	// kind, in the order the calls were made).
	Join string `json:"join"`
}

// Unattributed is the model usage no part claims (traj): calls that
// produced no recorded part (cut by the budget mid-turn, retried, a
// harness's side requests) and the outputs of a call no part recorded.
type Unattributed struct {
	Tokens Tokens  `json:"tokens"`
	Cost   float64 `json:"cost"`
	// Calls are the calls with usage left unclaimed, in seq order.
	Calls []UnattributedCall `json:"calls"`
}

// UnattributedCall is one call's unclaimed usage.
type UnattributedCall struct {
	Seq    int     `json:"seq"`
	Tokens Tokens  `json:"tokens"`
	Cost   float64 `json:"cost"`
	// Outputs and Claimed: the response's outputs and how many parts
	// claimed one of them.
	Outputs int `json:"outputs"`
	Claimed int `json:"claimed"`
}

// GatewayCall is one call the tool gateway answered outside the harness:
// what was asked, when, and the answer the caller got.
type GatewayCall struct {
	ToolCallID string          `json:"tool_call_id"`
	Tool       string          `json:"tool"`
	Arguments  json.RawMessage `json:"arguments"`
	Start      string          `json:"start"`
	DurationMs int64           `json:"duration_ms"`
	Text       string          `json:"text"`
	IsError    bool            `json:"is_error"`
}

// GroundTruth is traj's own evaluation of one checkpoint tree, made in an
// evaluation sandbox while the agent works: what "solved" is decided by.
// It is a compact summary; the per-case detail is the evaluation-cache
// entry named by CacheKey (the one `traj replay evaluate` reads).
type GroundTruth struct {
	// Part is the part whose checkpoint made Commit.
	Part   int    `json:"part"`
	Commit string `json:"commit"`
	Tree   string `json:"tree"`
	// Timestamp is when the result landed.
	Timestamp  string `json:"timestamp"`
	DurationMs int64  `json:"duration_ms"`
	// Cached: served from the evaluation cache (an identical tree was
	// evaluated before).
	Cached   bool   `json:"cached,omitempty"`
	CacheKey string `json:"cache_key,omitempty"`
	// Key, Artifact, ArtifactCached and KeyWhy say how a task that declares
	// its build's artifacts was scored (replay.KeyUse): keyed by the
	// artifacts' digest ("artifact") or by the tree ("tree", KeyWhy says
	// why), and whether the artifacts' result came from the cache.
	Key            string `json:"key,omitempty"`
	Artifact       string `json:"artifact,omitempty"`
	ArtifactCached bool   `json:"artifact_cached,omitempty"`
	KeyWhy         string `json:"key_why,omitempty"`
	// Suites are the counts per required test path, in task order.
	Suites []SuiteCount `json:"suites"`
	Passed int64        `json:"passed"`
	Failed int64        `json:"failed"`
	Total  int64        `json:"total"`
	// Solved: every required path ran in full and passed every case.
	Solved bool `json:"solved"`
	// Error says why the tree could not be evaluated (no counts then).
	Error string `json:"error,omitempty"`
	// Sampled: at least one path ran a fixed, seeded sample of its cases
	// (the suite's sample_size), not the whole suite; a sampled result is
	// never solved. Absent: every path ran in full.
	Sampled bool `json:"sampled,omitempty"`
	// SampleSeed is the seed of the sample (when Sampled).
	SampleSeed int64 `json:"sample_seed,omitempty"`
	// FixedLike sums the suites' FixedLike: a suspicion beside the score.
	FixedLike int64 `json:"fixed_like,omitempty"`
}

// SuiteCount is one test path's counts in a GroundTruth.
type SuiteCount struct {
	Path   string `json:"path"`
	Passed int64  `json:"passed"`
	Failed int64  `json:"failed"`
	Total  int64  `json:"total"`
	// BuildOK is false when the tree's build.sh failed for this path.
	BuildOK bool `json:"build_ok"`
	// SampleSize is the number of the path's cases in its sample when the
	// path was sampled (equal to Total); absent: the whole path ran.
	SampleSize int64 `json:"sample_size,omitempty"`
	// FixedLike counts the path's cases whose program did what the case
	// without its nonce wants (exit 0 where the nonce wanted another
	// code): what a compiler falling back to a fixed program shows.
	FixedLike int64 `json:"fixed_like,omitempty"`
}

// RepoCheckpoint records the workspace before and after a part. When
// nothing changed, Committed is false and CommitAfter equals CommitBefore.
type RepoCheckpoint struct {
	CommitBefore string   `json:"commit_before"`
	CommitAfter  string   `json:"commit_after"`
	Committed    bool     `json:"committed"`
	ChangedFiles []string `json:"changed_files"`
	// StubbedFiles are the changed files larger than the capture cap: the
	// commit holds a short stub naming size and hash instead (traj).
	StubbedFiles []StubbedFile `json:"stubbed_files,omitempty"`
	// AgentGitHead is the commit HEAD of the agent's own repository in the
	// workspace (its .git), when it has one. That repository is not the
	// record; this only notes where the agent thought it was (traj).
	AgentGitHead string `json:"agent_git_head,omitempty"`
	// Deferred: no checkpoint was taken at this part because other tool
	// calls of its model response were still open; the harness runs them
	// side by side, so their changes and this part's land in the
	// checkpoint of the last of them, whichever finished first (traj).
	Deferred bool `json:"deferred,omitempty"`
}

// StubbedFile is a workspace file a checkpoint recorded as a stub because
// it exceeded CaptureRules.MaxFileBytes.
type StubbedFile struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// CaptureRules decide what a checkpoint records. They come from traj and
// the task; the agent's .gitignore files play no part.
type CaptureRules struct {
	// Exclude are gitignore-syntax patterns, relative to the workspace
	// root, of paths never recorded (build outputs the task's build
	// regenerates).
	Exclude []string `json:"exclude,omitempty"`
	// MaxFileBytes caps a recorded file's size; a larger file is recorded
	// as a stub. Zero or less: no cap.
	MaxFileBytes int64 `json:"max_file_bytes,omitempty"`
}

// EnvoiCall is one completed run_tests call, in the shape the run_tests
// tool returns.
type EnvoiCall struct {
	Path       string          `json:"path"`
	Timestamp  string          `json:"timestamp"`
	DurationMs int64           `json:"duration_ms"`
	StatusCode int             `json:"status_code"`
	Error      *string         `json:"error"`
	Result     json.RawMessage `json:"result"`
	// CallID is the tool call id the result belongs to (traj).
	CallID string `json:"call_id,omitempty"`
	// ToolCallID is the tool gateway's id of the call (traj): the line of
	// tool_calls.jsonl this result is.
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// SessionEnd closes a trajectory.
type SessionEnd struct {
	Reason         string `json:"reason"`
	TotalParts     int    `json:"total_parts"`
	TotalTurns     int    `json:"total_turns"`
	FinalGitCommit string `json:"final_git_commit"`
	// traj additions.
	EndedAt string `json:"ended_at,omitempty"`
	Detail  string `json:"detail,omitempty"`
	// Tokens and Cost are the trajectory's totals: the sum of the model
	// gateway's record (model_calls.jsonl) when ModelCalls is set, else
	// (older traces) the harness's own counts.
	Tokens *Tokens  `json:"tokens,omitempty"`
	Cost   *float64 `json:"cost,omitempty"`
	// ModelCalls is how many calls the gateway's record holds (traj).
	ModelCalls int `json:"model_calls,omitempty"`
	// HarnessTokens and HarnessCost are what the harness reported over
	// the trajectory, beside the gateway's totals (traj).
	HarnessTokens *Tokens  `json:"harness_tokens,omitempty"`
	HarnessCost   *float64 `json:"harness_cost,omitempty"`
	// Unattributed is the gateway's usage no part claims: the parts'
	// tokens plus these equal Tokens (traj).
	Unattributed *Unattributed `json:"unattributed,omitempty"`
	// GroundTruth holds the ground-truth evaluations that landed after
	// the last part was recorded (the final tree's among them).
	GroundTruth []GroundTruth `json:"ground_truth,omitempty"`
	// GatewayCalls are the tool gateway's calls outside the harness that
	// completed after the last part was recorded (see Part.GatewayCalls).
	GatewayCalls []GatewayCall `json:"gateway_calls,omitempty"`
}

// Tokens counts model tokens the way OpenCode reports them.
type Tokens struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	Reasoning  int64 `json:"reasoning"`
	CacheRead  int64 `json:"cache_read"`
	CacheWrite int64 `json:"cache_write"`
}

// Add accumulates o into t.
func (t *Tokens) Add(o Tokens) {
	t.Input += o.Input
	t.Output += o.Output
	t.Reasoning += o.Reasoning
	t.CacheRead += o.CacheRead
	t.CacheWrite += o.CacheWrite
}

// Total is the sum of all token kinds.
func (t Tokens) Total() int64 {
	return t.Input + t.Output + t.Reasoning + t.CacheRead + t.CacheWrite
}

// Timestamp formats t the way traces store times: RFC 3339 in UTC with
// microseconds.
func Timestamp(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000Z07:00")
}
