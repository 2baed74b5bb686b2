// Package inspect is `traj trace show` and `traj trace validate` as
// library calls: a Request names a trace as every command does (an id in
// a store, a trajectory folder, an agent_trace.json path, an s3:// URL:
// trace/store/ref), Open resolves it to a local file (rebuilt from its
// chunks when the store lacks agent_trace.json), Show writes its summary
// (trace.Summarize), Validate checks it against the contract
// (trace.Validate). Errors the request causes (a bad or unknown
// reference) match replay.ErrUsage.
package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/location"
	"github.com/trajlab/traj/trace/store/ref"
)

// Request names the trace and where the answer goes.
type Request struct {
	// Ref is the trace; Store the store of a bare id (as chosen:
	// location.Choose).
	Ref, Store string
	Stdout     io.Writer
	Logger     *slog.Logger
}

func (r *Request) defaults() {
	if r.Stdout == nil {
		r.Stdout = io.Discard
	}
	if r.Logger == nil {
		r.Logger = slog.New(slog.DiscardHandler)
	}
}

// Open opens the trace r names as a local regular file, and a name for
// messages (the id or URL given rather than a cache path).
func Open(ctx context.Context, r Request) (*os.File, string, error) {
	r.defaults()
	t, err := ref.Resolve(ctx, r.Ref, r.Store, ref.Options{Store: location.Options{Logger: r.Logger}})
	if err != nil {
		return nil, "", replay.Usage(err)
	}
	path, rebuilt, err := t.TracePath(ctx)
	switch {
	case errors.Is(err, ref.ErrPartial):
		r.Logger.Warn("trace rebuilt from chunks is partial", "trajectory", t.ID, "err", err)
	case errors.Is(err, store.ErrNotFound):
		return nil, "", replay.Usage(err)
	case err != nil:
		return nil, "", err
	case rebuilt:
		r.Logger.Info("agent_trace.json missing; trace rebuilt from its chunks", "trajectory", t.ID, "where", t.Where)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, "", replay.Usage(fmt.Errorf("trace %s: %w", r.Ref, err))
	}
	if st, err := f.Stat(); err == nil && !st.Mode().IsRegular() {
		f.Close()
		return nil, "", replay.UsageError("trace %s: not a regular file", path)
	}
	name := path
	if location.Scheme(r.Ref) != "" || t.Prefix != "" {
		name = r.Ref // an id or URL reads better than a cache path
	}
	return f, name, nil
}

// Show writes the trace's summary: text, or indented JSON.
func Show(ctx context.Context, r Request, asJSON bool) error {
	r.defaults()
	f, name, err := Open(ctx, r)
	if err != nil {
		return err
	}
	defer f.Close()
	s, err := trace.Summarize(f)
	if err != nil {
		return fmt.Errorf("read trace %s: %w", name, err)
	}
	if asJSON {
		enc := json.NewEncoder(r.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	return s.WriteText(r.Stdout)
}

// Validate checks the trace against the schema and the part/turn
// invariants: valid, it writes one line saying so; invalid, its error
// names the first problem (all: every problem is written first).
func Validate(ctx context.Context, r Request, all bool) error {
	r.defaults()
	f, name, err := Open(ctx, r)
	if err != nil {
		return err
	}
	defer f.Close()
	probs := trace.Validate(f)
	if len(probs) == 0 {
		// Summarize reads the same file again (resolving the reference
		// again could download or rebuild the trace a second time).
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("read trace %s: %w", name, err)
		}
		s, err := trace.Summarize(f)
		if err != nil {
			return fmt.Errorf("read trace %s: %w", name, err)
		}
		end := s.EndReason
		if end == "" {
			end = "unfinished"
		}
		fmt.Fprintf(r.Stdout, "ok: %s: trajectory %s, schema %s, %d parts in %d turns, %s\n", trace.Printable(name),
			trace.Printable(s.TrajectoryID), trace.Printable(s.SchemaVersion), s.Parts, s.Turns, trace.Printable(end))
		return nil
	}
	if all {
		for _, p := range probs {
			fmt.Fprintln(r.Stdout, trace.Printable(p.String()))
		}
	}
	more := ""
	if len(probs) > 1 && !all {
		more = fmt.Sprintf(" (and %d more; --all lists them)", len(probs)-1)
	}
	return errors.New("invalid trace " + trace.Printable(name) + ": " + trace.Printable(probs[0].String()) + more)
}
