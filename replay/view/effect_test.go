package view

import (
	"slices"
	"testing"

	"github.com/trajlab/traj/replay/report"
)

func TestEffect(t *testing.T) {
	rt := func(part int, suite string, passed, total int) report.SuiteRate {
		return report.SuiteRate{Suite: suite, Passed: passed, Total: total, Rate: float64(passed) / float64(total), Part: part}
	}
	// basics: 5/10 at 2, 5/10 at 4 (no change), 10/10 at 6, 8/10 at 9.
	sc := report.RunTestsSeries([]report.SuiteRate{rt(2, "basics", 5, 10), rt(4, "basics", 5, 10), rt(6, "basics", 10, 10), rt(9, "basics", 8, 10)})
	f := func(v float64) *float64 { return &v }
	tests := []struct {
		part          int
		before, after *float64
		evaluated     bool
		first, broken []string
		prev, next    int
	}{
		{part: 1, next: 2},
		{part: 2, after: f(0.5), evaluated: true, first: []string{"basics"}, next: 6},
		{part: 4, before: f(0.5), after: f(0.5), evaluated: true, prev: 2, next: 6},
		{part: 5, before: f(0.5), after: f(0.5), prev: 2, next: 6},
		{part: 6, before: f(0.5), after: f(1), evaluated: true, first: []string{"basics"}, prev: 2, next: 9},
		{part: 9, before: f(1), after: f(0.8), evaluated: true, broken: []string{"basics"}, prev: 6},
		{part: 12, before: f(0.8), after: f(0.8), prev: 9},
	}
	for _, tt := range tests {
		e := effect(sc, nil, tt.part)
		eq := func(a, b *float64) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }
		if !eq(e.Before, tt.before) || !eq(e.After, tt.after) || e.Evaluated != tt.evaluated || e.PrevChange != tt.prev || e.NextChange != tt.next ||
			!slices.Equal(e.FirstPassed, append([]string{}, tt.first...)) || !slices.Equal(e.Broken, append([]string{}, tt.broken...)) {
			t.Errorf("part %d: %+v (before %v after %v)", tt.part, e, deref(e.Before), deref(e.After))
		}
	}
}

func deref(f *float64) any {
	if f == nil {
		return nil
	}
	return *f
}
