package main

import (
	"context"
	"errors"

	"github.com/trajlab/traj/sandbox/scripted"
)

// ModelCmd groups the model commands.
type ModelCmd struct {
	Serve ModelServeCmd `cmd:"" help:"Serve a scripted model over chat completions, Anthropic Messages and Responses (offline runs, demos, tests)."`
}

// ModelServeCmd plays a script of assistant responses over the three wire APIs
// (chat completions, Anthropic Messages, Responses) until interrupted.
type ModelServeCmd struct {
	Script     string   `help:"Script of responses (JSON Lines, see package sandbox/scripted)." required:"" type:"existingfile"`
	Addr       string   `help:"Address to listen on (loopback only)." default:"127.0.0.1:0"`
	SideModels []string `help:"Models whose requests (titles, summaries) never consume the script." default:"small"`
	RequestLog string   `help:"Append every request body as a JSON line to this file."`
}

// Run serves the script until the context is cancelled.
func (c *ModelServeCmd) Run(ctx context.Context, g *Globals) error {
	err := scripted.Serve(ctx, scripted.ServeRequest{Script: c.Script, Addr: c.Addr, SideModels: c.SideModels,
		RequestLog: c.RequestLog, Stdout: g.Stdout, Logger: g.Logger})
	if bad := (*scripted.RequestError)(nil); errors.As(err, &bad) {
		return &exitError{2, err}
	}
	return err
}
