package opencode

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/trajlab/traj/sandbox/agent"
)

// DefaultMCPTimeout bounds one call of a tool of the tests MCP server.
// OpenCode's default (60 s, reset by progress notifications) is too short
// for a full test run.
const DefaultMCPTimeout = 30 * time.Minute

// Config is what traj puts in OpenCode's configuration for one trajectory.
type Config struct {
	// Model and SmallModel are "provider/model"; SmallModel (titles,
	// summaries) defaults to Model.
	Model      string
	SmallModel string
	// Providers maps a provider id to its settings.
	Providers map[string]Provider
	// TestsMCP is the command line of the `tests` MCP server, e.g.
	// {"/path/traj", "mcp", "--workspace", DIR}; none when empty. Its
	// tools reach the model as tests_<tool>.
	TestsMCP []string
	// TestsMCPEnv is the tests MCP server's own environment (KEY=VALUE).
	TestsMCPEnv []string
	// MCPTimeout bounds one tests tool call; DefaultMCPTimeout when zero.
	MCPTimeout time.Duration
}

// Provider is one model provider. For a custom OpenAI-compatible endpoint
// set NPM to "@ai-sdk/openai-compatible", BaseURL and Models; for a
// provider OpenCode knows (anthropic, openai, …) APIKeyEnv is enough.
type Provider struct {
	NPM     string
	Name    string
	BaseURL string
	// APIKeyEnv names the environment variable holding the key. The
	// config holds only the reference {env:NAME}; the key itself is
	// passed in the server's environment (ServerOptions.Env).
	APIKeyEnv string
	// Models lists model ids served by a custom provider.
	Models []string
	// Cost, when set, is the price OpenCode charges each of Models, so its
	// cost accounting runs for custom endpoints too.
	Cost *ModelCost
}

// ModelCost is a model's price in dollars per million tokens, the unit
// OpenCode's config uses.
type ModelCost struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cache_read"`
	CacheWrite float64 `json:"cache_write"`
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate reports the first problem with c.
func (c Config) Validate() error {
	if c.Model == "" {
		return errors.New("no model")
	}
	for _, m := range []string{c.Model, c.SmallModel} {
		if m == "" {
			continue
		}
		if p, id, ok := strings.Cut(m, "/"); !ok || p == "" || id == "" {
			return fmt.Errorf("model %q: want provider/model", m)
		}
	}
	for id, p := range c.Providers {
		if id == "" {
			return errors.New("provider with an empty id")
		}
		if p.APIKeyEnv != "" && !envName.MatchString(p.APIKeyEnv) {
			return fmt.Errorf("provider %s: api key env %q is not a variable name", id, p.APIKeyEnv)
		}
		if p.BaseURL != "" && !strings.HasPrefix(p.BaseURL, "http://") && !strings.HasPrefix(p.BaseURL, "https://") {
			return fmt.Errorf("provider %s: base URL %q is not http(s)", id, p.BaseURL)
		}
	}
	if len(c.TestsMCP) > 0 && c.TestsMCP[0] == "" {
		return errors.New("tests MCP command: empty program")
	}
	return nil
}

// JSON renders the opencode.json document. Permissions allow every tool
// (edit, bash, files outside the workspace, …) so a headless run never
// waits for an approval, and deny `question`, which would wait for a human.
func (c Config) JSON() ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("opencode config: %w", err)
	}
	small := c.SmallModel
	if small == "" {
		small = c.Model
	}
	doc := map[string]any{
		"$schema":     "https://opencode.ai/config.json",
		"model":       c.Model,
		"small_model": small,
		"autoupdate":  false,
		"share":       "disabled",
		"permission": map[string]any{
			"*":        "allow",
			"edit":     "allow",
			"bash":     "allow",
			"question": "deny",
		},
	}
	if len(c.Providers) > 0 {
		provs := map[string]any{}
		for id, p := range c.Providers {
			entry := map[string]any{}
			if p.NPM != "" {
				entry["npm"] = p.NPM
			}
			if p.Name != "" {
				entry["name"] = p.Name
			}
			opts := map[string]any{}
			if p.BaseURL != "" {
				opts["baseURL"] = p.BaseURL
			}
			if p.APIKeyEnv != "" {
				opts["apiKey"] = "{env:" + p.APIKeyEnv + "}"
			}
			if len(opts) > 0 {
				entry["options"] = opts
			}
			if len(p.Models) > 0 {
				models := map[string]any{}
				ids := append([]string(nil), p.Models...)
				sort.Strings(ids)
				for _, m := range ids {
					model := map[string]any{"name": m, "tool_call": true}
					if p.Cost != nil {
						model["cost"] = p.Cost
					}
					models[m] = model
				}
				entry["models"] = models
			}
			provs[id] = entry
		}
		doc["provider"] = provs
	}
	if len(c.TestsMCP) > 0 {
		timeout := c.MCPTimeout
		if timeout <= 0 {
			timeout = DefaultMCPTimeout
		}
		tests := map[string]any{
			"type":    "local",
			"command": c.TestsMCP,
			"enabled": true,
			"timeout": timeout.Milliseconds(),
		}
		if len(c.TestsMCPEnv) > 0 {
			tests["environment"] = agent.EnvMap(c.TestsMCPEnv)
		}
		doc["mcp"] = map[string]any{"tests": tests}
	}
	return json.MarshalIndent(doc, "", "  ")
}

// WriteConfig writes c's JSON to path (0600, folder created). The file
// never holds a secret: keys are {env:NAME} references.
func WriteConfig(path string, c Config) error {
	b, err := c.JSON()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("write opencode config: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write opencode config: %w", err)
	}
	return nil
}

// TrajMCP is the tests MCP command for a workspace: traj mcp --workspace DIR.
func TrajMCP(trajBin, workspace string) []string {
	return []string{trajBin, "mcp", "--workspace", workspace}
}
