package harbor

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// OracleScript is the oracle as a scripted model (sandbox/scripted's
// JSON Lines, OpenCode's tool names): one response running
// solution/solve.sh's text as a bash call in the workdir, then "Done.".
// `traj run --task DIR --model scripted/oracle --script FILE` with it is
// the oracle's trajectory through a real harness, checkpoints and
// ground truth included.
func (t *Task) OracleScript(workdir string) ([]byte, error) {
	if !t.HasSolution {
		return nil, fmt.Errorf("oracle of %s: no %s", t.Name, SolutionScript)
	}
	solve, err := os.ReadFile(filepath.Join(t.Dir, filepath.FromSlash(SolutionScript)))
	if err != nil {
		return nil, fmt.Errorf("oracle of %s: %w", t.Name, err)
	}
	lines := []map[string]any{
		{"text": "Running the task's reference solution.", "tools": []map[string]any{{"name": "bash",
			"args": map[string]any{"command": string(solve), "workdir": workdir, "description": "solution/solve.sh",
				"timeout": t.AgentTimeout.Milliseconds()}}}},
		{"text": "Done."},
	}
	out := []byte("# The oracle of Harbor task " + t.Name + ": solution/solve.sh as one bash call.\n")
	for _, l := range lines {
		b, err := json.Marshal(l)
		if err != nil {
			return nil, fmt.Errorf("oracle of %s: %w", t.Name, err)
		}
		out = append(append(out, b...), '\n')
	}
	return out, nil
}
