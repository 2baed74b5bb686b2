package sweepvalue

import (
	"math"
	"testing"
)

func val(v float64) *float64 { return &v }

// TestSummarize: values by swept part, forks whose prefix was not
// reproduced or that have no result left out, the decisive part at the
// largest drop of the mean (none without a drop).
func TestSummarize(t *testing.T) {
	ok := func(at int, v float64, solved bool) Fork {
		return Fork{At: at, ForkPart: at, Value: val(v), Solved: solved, PrefixOK: true}
	}
	tests := []struct {
		name     string
		forks    []Fork
		means    []float64
		counted  []int
		decisive *Decisive
	}{
		{"drop at the deletion", []Fork{ok(3, 1, true), ok(3, 1, true), ok(9, 0, false), ok(9, 0, false), ok(11, 0, false)},
			[]float64{1, 0, 0}, []int{2, 2, 1}, &Decisive{Part: 9, Before: 3, Drop: 1}},
		{"the largest of two drops", []Fork{ok(1, 1, true), ok(2, 0.8, false), ok(3, 0.1, false), ok(4, 0, false)},
			[]float64{1, 0.8, 0.1, 0}, []int{1, 1, 1, 1}, &Decisive{Part: 3, Before: 2, Drop: 0.7}},
		{"no drop", []Fork{ok(1, 0.2, false), ok(2, 0.5, false)}, []float64{0.2, 0.5}, []int{1, 1}, nil},
		{"a fork not reproduced does not count", []Fork{ok(1, 1, true), {At: 2, ForkPart: 2, Value: val(1), PrefixOK: false}, ok(2, 0, false)},
			[]float64{1, 0}, []int{1, 1}, &Decisive{Part: 2, Before: 1, Drop: 1}},
		{"a part without counted forks is skipped", []Fork{ok(1, 1, true), {At: 2, ForkPart: 2, PrefixOK: true}, ok(3, 0.5, false)},
			[]float64{1, 0, 0.5}, []int{1, 0, 1}, &Decisive{Part: 3, Before: 1, Drop: 0.5}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rows, d := Summarize(tc.forks)
			if len(rows) != len(tc.means) {
				t.Fatalf("rows %+v", rows)
			}
			for i, r := range rows {
				if math.Abs(r.Mean-tc.means[i]) > 1e-9 || r.Counted != tc.counted[i] {
					t.Errorf("row %d: %+v, want mean %v counted %d", i, r, tc.means[i], tc.counted[i])
				}
			}
			switch {
			case tc.decisive == nil && d != nil:
				t.Errorf("decisive %+v, want none", d)
			case tc.decisive != nil && (d == nil || d.Part != tc.decisive.Part || d.Before != tc.decisive.Before || math.Abs(d.Drop-tc.decisive.Drop) > 1e-9):
				t.Errorf("decisive %+v, want %+v", d, tc.decisive)
			}
		})
	}
	rows, _ := Summarize([]Fork{ok(1, 1, true), ok(1, 0, false), ok(1, 0.5, false), {At: 1, ForkPart: 1, Value: val(1)}})
	r := rows[0]
	if r.Forks != 4 || r.Counted != 3 || r.NotReproduced != 1 || r.Solved != 1 || math.Abs(r.ShareSolved-1.0/3) > 1e-9 ||
		r.Min != 0 || r.Max != 1 || math.Abs(r.Std-math.Sqrt(1.0/6)) > 1e-9 {
		t.Errorf("row %+v", r)
	}
}
