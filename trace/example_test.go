package trace_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/trajlab/traj/trace"
)

// Example records a one-turn trace part by part, then reads it back.
func Example() {
	dir, _ := os.MkdirTemp("", "traj-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "agent_trace.json")

	w, err := trace.Create(path, trace.Header{
		TrajectoryID: "traj-example", SessionID: "ses_1", Agent: "opencode",
		AgentModel: "scripted/demo", StartedAt: "2026-11-01T12:00:00.000000Z",
	}, trace.WriterOptions{Sync: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Close()
	w.BeginTurn(trace.TurnStart{Timestamp: "2026-11-01T12:00:01.000000Z", Prompt: "Build a C compiler."})
	for n := 1; n <= 3; n++ {
		// After AppendPart returns, agent_trace.json is complete and holds part n.
		if err := w.AppendPart(&trace.Part{Part: n, PartType: "text", GitCommit: fmt.Sprintf("c%d", n)}); err != nil {
			fmt.Println(err)
			return
		}
	}
	w.Finish(trace.SessionEnd{Reason: trace.EndPartLimit}, nil)

	f, _ := os.Open(path)
	defer f.Close()
	tr, err := trace.Read(f)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(tr.TrajectoryID, len(tr.Turns), "turn,", tr.SessionEnd.TotalParts, "parts, ended by", tr.SessionEnd.Reason, "at", tr.SessionEnd.FinalGitCommit)
	// Output: traj-example 1 turn, 3 parts, ended by part_limit at c3
}
