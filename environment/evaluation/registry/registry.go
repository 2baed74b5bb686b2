// Package registry is the one list of test environments traj can score
// trees with (c-compiler today; registering one is one Entry in
// Builtin): what a task's `environment` and a trace's
// `environment.name` pick. An Environments value is built by Builtin in
// one place (cmd's Globals, else the run's and the evaluate handler's
// default) and passed down; nothing above environment/ imports an
// environment or compares its name. It is apart from
// environment/evaluation so that what only reads results (replay's
// report, export, view) links no environment.
package registry

import (
	"fmt"
	"strings"

	"github.com/trajlab/traj/environment"
	"github.com/trajlab/traj/environment/ccompiler"
)

// Config is what opening an environment may need.
type Config struct {
	// TestsDir is the fixtures root of the public suites (--tests-dir,
	// TRAJ_TESTS_DIR); "" gives an environment's built-in suites only.
	TestsDir string
}

// Entry is one test environment traj can score trees with.
type Entry struct {
	// Name is the environment's name in a task (`environment`) and in a
	// trace (`environment.name`).
	Name string
	// Open returns the environment (on the host: its cases and
	// expectations never enter a sandbox).
	Open func(Config) (environment.Environment, error)
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
		{Name: ccompiler.Name, Open: func(c Config) (environment.Environment, error) {
			return ccompiler.New(ccompiler.Config{TestsDir: c.TestsDir})
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
func (r Environments) Open(name string, c Config) (environment.Environment, error) {
	e, err := r.Lookup(name)
	if err != nil {
		return nil, err
	}
	env, err := e.Open(c)
	if err != nil {
		return nil, fmt.Errorf("open environment %s: %w", e.Name, err)
	}
	return env, nil
}
