package main

import (
	"context"
	"os"

	"github.com/trajlab/traj/environment/mcp"
)

// MCPCmd serves the run_tests tool over stdio for one workspace. Only MCP
// protocol goes to stdout; logs go to stderr.
type MCPCmd struct {
	envFlags
	Feedback string `help:"What the agent is told of a result: counts, failures (names of failing cases) or full (expected and actual output)." enum:"counts,failures,full" default:"full"`
}

func (c *MCPCmd) Run(ctx context.Context, g *Globals) error {
	env, err := c.env(ctx, g.Environments)
	if err != nil {
		return err
	}
	srv := mcp.New(env, c.Workspace, mcp.Options{
		Run:      c.runOptions(),
		Logger:   g.Logger,
		Version:  versionString(),
		Feedback: mcp.Feedback(c.Feedback),
	})
	g.Logger.Info("run_tests MCP server on stdio", "workspace", c.Workspace, "environment", env.Version())
	return srv.ServeStdio(ctx, os.Stdin, g.Stdout)
}
