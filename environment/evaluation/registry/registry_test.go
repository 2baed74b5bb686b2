package registry_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/trajlab/traj/environment/ccompiler"
	"github.com/trajlab/traj/environment/evaluation/registry"
)

func TestRegistryLookup(t *testing.T) {
	envs := registry.Builtin()
	for _, tc := range []struct {
		name, want, err string
	}{
		{name: ccompiler.Name, want: ccompiler.Name},
		// A trace or task that names none: the first entry.
		{name: "", want: ccompiler.Name},
		{name: "harbor-nope", err: `unknown environment "harbor-nope" (known: c-compiler, harbor)`},
		// Names are matched exactly: no prefix or case folding picks an
		// environment the trace did not name.
		{name: "C-Compiler", err: "unknown environment"},
		{name: "c-compiler ", err: "unknown environment"},
	} {
		e, err := envs.Lookup(tc.name)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Lookup(%q) = %v, want error containing %q", tc.name, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("Lookup(%q): %v", tc.name, err)
		case tc.err == "" && e.Name != tc.want:
			t.Errorf("Lookup(%q) = %q, want %q", tc.name, e.Name, tc.want)
		}
	}
}

func TestRegistryOpen(t *testing.T) {
	env, err := registry.Builtin().Open(t.Context(), ccompiler.Name, registry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(env.TestPaths(), "basics") {
		t.Errorf("c-compiler without fixtures: test paths %v lack basics", env.TestPaths())
	}
	if _, err := registry.Builtin().Open(t.Context(), ccompiler.Name, registry.Config{TestsDir: "/nonexistent/fixtures"}); err == nil {
		t.Error("a fixtures root that does not exist opened")
	} else if !strings.HasPrefix(err.Error(), "open environment c-compiler: ") {
		t.Errorf("error %q does not name the operation", err)
	}
	// Harbor's environment is its task folder: none given is an error
	// naming the operation and what is missing, never a default task.
	if _, err := registry.Builtin().Open(t.Context(), "harbor", registry.Config{}); err == nil || !strings.Contains(err.Error(), "open environment harbor: ") || !strings.Contains(err.Error(), "task folder") {
		t.Errorf("harbor without a task folder: %v", err)
	}
	var zero registry.Environments
	if _, err := zero.Open(t.Context(), "", registry.Config{}); err == nil {
		t.Error("an empty registry opened an environment")
	}
}
