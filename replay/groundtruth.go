package replay

import (
	"context"
	"fmt"
	"slices"

	"github.com/trajlab/traj/trace"
)

// FullGroundTruth is a trace's ground-truth results that scored every case
// of the required paths (no error, not sampled), one per part (a later
// result for the same part wins), ascending by part: what a score taken
// from the trace, without an evaluate report, stands on.
func FullGroundTruth(results []trace.GroundTruth) []trace.GroundTruth {
	byPart := map[int]trace.GroundTruth{}
	for _, g := range results {
		if g.Error != "" || g.Total <= 0 || g.Sampled {
			continue
		}
		byPart[g.Part] = g
	}
	out := make([]trace.GroundTruth, 0, len(byPart))
	for _, g := range byPart {
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b trace.GroundTruth) int { return a.Part - b.Part })
	return out
}

// GroundTruthAttribution is Attribute over the parts full (FullGroundTruth)
// names, each part's per-case result read from the evaluation cache the
// run wrote it to (its CacheKey): which ground-truth part first saw each
// case pass, break, pass again. ok is false, and nothing is attributed,
// when a result's entry is missing or unusable: a part without its
// cases would count every case as failing there.
func GroundTruthAttribution(ctx context.Context, c Cache, full []trace.GroundTruth) (map[string]*Attribution, bool, error) {
	if c == nil || len(full) == 0 {
		return nil, false, nil
	}
	results := make(map[int]Result, len(full))
	parts := make([]int, 0, len(full))
	for _, g := range full {
		if g.CacheKey == "" {
			return nil, false, nil
		}
		e, ok, err := c.Get(ctx, g.CacheKey)
		if err != nil {
			return nil, false, fmt.Errorf("ground truth of part %d: %w", g.Part, err)
		}
		if !ok {
			return nil, false, nil
		}
		results[g.Part] = e.Result
		parts = append(parts, g.Part)
	}
	return Attribute(parts, func(p int) (Result, bool) {
		r, ok := results[p]
		return r, ok
	}), true, nil
}
