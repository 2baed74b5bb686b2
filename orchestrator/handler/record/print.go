package record

import (
	"fmt"
	"io"
	"strings"

	"github.com/trajlab/traj/orchestrator"
	"github.com/trajlab/traj/trace"
)

// PrintSummary writes a recorded trajectory's end for a reader: end
// reason, parts and turns, folder, final commit, tokens and cost, the
// uploaded trace and bundle, what is not uploaded.
func PrintSummary(w io.Writer, res *orchestrator.Result) {
	e := res.End
	fmt.Fprintf(w, "trajectory %s: %s after %d parts in %d turns", res.TrajectoryID, e.Reason, e.TotalParts, e.TotalTurns)
	if e.Detail != "" {
		fmt.Fprintf(w, " (%s)", e.Detail)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  folder:        %s\n", res.Dir)
	fmt.Fprintf(w, "  final commit:  %s\n", e.FinalGitCommit)
	if e.Tokens != nil {
		fmt.Fprintf(w, "  tokens:        %d", e.Tokens.Total())
		if e.Cost != nil && *e.Cost > 0 {
			fmt.Fprintf(w, " (cost %.4f)", *e.Cost)
		}
		fmt.Fprintln(w)
	}
	for _, k := range []string{trace.ArtifactTrace, trace.ArtifactBundle} {
		if u := res.Artifacts[k]; u != "" {
			fmt.Fprintf(w, "  %-14s %s\n", k+":", u)
		}
	}
	if len(res.NotUploaded) > 0 {
		fmt.Fprintf(w, "  not uploaded:  %s\n", strings.Join(res.NotUploaded, ", "))
	}
}
