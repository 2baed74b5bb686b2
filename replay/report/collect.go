package report

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sort"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/ref"
)

// Store is the part of an artifact store a report reads.
type Store interface {
	List(ctx context.Context, prefix string, fn func(store.FileInfo) error) error
	Load(ctx context.Context, key string, fn func(io.Reader) error) error
}

// Collect summarises every trajectory in st that has a trace, using its
// stored evaluation report (EvaluationKey) for pass rates when there is one.
// A finished trajectory's summary.json is read instead of its trace when it
// matches the trace (see SummaryFile); a missing or stale one is made from
// the trace and saved when st can save. A trajectory whose trace cannot be
// read is skipped with a warning, so one damaged trajectory does not hide
// the others.
func Collect(ctx context.Context, st Store, logger *slog.Logger) ([]Trajectory, error) {
	sums, err := CollectSummaries(ctx, st, nil, logger)
	if err != nil {
		return nil, err
	}
	out := make([]Trajectory, len(sums))
	for i, s := range sums {
		out[i] = s.Trajectory
	}
	return out, nil
}

// CollectSummaries is Collect with the summary files (cost by part, end
// detail); ids, when not nil, limits it to those trajectories (missing ones
// are skipped). The store's trajectories are ref.List's (a trace or its
// chunks; one with chunks only, still running or cut off, is read from the
// trace rebuilt from them when st is a whole store). Rows whose rates come
// from an evaluation have them in Trajectory; CostByPart always comes from
// the trace.
func CollectSummaries(ctx context.Context, st Store, ids []string, logger *slog.Logger) ([]*SummaryFile, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	listed, err := ref.List(ctx, st)
	if err != nil {
		return nil, err
	}
	all := ids == nil
	byID := make(map[string]ref.Listed, len(listed))
	for _, l := range listed {
		byID[l.ID] = l
		if all {
			ids = append(ids, l.ID)
		}
	}
	ids = slices.Sorted(slices.Values(ids))
	var out []*SummaryFile
	for _, id := range ids {
		l, ok := byID[id]
		if !ok {
			continue
		}
		sum, err := summaryFor(ctx, st, l, logger)
		if err != nil {
			logger.Warn("skip trajectory: trace unreadable", "trajectory", id, "err", err)
			continue
		}
		if l.HasEvaluation {
			ev := &replay.Output{}
			found, err := ref.LoadEvaluation(ctx, st, store.TrajectoryPrefix(id), ev)
			if err != nil {
				logger.Warn("ignore evaluation report", "trajectory", id, "err", err)
			} else if found {
				sum.Trajectory = sum.withEvaluation(ev)
			}
		}
		sum.Folder = store.TrajectoryPrefix(id)
		checkFolder(&sum.Trajectory, id, logger)
		out = append(out, sum)
	}
	return out, nil
}

// checkFolder makes the folder's name t's id when the trace names another
// trajectory (a copied or tampered trace), keeping the trace's in TraceID,
// and says so.
func checkFolder(t *Trajectory, folderID string, logger *slog.Logger) {
	if t.ID == folderID {
		return
	}
	logger.Warn("the trace's trajectory_id disagrees with its folder; the report names the folder", "folder", t.Folder, "trace_trajectory_id", t.ID)
	t.TraceID, t.ID = t.ID, folderID
}

// summaryFor reads l's summary when it is current, else summarises the
// trace (and saves the summary of a finished trajectory when st can), or
// the trace rebuilt from its chunks when it has none.
func summaryFor(ctx context.Context, st Store, l ref.Listed, logger *slog.Logger) (*SummaryFile, error) {
	id := l.ID
	if !l.HasTrace {
		return summaryOfChunks(ctx, st, id)
	}
	if l.HasSummary {
		if s, ok := loadSummary(ctx, st, id, l.Trace.Size); ok {
			return s, nil
		}
	}
	if ss, ok := st.(SummaryStore); ok {
		s, err := WriteSummary(ctx, ss, id)
		if s != nil {
			if err != nil && !errors.Is(err, ErrUnfinished) {
				logger.Debug("summary not saved", "trajectory", id, "err", err)
			}
			return s, nil
		}
		return nil, err
	}
	var s *SummaryFile
	err := st.Load(ctx, store.TraceKey(id), func(r io.Reader) error {
		tr, err := trace.Read(r)
		if err != nil {
			return err
		}
		s = summaryOf(tr, l.Trace.Size)
		return nil
	})
	return s, err
}

// summaryOfChunks summarises trajectory id of st from the trace its
// chunks rebuild (a missing chunk cuts it short, as any reader sees it).
// Nothing is saved: a summary names the trace it was made from.
func summaryOfChunks(ctx context.Context, st Store, id string) (*SummaryFile, error) {
	whole, ok := st.(store.Store)
	if !ok {
		return nil, fmt.Errorf("no %s, and chunks are not readable here", store.TraceName)
	}
	t, err := ref.InStore(whole, "store "+whole.URI(""), id, ref.Options{})
	if err != nil {
		return nil, err
	}
	path, _, err := t.TracePath(ctx)
	if err != nil && !errors.Is(err, ref.ErrPartial) {
		return nil, err
	}
	tr, err := replay.ReadTraceFile(path)
	if err != nil {
		return nil, err
	}
	return summaryOf(tr, 0), nil
}

// CollectFolders summarises the trajectory folders at or below dir
// (ref.FolderTree: a trace or its chunks), with the evaluation report
// beside each when present.
func CollectFolders(ctx context.Context, dir string, logger *slog.Logger) ([]Trajectory, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ts, err := ref.FolderTree(dir, ref.Options{})
	if err != nil {
		return nil, err
	}
	var out []Trajectory
	for _, rt := range ts {
		path, _, err := rt.TracePath(ctx)
		if err != nil && !errors.Is(err, ref.ErrPartial) {
			logger.Warn("skip trajectory: trace unreadable", "path", rt.Dir, "err", err)
			continue
		}
		tr, err := replay.ReadTraceFile(path)
		if err != nil {
			logger.Warn("skip trajectory: trace unreadable", "path", path, "err", err)
			continue
		}
		ev := &replay.Output{}
		if found, err := rt.LoadEvaluation(ctx, ev); err != nil || !found {
			if err != nil {
				logger.Warn("ignore evaluation report", "path", rt.Dir, "err", err)
			}
			ev = nil
		}
		t := Summarize(tr, ev)
		t.Folder = rt.Dir
		// In a trajectories/<id>/ layout the folder's name is the id.
		if parent := filepath.Dir(t.Folder); filepath.Base(parent)+"/" == store.TrajectoriesDir {
			checkFolder(&t, filepath.Base(t.Folder), logger)
		}
		out = append(out, t)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}
