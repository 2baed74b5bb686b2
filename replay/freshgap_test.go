package replay_test

import (
	"math"
	"testing"

	"github.com/trajlab/traj/replay"
)

// TestFreshGap: public paths pooled by cases, fresh's paths pooled, "all"
// neither, and no gap when a side has no case.
func TestFreshGap(t *testing.T) {
	for _, tc := range []struct {
		name   string
		counts map[string][2]int64
		want   float64
		ok     bool
	}{
		{"pooled", map[string][2]int64{"basics": {9, 10}, "torture": {9, 10}, "fresh": {8, 32}}, 0.9 - 0.25, true},
		{"fresh levels", map[string][2]int64{"basics": {3, 4}, "fresh/level_1": {8, 8}, "fresh/level_2": {0, 8}}, 0.25, true},
		{"all is neither", map[string][2]int64{"all": {10, 10}, "fresh": {1, 4}}, 0, false},
		{"no fresh", map[string][2]int64{"basics": {5, 10}}, 0, false},
		{"fresh with no cases", map[string][2]int64{"basics": {5, 10}, "fresh": {0, 0}}, 0, false},
		{"fresher is public", map[string][2]int64{"fresher": {1, 2}, "fresh": {1, 1}}, -0.5, true},
		{"negative", map[string][2]int64{"basics": {0, 10}, "fresh": {4, 4}}, -1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := replay.FreshGap(tc.counts)
			if ok != tc.ok || math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("FreshGap = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
