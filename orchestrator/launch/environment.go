package launch

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/trajlab/traj/environment"
	"github.com/trajlab/traj/environment/ccompiler"
	"github.com/trajlab/traj/environment/harbor"
	"github.com/trajlab/traj/orchestrator/task"
)

// OpenEnvironment returns the test environment a task names and checks
// that it knows every required test path.
func OpenEnvironment(tk *task.Task, testsDir string) (environment.Environment, error) {
	var env environment.Environment
	switch tk.Environment {
	case "c-compiler":
		e, err := ccompiler.New(ccompiler.Config{TestsDir: testsDir})
		if err != nil {
			return nil, fmt.Errorf("open environment %s: %w", tk.Environment, err)
		}
		env = e
	case "harbor":
		e, err := openHarbor(tk)
		if err != nil {
			return nil, err
		}
		env = e
	default:
		return nil, fmt.Errorf("task %s: unknown environment %q (known: c-compiler, harbor)", tk.Name, tk.Environment)
	}
	known := env.TestPaths()
	var missing []string
	for _, p := range tk.TestPaths {
		if !slices.Contains(known, p) {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("task %s: environment %s does not provide test paths %s (are the fixtures in --tests-dir / TRAJ_TESTS_DIR?)",
			tk.Name, tk.Environment, strings.Join(missing, ", "))
	}
	return env, nil
}

// openHarbor opens a Harbor task folder's environment: its image is
// built (or found) now, so a run fails before anything exists when the
// task cannot build offline.
func openHarbor(tk *task.Task) (environment.Environment, error) {
	if tk.Harbor == nil {
		return nil, fmt.Errorf("task %s: environment harbor needs a Harbor task folder", tk.Name)
	}
	e, err := harbor.Open(context.Background(), tk.Harbor, harbor.Options{})
	if err != nil {
		return nil, err
	}
	return e, nil
}
