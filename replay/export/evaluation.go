package export

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/labels"
	"github.com/trajlab/traj/trace/store/ref"
)

// loadEvaluation reads the trajectory's evaluation report (nil when it has
// none) as the export needs it: of its part evaluations, only the last
// part's and the first at the best pass rate (the trajectories table's
// final and best), decoded one at a time, and no part_to_commit map. At
// 100,000 parts a report is 46 MB of JSON, and its two part maps decoded
// whole took a Parquet export from 210 to 511 MB. A report without stored
// failure labels is read whole: the labels are then computed from all its
// part evaluations.
func loadEvaluation(ctx context.Context, t *ref.Trajectory) (*replay.Output, error) {
	lean := leanReport{Output: &replay.Output{}}
	found, err := t.LoadEvaluation(ctx, &lean)
	if err != nil || !found {
		return nil, err
	}
	ev := lean.Output
	if _, ok := labels.Stored(ev); ok {
		ev.PartEvaluations = lean.PartEvaluations.m
		return ev, nil
	}
	ev = &replay.Output{}
	if _, err := t.LoadEvaluation(ctx, ev); err != nil {
		return nil, err
	}
	return ev, nil
}

// leanReport decodes a report but for its part maps: its own fields
// shadow replay.Output's of the same names.
type leanReport struct {
	*replay.Output
	PartEvaluations finalAndBest `json:"part_evaluations"`
	PartToCommit    skipped      `json:"part_to_commit"`
}

// skipped decodes nothing.
type skipped struct{}

func (skipped) UnmarshalJSON([]byte) error { return nil }

// finalAndBest keeps, of a report's part evaluations, the one of the
// highest part and the first without error at the best pass rate.
type finalAndBest struct {
	m replay.PartMap[*replay.PartEvaluation]
}

func (f *finalAndBest) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return fmt.Errorf("part_evaluations: not an object (%v)", err)
	}
	last, best := -1, -1
	var lastPE, bestPE *replay.PartEvaluation
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("part_evaluations: %w", err)
		}
		key, _ := tok.(string)
		k, err := strconv.Atoi(key)
		if err != nil {
			return fmt.Errorf("part_evaluations: key %q is not a part", key)
		}
		var pe *replay.PartEvaluation
		if err := dec.Decode(&pe); err != nil {
			return fmt.Errorf("part_evaluations: part %d: %w", k, err)
		}
		if k > last {
			last, lastPE = k, pe
		}
		if pe != nil && pe.Error == "" && (bestPE == nil || pe.PassRate > bestPE.PassRate || pe.PassRate == bestPE.PassRate && k < best) {
			best, bestPE = k, pe
		}
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("part_evaluations: %w", err)
	}
	f.m = replay.PartMap[*replay.PartEvaluation]{}
	if last >= 0 {
		f.m[last] = lastPE
	}
	if best >= 0 {
		f.m[best] = bestPE
	}
	return nil
}
