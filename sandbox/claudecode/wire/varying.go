package wire

import "regexp"

// VaryingRequest matches what varies from run to run in the model
// requests of Claude Code 2.x given the same conversation: the device id
// (a hash made up for each fresh home) and the session id (a UUID per
// run) in metadata.user_id. Measured: two runs of one script sent
// requests equal but for these, the agent repository's commit hash in the
// system prompt (traj now makes that commit at a fixed time) and the
// run_tests answers (groundtruth.AnswerVarying). A rerun compares requests
// with them blanked (sandbox/playback, replay/rerun).
var VaryingRequest = regexp.MustCompile(`(?:device_id|session_id)\\*":\\*"[0-9a-f][0-9a-f-]{35,63}`)
