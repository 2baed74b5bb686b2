package agent

import (
	"context"
	"log/slog"
	"strings"
)

// Spec is what starting a harness for one trajectory needs. An adapter's
// start function takes it with the sandbox to run in:
//
//	func Start(ctx context.Context, sb sandbox.Sandbox, spec agent.Spec) (*agent.Started, error)
//
// and stops whatever it started when it returns an error.
type Spec struct {
	// TrajectoryID names the trajectory (session titles, logs).
	TrajectoryID string
	// Workspace is the agent's working tree.
	Workspace string
	// StateDir is the harness's own folder (config, sessions, logs),
	// outside the workspace; the adapter writes its configuration there,
	// never into the workspace.
	StateDir string
	// Binary is the harness's executable; "" lets the adapter find it.
	Binary string
	// Model is "provider/model" as the user gave it.
	Model string
	// Endpoint is where the harness sends its model calls.
	Endpoint Endpoint
	// MCP are the MCP servers the harness must offer the agent (the
	// tests server with run_tests).
	MCP []MCPServer
	// Env adds KEY=VALUE pairs to the harness's environment (the scripted
	// model's key); the rest of it is the sandbox's allowlist.
	Env    []string
	Logger *slog.Logger
}

// Endpoint is a model endpoint. Empty BaseURL: the harness's built-in
// provider for the model's provider name.
type Endpoint struct {
	// BaseURL of the API (OpenAI-compatible, Anthropic Messages, or
	// OpenAI Responses, as the harness speaks).
	BaseURL string
	// APIKeyEnv names the variable of Env holding the API key.
	APIKeyEnv string
	// SmallModel is the model id, on the same endpoint, the harness uses
	// for titles and summaries ("": the run's model).
	SmallModel string
	// Price, when set, is the nominal price the harness uses to compute
	// cost (dollars per million tokens).
	Price *Price
}

// Price is dollars per million tokens.
type Price struct {
	Input, Output, CacheRead, CacheWrite float64
}

// MCPServer is a local (stdio) MCP server.
type MCPServer struct {
	Name    string
	Command []string
	// Env is KEY=VALUE pairs for the server alone (the tool stub's token),
	// not the harness's environment; adapters write them with EnvMap.
	Env []string
}

// EnvMap turns KEY=VALUE pairs into a map (a later pair wins), the form
// every harness's MCP configuration takes.
func EnvMap(pairs []string) map[string]string {
	m := make(map[string]string, len(pairs))
	for _, kv := range pairs {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// Started is a running harness with its root session.
type Started struct {
	Agent Agent
	// Root is the session the orchestrator prompts.
	Root Session
	// Harness and Version name the harness ("opencode", "1.18.33"): the
	// trace's agent field.
	Harness, Version string
	// Attach is the command a person runs to follow the session live, or
	// ""; it must name secret files, never hold secrets.
	Attach string
	// ReadToolOutput reads a ToolCall.OutputFile (and nothing outside the
	// harness's state folder); nil when the harness never truncates.
	ReadToolOutput func(path string) ([]byte, error)
	// Secrets are values the harness holds that must never reach the
	// trace (its server password, …).
	Secrets []string
	// Stop stops the harness and reaps its processes; safe to call twice.
	Stop func(ctx context.Context) error
}
