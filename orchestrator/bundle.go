package orchestrator

import (
	"context"
	"errors"

	"github.com/trajlab/traj/trace/gitstate"
)

// writeIncrementalBundle writes a git bundle at path holding the commits
// after from (all history when from is "") up to to.
func writeIncrementalBundle(ctx context.Context, repo *gitstate.Repo, path, from, to string) error {
	return errors.New("bundles not wired yet")
}

// writeFullBundle writes a git bundle of all refs at path.
func writeFullBundle(ctx context.Context, repo *gitstate.Repo, path string) error {
	return errors.New("bundles not wired yet")
}
