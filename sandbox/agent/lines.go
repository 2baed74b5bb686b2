package agent

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

// ReplayPart is how a CLI adapter's reader finds a recorded part again:
// newLine builds the adapter's translator around emit and returns its
// line reader; raw's lines go through it, and the part emitted with id
// is returned (with no id, the first part accept takes, and later
// emissions of that part). The part keeps raw verbatim and no session
// (the trace's part names it). ok is false when no such part was
// emitted: the part then carries only id, kind and raw.
func ReplayPart(id string, kind Kind, raw json.RawMessage, accept func(Part) bool,
	newLine func(emit func(Event)) func(json.RawMessage)) (Part, bool) {
	var (
		got   Part
		found bool
	)
	line := newLine(func(ev Event) {
		if ev.Kind != EventPart || ev.Part == nil {
			return
		}
		if ev.Part.ID == id || id == "" && (!found || got.ID == ev.Part.ID) && (accept == nil || accept(*ev.Part)) {
			got, found = *ev.Part, true
		}
	})
	for _, l := range Lines(raw) {
		line(l)
	}
	if !found {
		return Part{ID: id, Kind: kind, Raw: raw}, false
	}
	got.Raw, got.SessionID = raw, ""
	return got, true
}
