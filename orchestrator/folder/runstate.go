package folder

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/trajlab/traj/trace/store"

	"github.com/trajlab/traj/sandbox/agent"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/atomicfile"
)

// RunState is run.json: what a later command (resume, finalize, sync)
// needs to find and continue a trajectory. It holds no secrets.
type RunState struct {
	TrajectoryID string `json:"trajectory_id"`
	Task         string `json:"task"`
	TaskSource   string `json:"task_source"`
	Model        string `json:"model"`
	MaxParts     int    `json:"max_parts"`
	TimeoutSec   int64  `json:"timeout_seconds"`
	Store        string `json:"store"`
	Workspace    string `json:"workspace"`
	SandboxDir   string `json:"sandbox_dir"`
	// Checkpoints is the git directory of the checkpoint history, outside
	// the workspace (<sandbox_dir>/checkpoints.git when empty).
	Checkpoints string `json:"checkpoints,omitempty"`
	SessionID   string `json:"session_id,omitempty"`
	// The run options `traj run --resume` reuses when not given again
	// (API keys by variable name only).
	Script     string   `json:"script,omitempty"`
	BaseURL    string   `json:"base_url,omitempty"`
	APIKeyEnvs []string `json:"api_key_envs,omitempty"`
	HarnessBin string   `json:"harness_bin,omitempty"`
	// Playback is the source's model-call record of a rerun (traj replay
	// rerun), which answered its model calls; a rerun is not resumed.
	Playback string `json:"playback,omitempty"`
	TestsDir string `json:"tests_dir,omitempty"`
	// Sandbox is the sandbox the run asked for, as launch.SandboxOptions
	// encodes it: the folder keeps it whole without knowing how a run is
	// launched (resume decodes it).
	Sandbox   json.RawMessage `json:"sandbox,omitempty"`
	StartedAt string          `json:"started_at"`
	// Agent is the harness (--agent); "" in run.json of older runs means
	// opencode. The budgets and price are the model gateway's.
	Agent     string       `json:"agent,omitempty"`
	MaxTokens int64        `json:"max_tokens,omitempty"`
	MaxCost   float64      `json:"max_cost,omitempty"`
	Price     *agent.Price `json:"price,omitempty"`
	// Status is "running" until the trajectory is finished, then
	// "finished"; "stopped" when recording stopped on Error before the
	// trace was closed (finalize it).
	Status  string `json:"status"`
	PID     int    `json:"pid,omitempty"`
	EndedAt string `json:"ended_at,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Error   string `json:"error,omitempty"`
}

// Finished marks the trajectory finished with end.
func (s *RunState) Finished(end trace.SessionEnd) {
	s.Status, s.EndedAt, s.Reason, s.PID, s.Error = "finished", end.EndedAt, end.Reason, 0, ""
}

// Stopped marks a trajectory whose recording stopped on err before its
// trace was closed: `traj trace finalize` closes it.
func (s *RunState) Stopped(end trace.SessionEnd, err error) {
	s.Status, s.EndedAt, s.Reason, s.PID, s.Error = "stopped", end.EndedAt, end.Reason, 0, err.Error()
}

// WriteRunState writes run.json into the trajectory folder dir.
func WriteRunState(dir string, st RunState) error {
	raw, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encode run state: %w", err)
	}
	return atomicfile.WriteBytes(filepath.Join(dir, store.RunStateName), append(raw, '\n'))
}

// ReadRunState is the one reader of run.json: the file at path (a
// trajectory folder's, or a copy fetched from the store's logs). Its
// error policy, the same for every caller: no file is an error wrapping
// fs.ErrNotExist, which a caller may take as "no run state" (a trajectory
// that died before writing it, a store without one); a file that cannot
// be read or decoded is an error naming the file, never taken as absent
// nor as defaults, since run.json decides what a later command runs and
// removes.
func ReadRunState(path string) (RunState, error) {
	var st RunState
	raw, err := os.ReadFile(path)
	if err != nil {
		return st, fmt.Errorf("read run state: %w", err)
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return RunState{}, fmt.Errorf("read run state %s: %w", path, err)
	}
	return st, nil
}
