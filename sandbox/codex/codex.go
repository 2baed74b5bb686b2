package codex

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/sandbox/agent"
	"github.com/trajlab/traj/sandbox/agent/cliturn"
	"github.com/trajlab/traj/sandbox/codex/wire"
)

// HarnessName is the trace's agent field for Codex (wire's).
const HarnessName = wire.HarnessName

// Binary is where Codex is found (`make setup` installs the pinned
// @openai/codex beside this package).
var Binary = cliturn.Binary{
	What:    "Codex",
	Flag:    "--agent-bin",
	Env:     "TRAJ_CODEX_BIN",
	Install: "sandbox/codex/npm/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex",
	Command: "codex",
}

// folders are Codex's folders in the state folder: its CODEX_HOME is
// codex/.
func folders(stateDir string) cliturn.Folders {
	return cliturn.Folders{StateDir: stateDir, Config: "codex"}
}

// Mounts creates Codex's state folders under stateDir and returns what an
// isolated sandbox shows of it (see cliturn.Folders.Mounts).
func Mounts(stateDir, binary string) ([]sandbox.Mount, error) {
	return folders(stateDir).Mounts(HarnessName, binary)
}

const stateFile = "traj-codex.json"

// providerID names traj's model provider in Codex's configuration.
const providerID = "traj"

// Start prepares Codex for spec in sb and returns it behind the agent port.
// Nothing runs until the first Prompt: each turn is one `codex exec`
// process, later ones `codex exec resume THREAD`, so every turn continues
// the same thread. A state folder that already holds a thread (a resumed
// trajectory) continues it.
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
		return nil, fmt.Errorf("codex: model %q: want provider/model", spec.Model)
	}
	if spec.StateDir == "" {
		return nil, errors.New("codex: no state folder")
	}
	dirs := folders(spec.StateDir)
	a := &Adapter{bin: bin, sb: sb, spec: spec, model: model, log: spec.Logger,
		codexHome: dirs.ConfigDir(), home: dirs.HomeDir(), stderr: dirs.StderrDir()}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	for _, d := range []string{a.codexHome, a.home, a.stderr} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("codex: state folder: %w", err)
		}
	}
	if err := cliturn.LoadState(spec.StateDir, stateFile, &a.st); err != nil {
		return nil, fmt.Errorf("codex: %w", err)
	}
	if a.st.SessionID == "" {
		a.st.SessionID = newID()
	}
	if err := a.save(); err != nil {
		return nil, err
	}
	raw, _ := json.Marshal(map[string]string{"session_id": a.st.SessionID, "thread_id": a.st.ThreadID})
	root := agent.Session{ID: a.st.SessionID, Raw: raw}
	ag := cliturn.NewAgent(sb, HarnessName, root.ID, a.log, a.prepare)
	ag.Record(agent.Event{Kind: agent.EventSession, SessionID: root.ID, Session: &root})
	st := &agent.Started{Agent: ag, Root: root, Harness: HarnessName, Version: version, Stop: ag.Stop}
	if a.st.ThreadID != "" {
		st.Attach = fmt.Sprintf("CODEX_HOME=%s %s resume %s", a.codexHome, bin, a.st.ThreadID)
	}
	return st, nil
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("codex-%x", b)
}

// Adapter prepares each turn of Codex.
type Adapter struct {
	sb              cliturn.Sandbox
	bin, model      string
	codexHome, home string
	stderr          string
	spec            agent.Spec
	log             *slog.Logger
	// st is touched by one turn's translator at a time.
	st wire.State
}

func (a *Adapter) save() error {
	if err := cliturn.SaveState(a.spec.StateDir, stateFile, a.st); err != nil {
		return fmt.Errorf("codex: %w", err)
	}
	return nil
}

// toml quotes s as a TOML basic string (JSON's escapes are TOML's).
func toml(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// args are the command line of one turn: every setting is given with -c on
// every turn; Codex's config.toml is traj's (rewritten before each turn)
// and a workspace .codex/config.toml is untrusted, so not read.
func (a *Adapter) args(prompt string) []string {
	args := []string{"exec"}
	if a.st.ThreadID != "" {
		args = append(args, "resume")
	}
	args = append(args, "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "-m", a.model)
	if ep := a.spec.Endpoint; ep.BaseURL != "" {
		key := ep.APIKeyEnv
		if key == "" {
			key = "TRAJ_MODEL_TOKEN"
		}
		args = append(args, "-c", "model_provider="+providerID, "-c",
			fmt.Sprintf("model_providers.%s={name=%s,base_url=%s,env_key=%s,wire_api=\"responses\"}",
				providerID, toml(providerID), toml(strings.TrimRight(ep.BaseURL, "/")), toml(key)))
	}
	for _, m := range a.spec.MCP {
		if len(m.Command) == 0 {
			continue
		}
		cmd := cliturn.InsideArgs(a.sb, m.Command)
		var list []string
		for _, s := range cmd[1:] {
			list = append(list, toml(s))
		}
		// run_tests can take many minutes; Codex's default MCP call
		// timeout is one minute.
		vars := agent.EnvMap(m.Env)
		var env []string
		for _, k := range slices.Sorted(maps.Keys(vars)) {
			env = append(env, k+"="+toml(vars[k]))
		}
		args = append(args, "-c", fmt.Sprintf("mcp_servers.%s={command=%s,args=[%s],env={%s},startup_timeout_sec=60,tool_timeout_sec=3600}",
			m.Name, toml(cmd[0]), strings.Join(list, ","), strings.Join(env, ",")))
	}
	if a.st.ThreadID != "" {
		args = append(args, a.st.ThreadID)
	}
	// "--" ends the options: a prompt starting with "-" stays a prompt.
	return append(args, "--", prompt)
}

// env is the harness's environment: the allowlist without the operator's
// OpenAI or Codex settings, plus CODEX_HOME, HOME and the endpoint's token.
func (a *Adapter) env() []string {
	extra := []string{"HOME=" + cliturn.Inside(a.sb, a.home), "CODEX_HOME=" + cliturn.Inside(a.sb, a.codexHome)}
	drop := []string{"HOME"}
	if ep := a.spec.Endpoint; ep.BaseURL != "" && ep.APIKeyEnv == "" {
		extra = append(extra, "TRAJ_MODEL_TOKEN=")
	}
	return cliturn.Env(a.spec.Env, drop, []string{"OPENAI_", "CODEX_"}, extra...)
}

// config is traj's config.toml for Codex, rewritten before every turn so
// nothing the agent wrote there (trusted projects, providers, hooks)
// survives into the next turn.
const config = "# Written by traj before every turn; settings are passed with -c.\n"

func (a *Adapter) prepare(prompt string, emit func(agent.Event)) (cliturn.Command, cliturn.Translator, error) {
	if err := cliturn.RewriteConfig(filepath.Join(a.codexHome, "config.toml"), []byte(config)); err != nil {
		return cliturn.Command{}, nil, fmt.Errorf("codex: %w", err)
	}
	a.st.Turns++
	if err := a.save(); err != nil {
		return cliturn.Command{}, nil, err
	}
	tr := wire.NewTranslator(a.st.SessionID, fmt.Sprintf("%s:turn-%d", a.st.SessionID, a.st.Turns), &a.st,
		a.spec.Endpoint.Price, a.save, a.log, emit)
	return cliturn.Command{Name: "codex", Path: a.bin, Args: a.args(prompt), Env: a.env(),
		StderrDir: a.stderr, Grace: 3 * time.Second}, tr, nil
}
