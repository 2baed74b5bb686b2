package orchestrator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/trajlab/traj/trace/gitstate"
)

// writeIncrementalBundle writes at path the bundle extending a reader that
// holds commit since ("" = nothing: a full bundle) to the current refs.
func writeIncrementalBundle(ctx context.Context, repo *gitstate.Repo, path, since string) error {
	return writeFileWith(path, func(f *os.File) error {
		_, err := repo.WriteHistoryBundle(ctx, f, plumbing.NewHash(since))
		return err
	})
}

// writeFullBundle writes a git bundle of all refs at path.
func writeFullBundle(ctx context.Context, repo *gitstate.Repo, path string) error {
	return writeFileWith(path, func(f *os.File) error {
		_, err := repo.WriteBundle(ctx, f, gitstate.BundleOptions{})
		return err
	})
}

// writeFileWith writes a file through a temp file and rename, so a reader
// (or an upload) never sees half of it.
func writeFileWith(path string, write func(*os.File) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	err = write(tmp)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
