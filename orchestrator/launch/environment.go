package launch

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/trajlab/traj/environment"
	"github.com/trajlab/traj/environment/evaluation/registry"
	"github.com/trajlab/traj/orchestrator/task"
)

// OpenEnvironment returns the test environment a task names, from envs
// (registry.Builtin), opened on the task's folder (a Harbor task's image
// is built, or found by digest, now: a task that cannot build fails the
// run before anything exists), and checks that it knows every required
// test path.
func OpenEnvironment(ctx context.Context, envs registry.Environments, tk *task.Task, testsDir string) (environment.Environment, error) {
	if _, err := envs.Lookup(tk.Environment); err != nil {
		return nil, fmt.Errorf("task %s: %w", tk.Name, err)
	}
	env, err := envs.Open(ctx, tk.Environment, registry.Config{TestsDir: testsDir, TaskDir: tk.Folder()})
	if err != nil {
		return nil, err
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
