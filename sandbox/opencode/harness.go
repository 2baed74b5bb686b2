package opencode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/trajlab/traj/sandbox/agent"
	"github.com/trajlab/traj/sandbox/opencode/wire"
)

// HarnessName is the trace's agent field for OpenCode (wire's).
const HarnessName = wire.HarnessName

// AgentReadyTimeout bounds StartAgent's wait for the server's health.
const AgentReadyTimeout = 90 * time.Second

// StartAgent starts OpenCode for spec in sb (config written outside the
// workspace, server started and healthy, the tests MCP server connected,
// the event stream subscribed, the root session created) and returns it
// behind the agent port. On error everything started is stopped.
//
// spec.Endpoint with a BaseURL becomes a custom OpenAI-compatible
// provider named after the model's provider; without one, OpenCode's
// built-in provider is used and its key must be in spec.Env. Only an MCP
// server named "tests" is supported (its tools reach the model as
// tests_<tool>).
func StartAgent(ctx context.Context, sb Sandbox, spec agent.Spec) (_ *agent.Started, err error) {
	bin, err := ResolveBinary(spec.Binary)
	if err != nil {
		return nil, err
	}
	ref, err := ParseModel(spec.Model)
	if err != nil {
		return nil, err
	}
	cfg := Config{Model: spec.Model}
	for _, m := range spec.MCP {
		if m.Name != "tests" {
			return nil, fmt.Errorf("opencode: MCP server %q: only \"tests\" is supported", m.Name)
		}
		cfg.TestsMCP, cfg.TestsMCPEnv = m.Command, m.Env
	}
	if ep := spec.Endpoint; ep.BaseURL != "" {
		models := []string{ref.ModelID}
		if ep.SmallModel != "" && ep.SmallModel != ref.ModelID {
			cfg.SmallModel = ref.ProviderID + "/" + ep.SmallModel
			models = append(models, ep.SmallModel)
		}
		p := Provider{NPM: "@ai-sdk/openai-compatible", Name: ref.ProviderID, BaseURL: ep.BaseURL,
			APIKeyEnv: ep.APIKeyEnv, Models: models}
		if ep.Price != nil {
			p.Cost = &ModelCost{Input: ep.Price.Input, Output: ep.Price.Output, CacheRead: ep.Price.CacheRead,
				CacheWrite: ep.Price.CacheWrite}
		}
		cfg.Providers = map[string]Provider{ref.ProviderID: p}
	}
	// A loaded machine (many trajectories at once) starts OpenCode in
	// well over DefaultReady: measured 30+ s at load 25 on 2 cores.
	srv, err := Start(ctx, sb, ServerOptions{Binary: bin, Config: cfg, Logger: spec.Logger, Env: spec.Env,
		ReadyTimeout: AgentReadyTimeout})
	if err != nil {
		return nil, err
	}
	var stream *Stream
	cancelStream := func() {}
	stop := func(context.Context) error {
		cancelStream()
		if stream != nil {
			stream.Close()
		}
		return srv.Stop()
	}
	defer func() {
		if err != nil {
			_ = stop(ctx)
		}
	}()
	// Without a tests MCP server the task took run_tests away from the agent.
	if len(cfg.TestsMCP) > 0 {
		if err := checkTestsMCP(ctx, srv.Client); err != nil {
			return nil, err
		}
	}
	streamCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	cancelStream = cancel
	if stream, err = srv.Client.Subscribe(streamCtx, StreamOptions{}); err != nil {
		return nil, err
	}
	session, err := srv.Client.CreateSession(ctx, CreateSessionRequest{Title: "traj " + spec.TrajectoryID})
	if err != nil {
		return nil, err
	}
	st := &agent.Started{
		Agent:          NewAdapter(srv, stream, ref),
		Root:           session.Normalize(),
		Harness:        HarnessName,
		Attach:         srv.AttachCommand(session.ID),
		ReadToolOutput: readFromSandbox(sb),
		Secrets:        srv.Secrets(),
		Stop:           stop,
	}
	if h, err := srv.Client.Health(ctx); err == nil {
		st.Version = h.Version
	}
	return st, nil
}

// checkTestsMCP makes sure the tests MCP server connected: without it the
// agent cannot run the tests.
func checkTestsMCP(ctx context.Context, c *Client) error {
	st, err := c.MCPStatus(ctx)
	if err != nil {
		return err
	}
	var tests struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	if raw, ok := st["tests"]; ok {
		_ = json.Unmarshal(raw, &tests)
	}
	if tests.Status != "connected" {
		return fmt.Errorf("%w (status %q %s)", ErrTestsMCP, tests.Status, tests.Error)
	}
	return nil
}

// ErrTestsMCP: the tests MCP server did not connect (an environment
// failure: the agent could not run the tests).
var ErrTestsMCP = errors.New("the tests MCP server did not connect")

// readFromSandbox reads a tool output file OpenCode names as the sandbox
// shows it, from the host, and only inside OpenCode's state folder.
func readFromSandbox(sb Sandbox) func(string) ([]byte, error) {
	read := readInside(stateDir(sb.TrajectoryDir()))
	return func(p string) ([]byte, error) {
		host, ok := sb.HostPath(p)
		if !ok {
			return nil, fmt.Errorf("tool output %q is not in a folder the sandbox shows", p)
		}
		return read(host)
	}
}

// readInside returns a reader of files under root only: the path comes
// from the server's data, and a path outside its state folder is refused.
func readInside(root string) func(string) ([]byte, error) {
	return func(path string) ([]byte, error) {
		rel, err := filepath.Rel(root, filepath.Clean(path))
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
			return nil, fmt.Errorf("tool output %q is outside %s", path, root)
		}
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			return nil, err
		}
		if rootReal, err := filepath.EvalSymlinks(root); err == nil {
			if r, err := filepath.Rel(rootReal, real); err != nil || strings.HasPrefix(r, "..") {
				return nil, fmt.Errorf("tool output %q is outside %s", path, root)
			}
		}
		const limit = 64 << 20
		f, err := os.Open(real)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, limit+1))
		if err == nil && len(b) > limit {
			err = fmt.Errorf("tool output %q larger than %d bytes", path, limit)
		}
		return b, err
	}
}
