package export

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// WriteText writes the summary for a reader: counts, time, and the rows
// written per table.
func (s *Summary) WriteText(w io.Writer) {
	fmt.Fprintf(w, "%s export in %s: %d exported, %d unchanged", s.Format, s.Out, s.Exported, s.Unchanged)
	if s.Failed > 0 {
		fmt.Fprintf(w, ", %d failed", s.Failed)
	}
	if s.Pruned > 0 {
		fmt.Fprintf(w, ", %d pruned", s.Pruned)
	}
	fmt.Fprintf(w, " (%s)\n", s.Duration.Round(1e6))
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(s.Rows)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, s.Rows[k]))
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "rows written: %s\n", strings.Join(parts, ", "))
	}
}
