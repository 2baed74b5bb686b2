package task

import (
	"fmt"

	"github.com/trajlab/traj/environment/harbor"
)

// loadHarbor reads a Harbor task folder (task.toml, instruction.md,
// environment/, tests/, solution/) as a task: its prompt is
// instruction.md as written, its one test path the task's name, scored
// by ground truth in the verifier's room; the agent gets no run_tests
// and a continuation prompt names no test (a Harbor task's tests are
// hidden from it); the defaults of traj's own tasks hold otherwise.
func loadHarbor(dir string) (*Task, error) {
	ht, err := harbor.Load(dir)
	if err != nil {
		return nil, err
	}
	off := false
	t := &Task{Name: ht.Name, Description: "Harbor task " + ht.Name, Environment: harbor.Name,
		TestPaths: []string{ht.Name}, RunTests: &off, Source: ht.Dir, Storage: ht.Environment.Storage, instruction: ht.Instruction,
		// The tests are hidden: a continuation prompt gives counts, not
		// their names.
		GroundTruth: GroundTruthSettings{FailingTests: -1}}
	if err := t.validate(); err != nil {
		return nil, fmt.Errorf("load task %s: %w", ht.Dir, err)
	}
	return t, nil
}
