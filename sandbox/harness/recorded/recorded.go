// Package recorded is the reader-only list of the harnesses traj records:
// for each, its name, the reader of the objects its adapter recorded and
// what varies from run to run in its model requests. Every reader of a
// trace (show, view, report, labels, export, a rerun's comparison) asks
// this package, and so links no harness runtime: nothing here starts a
// process or knows a sandbox. Starting a harness is sandbox/harness's,
// which adds to each entry here how to find, mount and start it.
package recorded

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/trajlab/traj/sandbox/agent"
	claudecode "github.com/trajlab/traj/sandbox/claudecode/wire"
	codex "github.com/trajlab/traj/sandbox/codex/wire"
	opencode "github.com/trajlab/traj/sandbox/opencode/wire"
	"github.com/trajlab/traj/trace"
)

// Harness is what a reader knows of one harness.
type Harness struct {
	// Name is the --agent value and the name in the trace's agent field.
	Name string
	// Read returns the reader of the objects this harness's adapter
	// recorded, at version (the trace's agent field; "" when unknown).
	Read func(version string) agent.Reader
	// Varying matches what the adapter documents as varying from run to
	// run in the harness's model requests (ids it makes up); a rerun
	// compares requests with it blanked. nil: nothing documented.
	Varying *regexp.Regexp
}

// Default is the harness of a run that names none, and of a trace whose
// agent field is empty (the original recorder drove only OpenCode).
const Default = opencode.HarnessName

// All lists every harness, Default first.
func All() []Harness {
	return []Harness{
		{Name: opencode.HarnessName, Read: func(v string) agent.Reader { return opencode.Reader{Version: v} }, Varying: opencode.VaryingRequest},
		{Name: claudecode.HarnessName, Read: func(v string) agent.Reader { return claudecode.Reader{Version: v} }, Varying: claudecode.VaryingRequest},
		{Name: codex.HarnessName, Read: func(v string) agent.Reader { return codex.Reader{Version: v} }, Varying: codex.VaryingRequest},
	}
}

// Names are the harnesses' names, for --agent's help and errors.
func Names() []string {
	var out []string
	for _, h := range All() {
		out = append(out, h.Name)
	}
	return out
}

// Lookup is the harness called name; "" is Default. An unknown name is an
// error that lists the known ones.
func Lookup(name string) (Harness, error) {
	if name == "" {
		name = Default
	}
	all := All()
	if i := slices.IndexFunc(all, func(h Harness) bool { return h.Name == name }); i >= 0 {
		return all[i], nil
	}
	return Harness{}, fmt.Errorf("harness %q: want one of %s", name, strings.Join(Names(), ", "))
}

// Of is the harness a trace's agent field names ("" is Default) and the
// field read; ok is false when traj does not know that harness (a reader
// then shows its parts' raw objects).
func Of(agentField string) (h Harness, id trace.AgentID, ok bool) {
	id = trace.ParseAgent(agentField)
	h, err := Lookup(id.Name)
	return h, id, err == nil
}

// Reader returns the reader of the objects a trace recorded, from its
// "agent" field (name@version; "" is Default). A harness traj does not
// know gets a reader that reads nothing: its parts keep their trace
// fields and raw objects only.
func Reader(agentField string) agent.Reader {
	h, id, ok := Of(agentField)
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
