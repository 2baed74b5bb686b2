package sweep

import (
	"slices"
	"testing"
)

// TestSweptParts: --at as parts or every:N, checked against the source's
// part count before anything runs.
func TestSweptParts(t *testing.T) {
	tests := []struct {
		at      string
		parts   int
		want    []int
		badFlag bool
		badPart bool
	}{
		{at: "9,3,5,3", parts: 12, want: []int{3, 5, 9}},
		{at: "every:4", parts: 12, want: []int{4, 8, 12}},
		{at: "every:5", parts: 12, want: []int{5, 10}},
		{at: " 7 ", parts: 12, want: []int{7}},
		{at: "13", parts: 12, badPart: true},
		{at: "every:13", parts: 12, badPart: true},
		{at: "0", badFlag: true},
		{at: "-2", badFlag: true},
		{at: "3,,4", badFlag: true},
		{at: "every:0", badFlag: true},
		{at: "every:x", badFlag: true},
		{at: "", badFlag: true},
	}
	for _, tc := range tests {
		at, every, err := ParseAt(tc.at)
		if tc.badFlag {
			if err == nil {
				t.Errorf("--at %q: accepted (%v, every %d)", tc.at, at, every)
			}
			continue
		}
		if err != nil {
			t.Errorf("--at %q: %v", tc.at, err)
			continue
		}
		got, err := parts(Request{At: at, Every: every}, tc.parts)
		switch {
		case tc.badPart && err == nil:
			t.Errorf("--at %q of %d parts: %v accepted", tc.at, tc.parts, got)
		case !tc.badPart && (err != nil || !slices.Equal(got, tc.want)):
			t.Errorf("--at %q of %d parts: %v, %v; want %v", tc.at, tc.parts, got, err, tc.want)
		}
	}
}
