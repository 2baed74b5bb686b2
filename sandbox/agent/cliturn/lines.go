package cliturn

import "encoding/json"

// Lines splits a part a CLI adapter recorded into its stdout lines: a
// JSON array of lines (a tool call and its result), or one line.
func Lines(raw json.RawMessage) []json.RawMessage {
	if len(raw) > 0 && raw[0] == '[' {
		var ls []json.RawMessage
		if json.Unmarshal(raw, &ls) == nil {
			return ls
		}
	}
	return []json.RawMessage{raw}
}
