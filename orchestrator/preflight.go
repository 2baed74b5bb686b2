package orchestrator

import (
	"github.com/trajlab/traj/orchestrator/task"
	"github.com/trajlab/traj/sandbox/opencode"
	"github.com/trajlab/traj/sandbox/scripted"
)

// preflight checks, before anything is written, what would otherwise fail
// only after the trajectory folder exists: the test environment and its
// fixtures, the OpenCode binary, the model script. A bad flag then leaves
// no half-made trajectory behind.
func preflight(opts Options, tk *task.Task) error {
	if _, err := openEnvironment(tk, opts.TestsDir); err != nil {
		return err
	}
	if _, err := opencode.ResolveBinary(opts.OpenCodeBin); err != nil {
		return err
	}
	if opts.Script != "" {
		if _, err := scripted.Load(opts.Script); err != nil {
			return err
		}
	}
	return nil
}
