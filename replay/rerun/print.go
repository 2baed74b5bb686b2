package rerun

import (
	"fmt"
	"io"
)

// Print writes the comparison for a reader: the summary line, then the
// first difference of each kind (or none).
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "\n%s\n", r.Summary())
	fmt.Fprintf(w, "  parts:        source %d, rerun %d; trees compared at %d model-response ends\n", r.SourceParts, r.RerunParts, r.Boundaries)
	if d := r.FirstPart; d != nil {
		fmt.Fprintf(w, "  first part:   %d differs in %s\n    source: %s\n    rerun:  %s\n", d.Part, d.Field, d.Source, d.Rerun)
	} else {
		fmt.Fprintln(w, "  first part:   none differs")
	}
	if d := r.FirstTree; d != nil {
		fmt.Fprintf(w, "  first tree:   part %d (source %s, rerun %s)\n", d.Part, orNone(d.Source), orNone(d.Rerun))
	} else {
		fmt.Fprintln(w, "  first tree:   none differs")
	}
	if r.FirstReordered > 0 {
		fmt.Fprintf(w, "  reordered:    from part %d a model response's parts came in another order, the same parts (parallel tool calls)\n", r.FirstReordered)
	}
	if d := r.FirstCheckpoint; d != nil {
		fmt.Fprintf(w, "  first checkpoint: part %d (source tree %s, rerun tree %s)\n", d.Part, orNone(d.Source), orNone(d.Rerun))
	} else {
		fmt.Fprintln(w, "  first checkpoint: none differs")
	}
	if d := r.FirstRequest; d != nil {
		fmt.Fprintf(w, "  first request: %s call %d of model %q (source seq %d, rerun seq %d): %s\n", d.Path, d.Call, d.Model, d.SourceSeq, d.RerunSeq, d.Why)
	} else {
		fmt.Fprintln(w, "  first request: none differs")
	}
	fmt.Fprintf(w, "  ends:         source %s, rerun %s\n", orNone(r.SourceEnd), orNone(r.RerunEnd))
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
