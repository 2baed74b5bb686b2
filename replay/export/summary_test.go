package export_test

import (
	"strings"
	"testing"
	"time"

	"github.com/trajlab/traj/replay/export"
)

func TestSummaryWriteText(t *testing.T) {
	for _, tc := range []struct {
		s    export.Summary
		want string
	}{
		{export.Summary{Format: "parquet", Out: "o", Exported: 2, Unchanged: 1, Rows: map[string]int64{"parts": 9, "evaluations": 2}, Duration: 1234567890},
			"parquet export in o: 2 exported, 1 unchanged (1.235s)\nrows written: evaluations 2, parts 9\n"},
		{export.Summary{Format: "atif", Out: "o", Failed: 1, Pruned: 3, Duration: time.Second},
			"atif export in o: 0 exported, 0 unchanged, 1 failed, 3 pruned (1s)\n"},
	} {
		var b strings.Builder
		tc.s.WriteText(&b)
		if b.String() != tc.want {
			t.Errorf("got %q\nwant %q", b.String(), tc.want)
		}
	}
}
