package launch

import (
	"strings"
	"testing"

	"github.com/trajlab/traj/environment/evaluation/registry"
	"github.com/trajlab/traj/orchestrator/task"
)

// A task's environment name picks the registry's entry; a name the
// registry lacks, or a required test path the environment lacks, stops
// the run before anything exists, naming the task.
func TestOpenEnvironment(t *testing.T) {
	envs := registry.Builtin()
	for _, tc := range []struct {
		name string
		tk   task.Task
		err  string
	}{
		{"c-compiler", task.Task{Name: "t", Environment: "c-compiler", TestPaths: []string{"basics/smoke"}}, ""},
		{"unknown", task.Task{Name: "t", Environment: "harbor-nope", TestPaths: []string{"basics"}},
			`task t: unknown environment "harbor-nope" (known: c-compiler, harbor)`},
		{"missing path", task.Task{Name: "t", Environment: "c-compiler", TestPaths: []string{"basics", "no_such_suite"}},
			"task t: environment c-compiler does not provide test paths no_such_suite"},
	} {
		env, err := OpenEnvironment(t.Context(), envs, &tc.tk, "")
		switch {
		case tc.err == "" && (err != nil || env == nil):
			t.Errorf("%s: %v", tc.name, err)
		case tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err)):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
		}
	}
	if _, err := OpenEnvironment(t.Context(), registry.Environments{}, &task.Task{Name: "t", Environment: "c-compiler"}, ""); err == nil {
		t.Error("an empty registry opened c-compiler: the environment is not the registry's")
	}
}
