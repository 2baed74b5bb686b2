// Package harness is the one list of the harnesses traj drives (OpenCode,
// Claude Code, Codex): for each, one value that says how to find its
// binary, what a sandbox must show it, how to start it behind the agent
// port and which of its files hold secrets, on top of what a reader knows
// of it (sandbox/harness/recorded: its name, the reader of its recorded
// objects, what varies in its requests). Run, resume, finalize and
// experiments ask this package; readers of a trace (view, export, report,
// labels) ask recorded and link no harness runtime. Nothing above sandbox/
// imports an adapter or compares a harness name.
package harness

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/sandbox/agent"
	"github.com/trajlab/traj/sandbox/claudecode"
	"github.com/trajlab/traj/sandbox/codex"
	"github.com/trajlab/traj/sandbox/harness/recorded"
	"github.com/trajlab/traj/sandbox/opencode"
	"github.com/trajlab/traj/trace"
)

// Harness is one agent program traj can record: what a reader knows of
// it (Name, Read, Varying) and how to start it.
type Harness struct {
	recorded.Harness
	// Locate finds the executable: explicit (--agent-bin) when given,
	// else the harness's own rule (its TRAJ_*_BIN variable, then where
	// `make setup` installs it, then PATH).
	Locate func(explicit string) (string, error)
	// Mounts creates the harness's state folders under stateDir (the
	// trajectory's sandbox folder) and returns what an isolated sandbox
	// must show for Start to work: the binary and those folders, nothing
	// else.
	Mounts func(stateDir, binary string) ([]sandbox.Mount, error)
	// Start starts the harness for spec in sb behind the agent port.
	Start func(ctx context.Context, sb sandbox.Sandbox, spec agent.Spec) (*agent.Started, error)
	// SecretFiles are the files under stateDir that may hold a secret
	// left behind by a run that died (OpenCode's server password), so
	// logs copied later can be redacted.
	SecretFiles func(stateDir string) []string
	// LateToolEvents: the harness may report a tool call of a model
	// response as started only after another one of it completed, though
	// both ran side by side (Codex), so the recorder counts a response's
	// tool calls at the model gateway to know when they are all recorded.
	LateToolEvents bool
	// TurnMessages: the harness's message ids name a turn, not a model
	// response (Codex's exec stream has none): the recorder names each
	// part's message after the model call it came from.
	TurnMessages bool
}

// Default is the harness of a run that names none, and of a trace whose
// agent field is empty (recorded.Default).
const Default = recorded.Default

// All lists every harness, Default first, in recorded's order.
func All() []Harness {
	read := map[string]recorded.Harness{}
	for _, r := range recorded.All() {
		read[r.Name] = r
	}
	return []Harness{
		{
			Harness: read[opencode.HarnessName],
			Locate:  opencode.ResolveBinary,
			Mounts:  opencode.Mounts,
			Start: func(ctx context.Context, sb sandbox.Sandbox, spec agent.Spec) (*agent.Started, error) {
				return opencode.StartAgent(ctx, sb, spec)
			},
			SecretFiles: func(stateDir string) []string { return []string{opencode.PasswordFile(stateDir)} },
		},
		{
			Harness: read[claudecode.HarnessName],
			Locate:  claudecode.Binary.Locate,
			Mounts:  claudecode.Mounts,
			Start: func(ctx context.Context, sb sandbox.Sandbox, spec agent.Spec) (*agent.Started, error) {
				return claudecode.Start(ctx, sb, spec)
			},
			SecretFiles: none,
		},
		{
			Harness: read[codex.HarnessName],
			Locate:  codex.Binary.Locate,
			Mounts:  codex.Mounts,
			Start: func(ctx context.Context, sb sandbox.Sandbox, spec agent.Spec) (*agent.Started, error) {
				return codex.Start(ctx, sb, spec)
			},
			SecretFiles: none,
			// Measured: of a demo response's two commands, the second
			// was reported started after the first completed, its file
			// already written.
			LateToolEvents: true,
			TurnMessages:   true,
		},
	}
}

// WritableState creates the harness's state folders under stateDir and
// lists those its sandbox may write (host paths): where the agent's
// processes can put bytes besides the workspace, so a disk cap must hold
// them too.
func (h Harness) WritableState(stateDir string) ([]string, error) {
	mounts, err := h.Mounts(stateDir, "")
	if err != nil {
		return nil, err
	}
	root := filepath.Clean(stateDir) + string(filepath.Separator)
	var out []string
	for _, m := range mounts {
		if m.Writable {
			if !strings.HasPrefix(filepath.Clean(m.Host), root) {
				return nil, fmt.Errorf("%s: writable state folder %s is outside its state folder %s", h.Name, m.Host, stateDir)
			}
			out = append(out, filepath.Clean(m.Host))
		}
	}
	return out, nil
}

// none: the CLI harnesses keep no secret in a file (the model token
// lives only in the process's environment).
func none(string) []string { return nil }

// Names are the harnesses' names, for --agent's help and errors.
func Names() []string { return recorded.Names() }

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

// Recorded is the harness a trace's agent field names ("" is Default) and
// the field read; ok is false when traj does not know that harness (a
// reader then shows its parts' raw objects).
func Recorded(agentField string) (h Harness, id trace.AgentID, ok bool) {
	id = trace.ParseAgent(agentField)
	h, err := Lookup(id.Name)
	return h, id, err == nil
}

// Reader is recorded.Reader: the reader of the objects a trace recorded,
// from its "agent" field. Readers of a trace call recorded directly.
func Reader(agentField string) agent.Reader { return recorded.Reader(agentField) }
