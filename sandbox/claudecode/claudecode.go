package claudecode

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/sandbox/agent"
	"github.com/trajlab/traj/sandbox/agent/cliturn"
	"github.com/trajlab/traj/sandbox/claudecode/wire"
)

// HarnessName is the trace's agent field for Claude Code (wire's).
const HarnessName = wire.HarnessName

// Binary is where Claude Code is found (`make setup` installs the pinned
// @anthropic-ai/claude-code beside this package).
var Binary = cliturn.Binary{
	What:    "Claude Code",
	Flag:    "--agent-bin",
	Env:     "TRAJ_CLAUDE_BIN",
	Install: "sandbox/claudecode/npm/node_modules/@anthropic-ai/claude-code-linux-x64/claude",
	Command: "claude",
}

// folders are Claude Code's folders in the state folder: its
// CLAUDE_CONFIG_DIR is claude/.
func folders(stateDir string) cliturn.Folders {
	return cliturn.Folders{StateDir: stateDir, Config: "claude"}
}

// Mounts creates Claude Code's state folders under stateDir and returns
// what an isolated sandbox shows of it (see cliturn.Folders.Mounts).
func Mounts(stateDir, binary string) ([]sandbox.Mount, error) {
	return folders(stateDir).Mounts(HarnessName, binary)
}

// stateFile is the adapter's own record in the state folder: the session
// to continue when the trajectory is resumed.
const stateFile = "traj-claudecode.json"

type persisted struct {
	SessionID string          `json:"session_id"`
	Usage     wire.Accounting `json:"usage"`
}

// Start prepares Claude Code for spec in sb and returns it behind the
// agent port. Nothing runs until the first Prompt: each turn is one `claude
// -p` process, the first with --session-id, later ones with --resume, so
// every turn continues the same session. A state folder that already holds
// a session (a resumed trajectory) continues that session.
func Start(ctx context.Context, sb cliturn.Sandbox, spec agent.Spec) (*agent.Started, error) {
	bin, err := Binary.Locate(spec.Binary)
	if err != nil {
		return nil, err
	}
	version, err := cliturn.Version(ctx, bin, "--version")
	if err != nil {
		return nil, err
	}
	_, model, ok := strings.Cut(spec.Model, "/")
	if !ok || model == "" {
		return nil, fmt.Errorf("claude-code: model %q: want provider/model", spec.Model)
	}
	if spec.StateDir == "" {
		return nil, errors.New("claude-code: no state folder")
	}
	dirs := folders(spec.StateDir)
	a := &Adapter{
		bin: bin, sb: sb, spec: spec, model: model,
		configDir: dirs.ConfigDir(), home: dirs.HomeDir(), stderr: dirs.StderrDir(),
		log: spec.Logger,
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	for _, d := range []string{a.configDir, a.home, a.stderr} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("claude-code: state folder: %w", err)
		}
	}
	var st persisted
	if err := cliturn.LoadState(spec.StateDir, stateFile, &st); err != nil {
		return nil, fmt.Errorf("claude-code: %w", err)
	}
	if st.SessionID == "" {
		st.SessionID = newUUID()
	}
	a.root, a.acct = st.SessionID, st.Usage
	if err := a.save(); err != nil {
		return nil, err
	}
	raw, _ := json.Marshal(map[string]string{"session_id": a.root})
	root := agent.Session{ID: a.root, Raw: raw}
	ag := cliturn.NewAgent(sb, HarnessName, a.root, a.log, a.prepare)
	ag.Record(agent.Event{Kind: agent.EventSession, SessionID: a.root, Session: &root})
	return &agent.Started{
		Agent: ag, Root: root, Harness: HarnessName, Version: version,
		Attach: fmt.Sprintf("CLAUDE_CONFIG_DIR=%s %s --resume %s", a.configDir, bin, a.root),
		Stop:   ag.Stop,
	}, nil
}

// save writes the state file.
func (a *Adapter) save() error {
	if err := cliturn.SaveState(a.spec.StateDir, stateFile, persisted{SessionID: a.root, Usage: a.acct}); err != nil {
		return fmt.Errorf("claude-code: %w", err)
	}
	return nil
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// Adapter prepares each turn of Claude Code: its command line,
// environment and settings, and the translator of its output.
type Adapter struct {
	sb               cliturn.Sandbox
	bin, model, root string
	configDir, home  string
	stderr           string
	spec             agent.Spec
	log              *slog.Logger
	// acct is touched by one turn's translator at a time.
	acct wire.Accounting
}

// args are the command line of one turn. The configuration is given in
// full on every turn and nothing is read from the workspace: settings
// only from traj's own config folder (--setting-sources user), MCP servers
// only from --mcp-config (--strict-mcp-config).
func (a *Adapter) args(prompt string, resume bool) ([]string, error) {
	args := []string{"--output-format", "stream-json", "--verbose", "--include-partial-messages",
		"--forward-subagent-text", "--permission-mode", "bypassPermissions", "--model", a.model,
		"--setting-sources", "user", "--strict-mcp-config"}
	if len(a.spec.MCP) > 0 {
		servers := map[string]any{}
		for _, m := range a.spec.MCP {
			if len(m.Command) == 0 {
				return nil, fmt.Errorf("claude-code: MCP server %q has no command", m.Name)
			}
			cmd := cliturn.InsideArgs(a.sb, m.Command)
			srv := map[string]any{"type": "stdio", "command": cmd[0], "args": cmd[1:]}
			if len(m.Env) > 0 {
				srv["env"] = agent.EnvMap(m.Env)
			}
			servers[m.Name] = srv
		}
		b, _ := json.Marshal(map[string]any{"mcpServers": servers})
		args = append(args, "--mcp-config", string(b))
	}
	if resume {
		args = append(args, "--resume", a.root)
	} else {
		args = append(args, "--session-id", a.root)
	}
	// "--" ends the options: a prompt starting with "-" stays a prompt.
	return append(args, "-p", "--", prompt), nil
}

// env is the harness's environment: the sandbox's allowlist without any
// Anthropic or Claude settings of the operator, plus traj's.
func (a *Adapter) env() []string {
	extra := []string{
		"HOME=" + cliturn.Inside(a.sb, a.home),
		"CLAUDE_CONFIG_DIR=" + cliturn.Inside(a.sb, a.configDir),
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		// MCP tools offered directly, not behind ToolSearch: the agent
		// sees run_tests in its tool list.
		"ENABLE_TOOL_SEARCH=false",
	}
	if os.Geteuid() == 0 {
		extra = append(extra, "IS_SANDBOX=1") // bypassPermissions refuses root otherwise
	}
	ep := a.spec.Endpoint
	if ep.BaseURL != "" {
		extra = append(extra, "ANTHROPIC_BASE_URL="+strings.TrimSuffix(strings.TrimRight(ep.BaseURL, "/"), "/v1"))
	}
	if ep.APIKeyEnv != "" {
		extra = append(extra, "ANTHROPIC_API_KEY="+cliturn.Lookup(a.spec.Env, ep.APIKeyEnv))
	}
	// Background requests (titles, summaries) use the endpoint's small
	// model, else the run's: an endpoint such as the scripted model serves
	// no Haiku.
	small := a.model
	if ep.SmallModel != "" {
		small = ep.SmallModel
	}
	extra = append(extra, "ANTHROPIC_SMALL_FAST_MODEL="+small, "ANTHROPIC_DEFAULT_HAIKU_MODEL="+small)
	drop := []string{"HOME"}
	if ep.APIKeyEnv != "" {
		drop = append(drop, ep.APIKeyEnv)
	}
	return cliturn.Env(a.spec.Env, drop, []string{"ANTHROPIC_", "CLAUDE_"}, extra...)
}

// settings are traj's user settings, rewritten before every turn so
// nothing the agent wrote into the config folder survives into the next.
const settings = `{"permissions":{"defaultMode":"bypassPermissions"},"includeCoAuthoredBy":false}` + "\n"

// resumable reports whether Claude Code saved the session, so the next
// turn must --resume it rather than create it.
func (a *Adapter) resumable() bool {
	m, _ := filepath.Glob(filepath.Join(a.configDir, "projects", "*", a.root+".jsonl"))
	return len(m) > 0
}

// prepare is the next turn: settings rewritten, the command line (a new
// session or --resume), the translator of its output.
func (a *Adapter) prepare(prompt string, emit func(agent.Event)) (cliturn.Command, cliturn.Translator, error) {
	if err := cliturn.RewriteConfig(filepath.Join(a.configDir, "settings.json"), []byte(settings)); err != nil {
		return cliturn.Command{}, nil, fmt.Errorf("claude-code: %w", err)
	}
	args, err := a.args(prompt, a.resumable())
	if err != nil {
		return cliturn.Command{}, nil, err
	}
	tr := wire.NewTranslator(a.root, a.spec.Endpoint.Price, &a.acct, func() {
		if err := a.save(); err != nil {
			a.log.Warn("claude-code: usage accounting not saved", "err", err)
		}
	}, emit)
	return cliturn.Command{Name: "claude", Path: a.bin, Args: args, Env: a.env(),
		StderrDir: a.stderr, Grace: 3 * time.Second}, tr, nil
}
