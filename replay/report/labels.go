package report

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/labels"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/ref"
)

// labelsOf are a trajectory's failure labels: those its evaluation report
// holds (computed by `traj replay evaluate` with its thresholds), else
// computed here with the default thresholds from tr and ev.
func labelsOf(tr *trace.Trace, ev *replay.Output) []labels.Label {
	if s, ok := labels.Stored(ev); ok {
		return nonNilLabels(s.Labels)
	}
	return nonNilLabels(labels.Compute(tr, ev, labels.Options{}))
}

func nonNilLabels(ls []labels.Label) []labels.Label {
	if ls == nil {
		return []labels.Label{}
	}
	return ls
}

// Relabel computes every trajectory's labels again with o, from its trace
// and evaluation report in st (nil: trajs are folders on disk, t.Folder):
// what `traj report --labels` does. Nothing is evaluated.
func Relabel(ctx context.Context, st Store, trajs []Trajectory, o labels.Options, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	for i := range trajs {
		t := &trajs[i]
		var ls []labels.Label
		var err error
		if st == nil {
			ls, err = relabelFolder(t.Folder, o)
		} else {
			ls, err = relabelStored(ctx, st, t.ID, o)
		}
		if err != nil {
			logger.Warn("labels not recomputed", "trajectory", t.ID, "err", err)
			continue
		}
		t.Labels = nonNilLabels(ls)
	}
	return nil
}

func relabelStored(ctx context.Context, st Store, id string, o labels.Options) ([]labels.Label, error) {
	ev := &replay.Output{}
	if found, err := ref.LoadEvaluation(ctx, st, store.TrajectoryPrefix(id), ev); err != nil || !found {
		ev = nil
	}
	var ls []labels.Label
	err := st.Load(ctx, store.TraceKey(id), func(r io.Reader) error {
		var err error
		ls, err = labels.ComputeReader(r, ev, o)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("label %s: %w", id, err)
	}
	return ls, nil
}

func relabelFolder(dir string, o labels.Options) ([]labels.Label, error) {
	var ev *replay.Output
	if data, err := os.ReadFile(filepath.Join(dir, store.EvaluationName)); err == nil {
		ev = &replay.Output{}
		if json.Unmarshal(data, ev) != nil {
			ev = nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read %q: %w", dir, err)
	}
	return labels.ComputeFile(filepath.Join(dir, store.TraceName), ev, o)
}

// LabelCount is how many trajectories of one harness and model got a
// label (each trajectory once per label, however many parts show it).
type LabelCount struct {
	Harness      string `json:"harness"`
	Model        string `json:"model"`
	Label        string `json:"label"`
	Trajectories int    `json:"trajectories"`
	// Of is how many trajectories the harness and model have.
	Of int `json:"of"`
}

// LabelCounts counts labels by harness and model, in that order, then by
// label kind (labels.Kinds). Reruns and forks are left out unless
// r.WithDerived, as in ByHarness.
func (r Report) LabelCounts() []LabelCount {
	type key struct{ h, m string }
	of := map[key]int{}
	got := map[key]map[string]int{}
	for _, t := range r.Trajectories {
		if t.Derived() && !r.WithDerived {
			continue
		}
		k := key{t.Harness, t.Model}
		of[k]++
		seen := map[string]bool{}
		for _, l := range t.Labels {
			if !seen[l.Label] {
				seen[l.Label] = true
				if got[k] == nil {
					got[k] = map[string]int{}
				}
				got[k][l.Label]++
			}
		}
	}
	keys := make([]key, 0, len(of))
	for k := range of {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := strings.Compare(a.h, b.h); c != 0 {
			return c
		}
		return strings.Compare(a.m, b.m)
	})
	out := []LabelCount{}
	for _, k := range keys {
		for _, kind := range labels.Kinds {
			if n := got[k][kind]; n > 0 {
				out = append(out, LabelCount{Harness: k.h, Model: k.m, Label: kind, Trajectories: n, Of: of[k]})
			}
		}
	}
	return out
}

// writeLabelsText lists every trajectory's labels (part and evidence)
// and their counts by harness and model; nothing when no trajectory has
// one.
func writeLabelsText(w io.Writer, r Report) error {
	counts := r.LabelCounts()
	labelled := false
	for _, t := range r.Trajectories {
		labelled = labelled || len(t.Labels) > 0
	}
	if !labelled {
		return nil
	}
	p := trace.Printable
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TRAJECTORY\tLABEL\tPART\tEVIDENCE")
	for _, t := range r.Trajectories {
		for _, l := range t.Labels {
			part := "-"
			if l.Part > 0 {
				part = strconv.Itoa(l.Part)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p(displayID(t)), l.Label, part, p(l.Evidence))
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if len(counts) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "HARNESS\tMODEL\tLABEL\tTRAJECTORIES")
	for _, c := range counts {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d of %d\n", p(orDash(c.Harness)), p(orDash(c.Model)), c.Label, c.Trajectories, c.Of)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}
