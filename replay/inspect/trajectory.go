package inspect

import (
	"context"
	"fmt"
	"io"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/source"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/atomicfile"
)

// Checkout is what `traj replay checkout-part` asks for: the repository
// at Part written into Dest (replacing what it holds when Force), its
// summary also written to Output when set.
type Checkout struct {
	Part         int
	Dest, Output string
	Force        bool
}

// CheckoutPart writes t's repository at c.Part and its summary (JSON) to
// w. The part's commit comes from the trace's part index: one part is
// read, not the trace. Errors the request causes (a bad part, a
// destination that is not empty or lies in what t protects) match
// replay.ErrUsage.
func CheckoutPart(ctx context.Context, t *source.Trajectory, c Checkout, w io.Writer) error {
	if c.Output != "" {
		if err := replay.CheckOutput(c.Output, t.Protected); err != nil {
			return err
		}
	}
	commit, err := replay.CommitForPartAt(t.TracePath, t.ID, c.Part)
	if err != nil {
		return err
	}
	sum, err := replay.CheckoutCommit(ctx, t.ID, commit, t.History, replay.CheckoutRequest{
		Part: c.Part, Dest: c.Dest, Force: c.Force, Protected: t.Protected,
	})
	if err != nil {
		return err
	}
	data, err := replay.MarshalIndent(sum)
	if err != nil {
		return err
	}
	if c.Output != "" {
		if err := atomicfile.WriteBytes(c.Output, data); err != nil {
			return err
		}
	}
	_, err = w.Write(data)
	return err
}

// Verify checks t's integrity (the trace streams through the checks: a
// long trace is never held) and writes what it found to w, as text or
// JSON; it returns how many problems there are.
func Verify(ctx context.Context, t *source.Trajectory, asJSON bool, w io.Writer) (int, error) {
	probs, parts, err := t.Verify(ctx)
	if err != nil {
		return 0, err
	}
	switch {
	case asJSON:
		if probs == nil {
			probs = []replay.Problem{}
		}
		data, err := replay.MarshalIndent(map[string]any{"trajectory_id": t.ID, "ok": len(probs) == 0, "problems": probs})
		if err != nil {
			return 0, err
		}
		_, err = w.Write(data)
		return len(probs), err
	case len(probs) == 0:
		_, err = fmt.Fprintf(w, "trajectory %s: ok (%d parts, every commit in the bundle)\n", trace.Printable(t.ID), parts)
	default:
		fmt.Fprintf(w, "trajectory %s: %d problem(s)\n", trace.Printable(t.ID), len(probs))
		for _, p := range probs {
			_, err = fmt.Fprintf(w, "  %s\n", trace.Printable(p.String()))
		}
	}
	return len(probs), err
}
