package environment

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// GroupCount is the pass count of one group of cases: the first two name
// segments for basics and wacct (basics/smoke, wacct/chapter_1), the suite
// name otherwise.
type GroupCount struct {
	Group                 string
	Passed, Failed, Total int
}

// Groups counts a result's cases by group, in case order.
func Groups(r Result) []GroupCount {
	var out []GroupCount
	idx := map[string]int{}
	for _, c := range r.Cases {
		g := groupOf(c.Name)
		i, ok := idx[g]
		if !ok {
			i = len(out)
			idx[g] = i
			out = append(out, GroupCount{Group: g})
		}
		out[i].Total++
		if c.Passed {
			out[i].Passed++
		} else {
			out[i].Failed++
		}
	}
	return out
}

func groupOf(name string) string {
	parts := strings.SplitN(name, "/", 3)
	if len(parts) == 3 && (parts[0] == "basics" || parts[0] == "wacct") {
		return parts[0] + "/" + parts[1]
	}
	return parts[0]
}

// WriteSummary prints the build outcome, a table of groups and the failed
// cases (at most maxFailed of them; 0 means all) for a terminal.
func WriteSummary(w io.Writer, r Result, maxFailed int) error {
	b := r.Build
	if b.OK {
		fmt.Fprintf(w, "build: ok (%d ms)\n", b.DurationMS)
	} else {
		fmt.Fprintf(w, "build: FAILED (exit %d): %s\n", b.ExitCode, b.Error)
		if b.StderrTail != "" {
			fmt.Fprintf(w, "%s\n", indent(b.StderrTail))
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tPASSED\tFAILED\tTOTAL\t")
	for _, g := range Groups(r) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t\n", g.Group, g.Passed, g.Failed, g.Total)
	}
	fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t\n", "total", r.Passed, r.Failed, r.Total)
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	if !b.OK || r.Failed == 0 {
		_, err := fmt.Fprintf(w, "%s: %d/%d passed in %d ms\n", r.Path, r.Passed, r.Total, r.DurationMS)
		return err
	}
	fmt.Fprintln(w, "failed:")
	shown := 0
	for _, c := range r.Cases {
		if c.Passed {
			continue
		}
		if maxFailed > 0 && shown == maxFailed {
			fmt.Fprintf(w, "  … and %d more (use --json for all)\n", r.Failed-shown)
			break
		}
		shown++
		fmt.Fprintf(w, "  %s [%s] %s\n", c.Name, c.Phase, c.Error)
	}
	_, err := fmt.Fprintf(w, "%s: %d/%d passed in %d ms\n", r.Path, r.Passed, r.Total, r.DurationMS)
	return err
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}
