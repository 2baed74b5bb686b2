package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
)

// ScriptedProvider is the provider name under which --script serves the
// scripted model.
const ScriptedProvider = "scripted"

// launchSpec is what starting the agent side of a run needs.
type launchSpec struct {
	ID          string
	Workspace   string
	SandboxDir  string
	LogDir      string
	Model       string
	Script      string
	BaseURL     string
	APIKeyEnvs  []string
	OpenCodeBin string
	TrajBin     string
	TestsDir    string
	Logger      *slog.Logger
}

// launched is a running agent server with its root session.
type launched struct {
	Agent         Agent
	RootSessionID string
	RootSession   json.RawMessage
	// Attach is the command a person runs to follow the session live
	// (without the server password).
	Attach    string
	AfterTurn func() (reason, detail string)
	Stop      func(ctx context.Context) error
}

func (r *run) launchSpec() launchSpec {
	return launchSpec{ID: r.id, Workspace: r.workspace, SandboxDir: r.sandbox, LogDir: r.dir + "/logs",
		Model: r.opts.Model, Script: r.opts.Script, BaseURL: r.opts.BaseURL, APIKeyEnvs: r.opts.APIKeyEnvs,
		OpenCodeBin: r.opts.OpenCodeBin, TrajBin: r.opts.TrajBin, TestsDir: r.opts.TestsDir, Logger: r.log}
}

func launch(ctx context.Context, spec launchSpec) (*launched, error) {
	return nil, errors.New("agent launch not wired yet")
}
