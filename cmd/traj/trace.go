package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/trajlab/traj/trace"
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

// TraceShowCmd prints a trace summary.
type TraceShowCmd struct {
	traceRef
	JSON bool `help:"Print the summary as JSON."`
}

func (c *TraceShowCmd) Run(ctx context.Context, g *Globals) error {
	r, name, err := openTraceRef(ctx, g, c.Ref, c.Store)
	if err != nil {
		return err
	}
	defer r.Close()
	s, err := trace.Summarize(r)
	if err != nil {
		return fmt.Errorf("read trace %s: %w", name, err)
	}
	if c.JSON {
		enc := json.NewEncoder(g.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	return s.WriteText(g.Stdout)
}

// TraceValidateCmd validates a trace. Exit status 1 when the trace breaks
// the contract (the first problem is printed), 2 when it cannot be read.
type TraceValidateCmd struct {
	traceRef
	All bool `help:"Print every problem, not only the first."`
}

func (c *TraceValidateCmd) Run(ctx context.Context, g *Globals) error {
	r, name, err := openTraceRef(ctx, g, c.Ref, c.Store)
	if err != nil {
		return err
	}
	defer r.Close()
	probs := trace.Validate(r)
	if len(probs) == 0 {
		// Summarize reads the same file again (resolving the reference
		// again could download or rebuild the trace a second time).
		if _, err := r.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("read trace %s: %w", name, err)
		}
		s, err := trace.Summarize(r)
		if err != nil {
			return fmt.Errorf("read trace %s: %w", name, err)
		}
		end := s.EndReason
		if end == "" {
			end = "unfinished"
		}
		fmt.Fprintf(g.Stdout, "ok: %s: trajectory %s, schema %s, %d parts in %d turns, %s\n", trace.Printable(name),
			trace.Printable(s.TrajectoryID), trace.Printable(s.SchemaVersion), s.Parts, s.Turns, trace.Printable(end))
		return nil
	}
	if c.All {
		for _, p := range probs {
			fmt.Fprintln(g.Stdout, trace.Printable(p.String()))
		}
	}
	more := ""
	if len(probs) > 1 && !c.All {
		more = fmt.Sprintf(" (and %d more; --all lists them)", len(probs)-1)
	}
	return &exitError{1, errors.New("invalid trace " + trace.Printable(name) + ": " + trace.Printable(probs[0].String()) + more)}
}
