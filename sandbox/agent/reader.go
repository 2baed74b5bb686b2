package agent

import "encoding/json"

// Reader reads what an adapter recorded back into the port's types. The
// trace keeps each harness's objects verbatim (Part.Raw, Session.Raw,
// Message.Raw); only the adapter that wrote them knows their shape, so
// every reader of a trace (show, view, report, export) asks the harness's
// Reader instead of decoding them. A Reader is made for one harness
// version (the trace's "agent", name@version) and returns only what the
// object itself says: usage that an adapter computes from earlier
// objects of the stream (Codex's cumulative turn totals) is left out.
type Reader interface {
	// Part reads a recorded part: id and kind as the trace recorded them
	// (part_id and part_type; empty for entries of other_parts and
	// trailing_parts and for traces of the original recorder), raw its
	// content. ok is false when raw is not an object of this harness;
	// the returned part then holds id, kind and raw only. Raw is always
	// raw, verbatim.
	Part(id string, kind Kind, raw json.RawMessage) (p Part, ok bool)
	// Session reads a recorded session object; ok is false when raw names
	// no session of this harness.
	Session(raw json.RawMessage) (s Session, ok bool)
	// Message reads a recorded message object; ok is false when raw is
	// not one of this harness's message objects.
	Message(raw json.RawMessage) (m Message, ok bool)
}
