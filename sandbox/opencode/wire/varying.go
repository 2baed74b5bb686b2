package wire

import "regexp"

// VaryingRequest matches what varies from run to run in the model
// requests of OpenCode 1.18.33 given the same conversation: the ids it
// makes up, which a request repeats in tool results (a task's result
// names its sub-agent's session, `<task id="ses_…">`). Measured: two runs
// of one script sent byte-identical requests but for these. A rerun
// compares requests with them blanked (sandbox/playback, replay/rerun).
var VaryingRequest = regexp.MustCompile(`\b(ses|msg|prt)_[0-9a-zA-Z]{26}\b`)
