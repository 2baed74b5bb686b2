package evalarray

import "testing"

// TestFaultHalt: --fault-halt names one task and a tree count; anything
// else is refused, so a misspelt injection cannot pass for no injection.
func TestFaultHalt(t *testing.T) {
	for _, tc := range []struct {
		spec string
		idx  int
		want int
		bad  bool
	}{
		{"", 1, 0, false},
		{"1:1", 1, 1, false},
		{"1:3", 0, 0, false},
		{"0:2", 0, 2, false},
		{"1", 1, 0, true},
		{"1:0", 1, 0, true},
		{"-1:1", 1, 0, true},
		{"a:1", 1, 0, true},
		{"1:x", 1, 0, true},
	} {
		got, err := faultHalt(tc.spec, tc.idx)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("faultHalt(%q, %d) = %d, %v; want %d, error %v", tc.spec, tc.idx, got, err, tc.want, tc.bad)
		}
	}
}
