package store

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/trajlab/traj/trace"
)

// The artifact layout. Every trajectory's objects sit under
// TrajectoryPrefix(id):
//
//	trajectories/<id>/agent_trace.json             canonical trace (at the end)
//	trajectories/<id>/agent_trace.index            part index of the trace (at the end; a cache:
//	                                               readers check it, rebuild it when stale)
//	trajectories/<id>/repo.bundle                  git bundle of all refs (at the end)
//	trajectories/<id>/history/<part %08d>.bundle   incremental bundle per checkpoint
//	trajectories/<id>/chunks/<offset>-….zst        one trace mutation each (names: chunk.Name)
//	trajectories/<id>/evaluation.json              replay evaluate's report
//	trajectories/<id>/logs/<name>                  run logs
//	trajectories/<id>/logs/run.json                the run state (run.json of the trajectory folder)
//	trajectories/<id>/model_calls.jsonl            the model gateway's record, one call a line
//	trajectories/<id>/tool_calls.jsonl             the tool gateway's record, one call a line
//	trajectories/<id>/calls/<record>/<start %016d>-<end %016d>   bytes start..end of a call
//	                                               record, uploaded at a turn end (CallChunkKey)
//	trajectories/<id>/summary.json                 the report's row, written when the trajectory ends
//	trajectories/<id>/rerun.json                   a rerun's comparison with its source (traj replay rerun)
//	trajectories/<id>/sweeps/<name>.json           a fork sweep of trajectory id (traj sweep; replay/sweepvalue)
//	evalcache/<key>.json                           evaluation results by content
//	evalsecret                                     the evaluation secret (32 random bytes, made once):
//	                                               the cases' nonces derive from it; never in a sandbox
//	experiments/<name>/experiment.json             an experiment's spec and its trajectories
//	probes/<id>                                    write probe of traj run (removed at once)
//
// The trajectory folder on the machine that records holds the same names
// (run.json at its top, not under logs/) and one of its own, never
// uploaded: upload_pending.json, the objects the run could not upload yet.
//
// Chunks and history bundles make a running trajectory durable in the store
// part by part without re-uploading the growing trace; a reader rebuilds the
// trace and the repository from them when the final objects are missing.
// Chunk objects and their names are defined by package chunk. The call
// records grow the same way: each turn end uploads the complete lines
// written since the last one as a call chunk (calls/<record>/<start>-<end>),
// so a turn end costs what the turn added, not the whole record (which at
// 1,000,000 parts is hundreds of megabytes); the whole record is uploaded
// once, at the end. LoadRecord reads the whole object, or the chunks put
// back together while it is missing.
// The trajectory folder holds the same names (run.json at its top).
const (
	TrajectoriesDir = "trajectories/"
	TraceName       = "agent_trace.json"
	PartIndexName   = "agent_trace.index" // trace.PartIndexPath of TraceName
	BundleName      = "repo.bundle"
	HistoryDir      = "history/"
	ChunksDir       = "chunks/"
	EvaluationName  = "evaluation.json"
	LogsDir         = "logs/"
	EvalCacheDir    = "evalcache/"
	EvalSecretName  = "evalsecret"
	SummaryName     = "summary.json"
	RerunName       = "rerun.json"
	ModelCallsName  = "model_calls.jsonl"
	ToolCallsName   = "tool_calls.jsonl"
	RunStateName    = "run.json"
	ExperimentsDir  = "experiments/"
	ProbesDir       = "probes/"
	PendingName     = "upload_pending.json"
	SweepsDir       = "sweeps/"
)

// TrajectoryPrefix is the folder of one trajectory's objects, with a
// trailing slash. id must pass ValidateID.
func TrajectoryPrefix(id string) string { return TrajectoriesDir + id + "/" }

// TraceKey is the canonical trace of trajectory id.
func TraceKey(id string) string { return TrajectoryPrefix(id) + TraceName }

// PartIndexKey is the part index of trajectory id's trace
// (trace.PartIndexPath).
func PartIndexKey(id string) string { return TrajectoryPrefix(id) + PartIndexName }

// BundleKey is the final git bundle of trajectory id.
func BundleKey(id string) string { return TrajectoryPrefix(id) + BundleName }

// HistoryPrefix holds the incremental bundles of trajectory id.
func HistoryPrefix(id string) string { return TrajectoryPrefix(id) + HistoryDir }

// HistoryBundleName is the name of the incremental bundle written at part.
func HistoryBundleName(part int) string { return fmt.Sprintf("%08d.bundle", part) }

// IsHistoryBundle reports whether name (a key or a file name under
// history/) is an incremental bundle.
func IsHistoryBundle(name string) bool { return strings.HasSuffix(name, ".bundle") }

// HistoryBundleKey is the incremental bundle written at the checkpoint of
// part; lexical order of the keys is part order.
func HistoryBundleKey(id string, part int) string {
	return HistoryPrefix(id) + HistoryBundleName(part)
}

// ChunksPrefix holds the trace chunks of trajectory id (one per mutation).
func ChunksPrefix(id string) string { return TrajectoryPrefix(id) + ChunksDir }

// EvaluationKey is replay evaluate's report for trajectory id.
func EvaluationKey(id string) string { return TrajectoryPrefix(id) + EvaluationName }

// LogKey is a log file of trajectory id; name must be a single key segment.
func LogKey(id, name string) string { return TrajectoryPrefix(id) + LogsDir + name }

// ModelCallsKey is the model gateway's record of trajectory id's calls.
func ModelCallsKey(id string) string { return TrajectoryPrefix(id) + ModelCallsName }

// ToolCallsKey is the tool gateway's record of trajectory id's calls.
func ToolCallsKey(id string) string { return TrajectoryPrefix(id) + ToolCallsName }

// CallsDir holds the call chunks of a trajectory's records.
const CallsDir = "calls/"

// CallChunkKey is the object holding bytes start..end (end excluded) of
// record name (ModelCallsName or ToolCallsName) of trajectory id.
func CallChunkKey(id, name string, start, end int64) string {
	return TrajectoryPrefix(id) + CallsDir + name + "/" + fmt.Sprintf("%016d-%016d", start, end)
}

// RunStateKey is trajectory id's run.json in the store, among its logs (the
// trajectory folder keeps it at its top).
func RunStateKey(id string) string { return LogKey(id, RunStateName) }

// SummaryKey is the per-trajectory summary the report reads instead of the
// trace (it names the trace size it was made from).
func SummaryKey(id string) string { return TrajectoryPrefix(id) + SummaryName }

// RerunKey is a rerun's comparison with its source (replay/rerun.Report).
func RerunKey(id string) string { return TrajectoryPrefix(id) + RerunName }

// SweepsPrefix holds the fork sweeps of trajectory id (traj sweep).
func SweepsPrefix(id string) string { return TrajectoryPrefix(id) + SweepsDir }

// SweepKey is the result of fork sweep name of trajectory id (the
// sweep's experiment name; replay/sweepvalue.Result).
func SweepKey(id, name string) string { return SweepsPrefix(id) + name + ".json" }

// ExperimentKey is the record of experiment name (spec and trajectory ids).
func ExperimentKey(name string) string { return ExperimentsDir + name + "/experiment.json" }

// EvalCacheKey is a cached evaluation result; key is a content digest.
func EvalCacheKey(key string) string { return EvalCacheDir + key + ".json" }

// EvalCacheSetKey is a set of cached evaluation results (one trajectory's
// trees, read in one object); name is a digest (replay.SetName).
func EvalCacheSetKey(name string) string { return EvalCacheDir + "sets/" + name + ".set" }

// ProbeKey is the object `traj run` writes and removes before recording
// trajectory id, to learn that the store accepts writes. It sits outside
// trajectories/ so a probe left behind never looks like a trajectory.
func ProbeKey(id string) string { return ProbesDir + id }

// ValidateID accepts a trajectory id usable as one key segment
// (trace.ValidateID: the rule is the trace contract's); anything else could
// escape the trajectory's folder. The error wraps ErrInvalidKey.
func ValidateID(id string) error {
	if err := trace.ValidateID(id); err != nil {
		return fmt.Errorf("%w: %w", err, ErrInvalidKey)
	}
	return nil
}

// ValidateKey accepts a relative, slash-separated key whose segments are
// all valid: no empty segment, no "." or "..", no backslash, no control
// characters. Every Store calls it before touching anything.
func ValidateKey(key string) error {
	if key == "" {
		return fmt.Errorf("empty key: %w", ErrInvalidKey)
	}
	for _, seg := range strings.Split(key, "/") {
		if err := validSegment(seg); err != nil {
			return fmt.Errorf("key %q: %w", key, err)
		}
	}
	return nil
}

// ValidatePrefix accepts "" or a key prefix whose complete segments are
// valid; the last segment may be partial or empty (a trailing slash).
func ValidatePrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	segs := strings.Split(prefix, "/")
	for i, seg := range segs {
		if i == len(segs)-1 && seg == "" {
			break
		}
		if err := validSegment(seg); err != nil {
			return fmt.Errorf("prefix %q: %w", prefix, err)
		}
	}
	return nil
}

func validSegment(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("empty segment: %w", ErrInvalidKey)
	case s == "." || s == "..":
		return fmt.Errorf("segment %q not allowed: %w", s, ErrInvalidKey)
	case !utf8.ValidString(s):
		return fmt.Errorf("not valid UTF-8: %w", ErrInvalidKey)
	}
	for _, r := range s {
		if r == '/' || r == '\\' || r == 0 || unicode.IsControl(r) || unicode.IsSpace(r) {
			return fmt.Errorf("character %q not allowed: %w", r, ErrInvalidKey)
		}
	}
	return nil
}
