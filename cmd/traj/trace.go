package main

import (
	"context"
	"os"

	"github.com/trajlab/traj/replay/inspect"
	"github.com/trajlab/traj/trace/store/location"
)

// TraceCmd groups the commands that inspect a trace.
type TraceCmd struct {
	Show     TraceShowCmd     `cmd:"" help:"Summarize a trace: id, agent, model, parts, turns, end reason, final commit, best test results, tokens and cost."`
	Validate TraceValidateCmd `cmd:"" help:"Check a trace against the schema and the part/turn invariants."`
	Finalize TraceFinalizeCmd `cmd:"" help:"Close a trajectory whose run died and will not continue: session_end interrupted, repo.bundle, uploads."`
	Synth    TraceSynthCmd    `cmd:"" help:"Write a synthetic trajectory of N parts (turns, sessions, tool mix, checkpoints, ground truth, call records) into a store folder."`
}

// traceRef names the trace a trace command reads.
type traceRef struct {
	Ref   string `arg:"" name:"ref" help:"Trace: a trajectory id in --store, a trajectory folder, an agent_trace.json path, or s3://bucket/prefix/trajectories/<id>."`
	Store string `help:"Store for trajectory ids: a folder, file:///path or s3://bucket/prefix (default ./runs or TRAJ_STORE)."`
}

func (r traceRef) request(g *Globals) inspect.Request {
	return inspect.Request{Ref: r.Ref, Store: location.Choose(r.Store, os.Getenv), Stdout: g.Stdout, Logger: g.Logger}
}

// TraceShowCmd prints a trace summary.
type TraceShowCmd struct {
	traceRef
	JSON bool `help:"Print the summary as JSON."`
}

func (c *TraceShowCmd) Run(ctx context.Context, g *Globals) error {
	return usageExit(inspect.Show(ctx, c.request(g), c.JSON))
}

// TraceValidateCmd validates a trace. Exit status 1 when the trace breaks
// the contract (the first problem is printed), 2 when it cannot be read.
type TraceValidateCmd struct {
	traceRef
	All bool `help:"Print every problem, not only the first."`
}

func (c *TraceValidateCmd) Run(ctx context.Context, g *Globals) error {
	return usageExit(inspect.Validate(ctx, c.request(g), c.All))
}
