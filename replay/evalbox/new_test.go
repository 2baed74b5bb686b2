package evalbox_test

import (
	"context"
	"errors"
	"testing"

	"github.com/trajlab/traj/environment/ccompiler"
	"github.com/trajlab/traj/environment/evaluation"
	"github.com/trajlab/traj/replay/evalbox"
	"github.com/trajlab/traj/sandbox"
)

// New is the one constructor: it refuses a provider that cannot deny
// the C compiler (what a trace's task asked for) and an artifact list
// that escapes the tree, and keys results by the environment's version
// with the task's settings and the provider marked on it.
func TestNew(t *testing.T) {
	env, err := ccompiler.New(ccompiler.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		settings evaluation.Settings
		provider string
		version  string
		refused  bool
	}{
		{"plain local", evaluation.Settings{}, sandbox.ProviderLocal, env.Version() + "+sandbox=local", false},
		{"deny on bwrap", evaluation.Settings{Artifacts: []string{"cc"}, DenyCCompiler: true}, sandbox.ProviderBwrap,
			env.Version() + "+artifacts=cc+deny-c-compiler+sandbox=bwrap", false},
		{"deny on local", evaluation.Settings{DenyCCompiler: true}, sandbox.ProviderLocal, "", true},
		{"artifact outside the tree", evaluation.Settings{Artifacts: []string{"../cc"}}, sandbox.ProviderBwrap, "", false},
	} {
		ev, err := evalbox.New(ctx, evalbox.Config{Env: env, Settings: tc.settings, Provider: tc.provider})
		switch {
		case tc.version == "" && err == nil:
			t.Errorf("%s: built an evaluator", tc.name)
		case tc.version == "" && errors.Is(err, evalbox.ErrProvider) != tc.refused:
			t.Errorf("%s: %v, provider refused: %v, want %v", tc.name, err, errors.Is(err, evalbox.ErrProvider), tc.refused)
		case tc.version != "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.version != "" && ev.Version() != tc.version:
			t.Errorf("%s: version %q, want %q", tc.name, ev.Version(), tc.version)
		}
	}
}
