package replay

import (
	"maps"
	"slices"
	"sort"
)

// Attribution says which parts moved one test: the part that first made it
// pass, the parts after which it went from passing to failing, and the parts
// that made it pass again.
type Attribution struct {
	// FirstPassPart is nil when the test never passed.
	FirstPassPart *int  `json:"first_pass_part"`
	BrokenAt      []int `json:"broken_at"`
	FixedAt       []int `json:"fixed_at"`
	// PassingAtEnd is the test's state at the last part.
	PassingAtEnd bool `json:"passing_at_end"`
}

// Attribute walks parts in order and records, for every test case seen at
// any part, where it first passed, broke and was fixed again. A test absent
// from a part's result (for example because the build failed) counts as
// failing there. Part 1 is compared with "not passing", so a test passing at
// part 1 is attributed to part 1.
func Attribute(parts []int, resultAt func(part int) (Result, bool)) map[string]*Attribution {
	states := make([]map[string]bool, len(parts))
	all := make(map[string]struct{})
	for i, part := range parts {
		r, ok := resultAt(part)
		st := make(map[string]bool)
		if ok {
			for suite, s := range r.Suites {
				for _, c := range s.Cases {
					id := TestID(suite, c.Name)
					st[id] = st[id] || c.Passed
					all[id] = struct{}{}
				}
			}
		}
		states[i] = st
	}
	ids := slices.Sorted(maps.Keys(all))
	out := make(map[string]*Attribution, len(ids))
	for _, id := range ids {
		a := &Attribution{BrokenAt: []int{}, FixedAt: []int{}}
		prev := false
		for i, part := range parts {
			cur := states[i][id]
			switch {
			case cur && !prev && a.FirstPassPart == nil:
				p := part
				a.FirstPassPart = &p
			case cur && !prev:
				a.FixedAt = append(a.FixedAt, part)
			case !cur && prev:
				a.BrokenAt = append(a.BrokenAt, part)
			}
			prev = cur
		}
		a.PassingAtEnd = prev
		out[id] = a
	}
	return out
}

// Regression is one pass → fail transition of one test, and the part that
// fixed it again, if any.
type Regression struct {
	Test     string `json:"test"`
	BrokenAt int    `json:"broken_at"`
	// FixedAt is 0 when the test was still failing at the last part.
	FixedAt int `json:"fixed_at"`
}

// Regressions flattens attributions into one row per break, ordered by the
// part that broke the test.
func Regressions(attr map[string]*Attribution) []Regression {
	var out []Regression
	for id, a := range attr {
		for _, b := range a.BrokenAt {
			r := Regression{Test: id, BrokenAt: b}
			for _, f := range a.FixedAt {
				if f > b {
					r.FixedAt = f
					break
				}
			}
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].BrokenAt != out[j].BrokenAt {
			return out[i].BrokenAt < out[j].BrokenAt
		}
		return out[i].Test < out[j].Test
	})
	return out
}
