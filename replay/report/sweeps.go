package report

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"text/tabwriter"

	"github.com/trajlab/traj/replay/sweepvalue"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store/ref"
)

// WriteSweepText is a sweep's value table: per swept part its fork point,
// forks (counted, not reproduced), mean value, spread, share solved, and
// the decisive part.
func WriteSweepText(w io.Writer, s *sweepvalue.Result) error {
	p := trace.Printable
	fmt.Fprintf(w, "sweep %s of %s (%d parts): forks a part %d, model %s, at most %d parts each\n",
		p(s.Name), p(s.Source), s.SourceParts, s.Repeats, p(s.Model), s.MaxParts)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PART\tFORK POINT\tFORKS\tCOUNTED\tNOT REPRODUCED\tMEAN\tSTD\tMIN\tMAX\tSOLVED\t")
	for _, r := range s.Rows {
		mark := ""
		if d := s.Decisive; d != nil && d.Part == r.Part {
			mark = "◀ decisive"
		}
		if r.Counted == 0 {
			fmt.Fprintf(tw, "%d\t%d\t%d\t0\t%d\t-\t-\t-\t-\t-\t%s\n", r.Part, r.ForkPart, r.Forks, r.NotReproduced, mark)
			continue
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%.1f%%\t%.1f\t%.1f%%\t%.1f%%\t%.0f%% (%d)\t%s\n", r.Part, r.ForkPart, r.Forks, r.Counted,
			r.NotReproduced, 100*r.Mean, 100*r.Std, 100*r.Min, 100*r.Max, 100*r.ShareSolved, r.Solved, mark)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write sweep: %w", err)
	}
	if d := s.Decisive; d != nil {
		fmt.Fprintf(w, "decisive part: %d (the value falls by %.1f points from part %d)\n", d.Part, 100*d.Drop, d.Before)
	} else {
		fmt.Fprintln(w, "decisive part: none (the value never falls between swept parts)")
	}
	return nil
}

// CollectSweeps reads the fork sweeps stored beside st's trajectories
// (ids, when not nil, limits it to those sources), by source and name.
// A result that cannot be read is skipped with a warning.
func CollectSweeps(ctx context.Context, st Store, ids []string, logger *slog.Logger) ([]*sweepvalue.Result, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	listed, err := ref.List(ctx, st)
	if err != nil {
		return nil, err
	}
	var out []*sweepvalue.Result
	for _, l := range listed {
		if ids != nil && !slices.Contains(ids, l.ID) {
			continue
		}
		for _, k := range l.Sweeps {
			var res *sweepvalue.Result
			err := st.Load(ctx, k, func(r io.Reader) error {
				var err error
				res, err = sweepvalue.Decode(r)
				return err
			})
			if err != nil {
				logger.Warn("sweep result not read", "key", k, "err", err)
				continue
			}
			out = append(out, res)
		}
	}
	return out, nil
}
