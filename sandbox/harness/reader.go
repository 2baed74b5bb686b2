package harness

import (
	"encoding/json"

	"github.com/trajlab/traj/sandbox/agent"
)

// Reader returns the reader of the objects a trace recorded, from its
// "agent" field (name@version; "" is Default). A harness traj does not
// know gets a reader that reads nothing: its parts keep their trace
// fields and raw objects only.
func Reader(agentField string) agent.Reader {
	h, id, ok := Recorded(agentField)
	if !ok {
		return unknown{}
	}
	return h.Read(id.Version)
}

type unknown struct{}

func (unknown) Part(id string, kind agent.Kind, raw json.RawMessage) (agent.Part, bool) {
	return agent.Part{ID: id, Kind: kind, Raw: raw}, false
}

func (unknown) Session(raw json.RawMessage) (agent.Session, bool) {
	return agent.Session{Raw: raw}, false
}

func (unknown) Message(raw json.RawMessage) (agent.Message, bool) {
	return agent.Message{Raw: raw}, false
}
