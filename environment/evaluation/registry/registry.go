// Package registry is the one list of test environments traj can score
// trees with (c-compiler and harbor; registering one is one Entry in
// Builtin): what a task's `environment` and a trace's
// `environment.name` pick. An Environments value is built by Builtin in
// one place (cmd's Globals, else the run's and the evaluate handler's
// default) and passed down; nothing above environment/ opens an
// environment or compares its name (orchestrator/task reads a Harbor
// task folder's files with harbor.Load; the run asks an environment for
// its agent's room by environment.Roomed). It is apart from
// environment/evaluation so that what only reads results (replay's
// report, export, view) links no environment.
package registry

import (
	"context"
	"fmt"
	"strings"

	"github.com/trajlab/traj/environment"
	"github.com/trajlab/traj/environment/ccompiler"
	"github.com/trajlab/traj/environment/harbor"
)

// Config is what opening an environment may need.
type Config struct {
	// TestsDir is the fixtures root of the public suites (--tests-dir,
	// TRAJ_TESTS_DIR); "" gives an environment's built-in suites only.
	TestsDir string
	// TaskDir is the folder the task was read from ("" for a built-in
	// task): a Harbor task's environment is its folder (task.toml,
	// environment/, tests/); the C compiler's ignores it.
	TaskDir string
}

// Entry is one test environment traj can score trees with.
type Entry struct {
	// Name is the environment's name in a task (`environment`) and in a
	// trace (`environment.name`).
	Name string
	// Open returns the environment (on the host: its cases and
	// expectations never enter a sandbox).
	Open func(context.Context, Config) (environment.Environment, error)
}

// Environments is a list of environments: what a task's or a trace's
// environment name picks.
type Environments struct{ entries []Entry }

// Builtin is the one list of environments, the first the default of a
// trace that names none (traces older than the environment field were all
// scored by the C-compiler environment). Registering one is one entry
// here.
func Builtin() Environments {
	return Environments{entries: []Entry{
		{Name: ccompiler.Name, Open: func(_ context.Context, c Config) (environment.Environment, error) {
			return ccompiler.New(ccompiler.Config{TestsDir: c.TestsDir})
		}},
		// A Harbor task folder: its image built (or found by digest) now,
		// its trees scored in a fresh verifier room each.
		{Name: harbor.Name, Open: func(ctx context.Context, c Config) (environment.Environment, error) {
			return harbor.OpenFolder(ctx, c.TaskDir, harbor.Options{})
		}},
	}}
}

// Names lists the registered environments, in order.
func (r Environments) Names() []string {
	out := make([]string, len(r.entries))
	for i, e := range r.entries {
		out[i] = e.Name
	}
	return out
}

// Lookup returns the environment called name ("" names the default).
func (r Environments) Lookup(name string) (Entry, error) {
	if name == "" && len(r.entries) > 0 {
		return r.entries[0], nil
	}
	for _, e := range r.entries {
		if e.Name == name {
			return e, nil
		}
	}
	return Entry{}, fmt.Errorf("unknown environment %q (known: %s)", name, strings.Join(r.Names(), ", "))
}

// Open opens the environment called name ("" names the default).
func (r Environments) Open(ctx context.Context, name string, c Config) (environment.Environment, error) {
	e, err := r.Lookup(name)
	if err != nil {
		return nil, err
	}
	env, err := e.Open(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("open environment %s: %w", e.Name, err)
	}
	return env, nil
}
