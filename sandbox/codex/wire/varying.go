package wire

import "regexp"

// VaryingRequest matches what varies from run to run in the model
// requests of Codex given the same conversation: client_metadata (ids of
// the installation, thread, turn and window, in an order that changes
// from run to run), prompt_cache_key (the thread id), the ids it gives
// input items (msg_, fco_ and the like, a UUID each), and the header its
// exec tool puts on a command's output (a chunk id, the wall time).
// Measured: two runs of one script sent requests equal but for these, the
// agent repository's commit hash (traj now makes that commit at a fixed
// time) and the run_tests answers (groundtruth.AnswerVarying). A rerun
// compares requests with them blanked (sandbox/playback, replay/rerun).
var VaryingRequest = regexp.MustCompile(`"client_metadata":\{(?:[^{}"]|"(?:[^"\\]|\\.)*")*\}` +
	`|"prompt_cache_key":"[0-9a-f-]{36}"` +
	`|\b[a-z]{2,4}_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b` +
	`|Chunk ID: [0-9a-f]+|Wall time: [0-9.]+ seconds`)
