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

// PrintNext says what to do after a run that can go on or whose uploads
// are pending; ref names the trajectory for those commands.
func PrintNext(w io.Writer, res *orchestrator.Result, ref string) {
	switch res.End.Reason {
	case trace.EndInterrupted, trace.EndTimeout, trace.EndPartLimit, trace.EndAgentError:
		fmt.Fprintf(w, "  continue:      traj run --resume %s", ref)
		if res.End.Reason == trace.EndPartLimit {
			fmt.Fprint(w, " --max-parts N (a larger budget)")
		}
		fmt.Fprintln(w)
	}
	if len(res.NotUploaded) > 0 {
		fmt.Fprintf(w, "  upload later:  traj sync %s\n", ref)
	}
}
