package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/labels"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
)

// SummaryVersion changes when the summary file's content changes meaning;
// a report recomputes summaries of another version from the trace.
const SummaryVersion = 3

// SummaryFile is trajectories/<id>/summary.json: a finished trajectory's
// report row from its trace (rates from ground truth, else the agent's run_tests calls), so a
// report over many trajectories reads a few KB per trajectory instead of
// every trace. TraceSize is the size of the trace it was made from: a
// trace that changed since (a resumed trajectory) makes it stale.
type SummaryFile struct {
	Version int `json:"summary_version"`
	Trajectory
	EndDetail string `json:"end_detail,omitempty"`
	TraceSize int64  `json:"trace_size"`
	// CostByPart is the cumulative cost where it changes (at most
	// maxCostPoints, thinned evenly), for the cost to reach a score.
	CostByPart []CostPoint `json:"cost_by_part,omitempty"`
}

// CostPoint is the cumulative cost after a part.
type CostPoint struct {
	Part int     `json:"part"`
	Cost float64 `json:"cost"`
}

const maxCostPoints = 512

// SummaryStore is what writing a summary needs of a store.
type SummaryStore interface {
	Store
	Stat(ctx context.Context, key string) (store.FileInfo, error)
	Save(ctx context.Context, key string, src store.Source) error
}

// ErrUnfinished: the trajectory has no session_end yet, so no summary is
// written (it would go stale with the next part).
var ErrUnfinished = errors.New("trajectory is not finished")

// WriteSummary makes trajectory id's summary.json from its trace in st.
// It is called when a trajectory finishes (traj run, traj trace finalize)
// and by a report that finds a summary missing or stale.
func WriteSummary(ctx context.Context, st SummaryStore, id string) (*SummaryFile, error) {
	fi, err := st.Stat(ctx, store.TraceKey(id))
	if err != nil {
		return nil, fmt.Errorf("summary of %s: %w", id, err)
	}
	var sum *SummaryFile
	err = st.Load(ctx, store.TraceKey(id), func(r io.Reader) error {
		tr, err := trace.Read(r)
		if err != nil {
			return err
		}
		sum = summaryOf(tr, fi.Size)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("summary of %s: read trace: %w", id, err)
	}
	if sum.EndReason == "running" {
		return sum, ErrUnfinished
	}
	b, err := json.Marshal(sum)
	if err != nil {
		return nil, err
	}
	if err := st.Save(ctx, store.SummaryKey(id), store.Bytes(b)); err != nil {
		return sum, fmt.Errorf("save summary of %s: %w", id, err)
	}
	return sum, nil
}

func summaryOf(tr *trace.Trace, size int64) *SummaryFile {
	s := &SummaryFile{Version: SummaryVersion, Trajectory: Summarize(tr, nil), TraceSize: size}
	if tr.SessionEnd != nil {
		s.EndDetail = tr.SessionEnd.Detail
	}
	var cum float64
	for _, turn := range tr.Turns {
		for i := range turn.Parts {
			p := &turn.Parts[i]
			if p.Cost != nil && *p.Cost != 0 {
				cum += *p.Cost
				s.CostByPart = append(s.CostByPart, CostPoint{Part: p.Part, Cost: cum})
			}
		}
	}
	if n := len(s.CostByPart); n > maxCostPoints {
		thin := make([]CostPoint, 0, maxCostPoints)
		for i := range maxCostPoints {
			thin = append(thin, s.CostByPart[(i+1)*n/maxCostPoints-1])
		}
		s.CostByPart = thin
	}
	return s
}

// loadSummary reads id's summary.json; ok is false when it is missing,
// unreadable, of another version, or made from a trace of another size.
func loadSummary(ctx context.Context, st Store, id string, traceSize int64) (*SummaryFile, bool) {
	var s SummaryFile
	err := st.Load(ctx, store.SummaryKey(id), func(r io.Reader) error {
		b, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		s = SummaryFile{}
		return json.NewDecoder(bytes.NewReader(b)).Decode(&s)
	})
	if err != nil || s.Version != SummaryVersion || s.TraceSize != traceSize {
		return nil, false
	}
	return &s, true
}

// withEvaluation replaces a summary's rates by an evaluation's.
func (s *SummaryFile) withEvaluation(ev *replay.Output) Trajectory {
	t := s.Trajectory
	agent := Series{Source: FromRunTests, Points: t.AgentByPart, Latest: t.AgentSuites}
	t.setScores(Scores{Score: EvaluationSeries(ev), Agent: agent})
	t.Regressions = replay.Regressions(ev.TestAttribution)
	if ls, ok := labels.Stored(ev); ok {
		t.Labels = nonNilLabels(ls.Labels)
	}
	return t
}

// CostAt is the cumulative cost up to part (nil when the trajectory
// reported no cost).
func (s *SummaryFile) CostAt(part int) *float64 {
	if len(s.CostByPart) == 0 {
		return nil
	}
	c := 0.0
	for _, p := range s.CostByPart {
		if p.Part > part {
			break
		}
		c = p.Cost
	}
	return &c
}
