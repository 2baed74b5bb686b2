package experiment

import (
	"context"
	"errors"
	"fmt"
	"github.com/trajlab/traj/trace"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/trajlab/traj/orchestrator/folder"
	"github.com/trajlab/traj/sandbox/disk"
	"github.com/trajlab/traj/trace/store"
)

// A sandbox folder (workspace copy, harness state, possibly checkpoint git
// data) may be removed only when nothing in it is still the record:
//
//   - run.json says the trajectory is finished (the recorder closed it:
//     final checkpoint, session_end, repo.bundle);
//   - the store's trace has a session_end (trace.Summarize says so);
//   - the store holds repo.bundle, which carries every checkpoint;
//   - no live process records it.
//
// Anything else is kept and reported: a dead run that is not finalized
// must be resumed or finalized first (traj run --resume, traj trace
// finalize), since its newest checkpoints may exist only in the sandbox.

// ErrNotFinalized: the trajectory's record is not complete, so its sandbox
// may hold history the store does not.
var ErrNotFinalized = errors.New("not finalized")

// RemoveSandbox removes trajectory id's sandbox folder when the trajectory
// is finalized. It reports whether something was removed; a missing
// sandbox is not an error.
func RemoveSandbox(ctx context.Context, w *Where, id string) (bool, error) {
	dir, err := sandboxOf(w, id)
	if err != nil {
		return false, err
	}
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err := checkFinalized(ctx, w, id); err != nil {
		return false, err
	}
	// A recorder killed with SIGKILL leaves its sandbox mounted (a disk
	// cap); removing the folder under the mount would fail half-way.
	if err := disk.UnmountUnder(dir); err != nil {
		return false, fmt.Errorf("remove sandbox of %s: %w", id, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return false, fmt.Errorf("remove sandbox of %s: %w", id, err)
	}
	return true, nil
}

// sandboxOf is trajectory id's sandbox folder: the one run.json records,
// else <work>/sandboxes/<id>. A recorded folder that does not name the
// trajectory is refused (never remove a folder run.json merely points at).
func sandboxOf(w *Where, id string) (string, error) {
	def := filepath.Join(w.WorkDir, folder.SandboxesDir, id)
	rs, err := folder.ReadRunState(filepath.Join(w.TrajectoryDir(id), store.RunStateName))
	if errors.Is(err, fs.ErrNotExist) {
		return def, nil
	}
	if err != nil {
		return "", fmt.Errorf("sandbox of %s: %w", id, err)
	}
	if rs.SandboxDir == "" {
		return def, nil
	}
	if !slices.Contains(strings.Split(filepath.ToSlash(filepath.Clean(rs.SandboxDir)), "/"), id) {
		return "", fmt.Errorf("sandbox of %s: run.json names %s, which is not a folder of this trajectory", id, rs.SandboxDir)
	}
	return rs.SandboxDir, nil
}

func checkFinalized(ctx context.Context, w *Where, id string) error {
	a, err := inspectAttempt(ctx, w, id)
	if err != nil {
		return err
	}
	switch {
	case a.Running:
		return fmt.Errorf("sandbox of %s: %w: still being recorded (pid %d)", id, ErrNotFinalized, a.RunState.PID)
	case a.RunState == nil:
		return fmt.Errorf("sandbox of %s: %w: no run.json in %s", id, ErrNotFinalized, w.TrajectoryDir(id))
	case a.RunState.Status != "finished":
		return fmt.Errorf("sandbox of %s: %w: the run died (traj run --resume %s, or traj trace finalize %s)", id, ErrNotFinalized, trace.ShellWord(id), trace.ShellWord(id))
	case a.Reason == "":
		return fmt.Errorf("sandbox of %s: %w: the store's trace has no session_end (traj sync %s)", id, ErrNotFinalized, id)
	}
	if _, err := w.Store.Stat(ctx, store.BundleKey(id)); err != nil {
		return fmt.Errorf("sandbox of %s: %w: repo.bundle not in the store (traj sync %s): %v", id, ErrNotFinalized, id, err)
	}
	return nil
}

// GCResult is what one gc found for one sandbox folder.
type GCResult struct {
	ID      string
	Dir     string
	Removed bool
	Bytes   int64
	// Kept says why a sandbox stays (empty when removed).
	Kept string
}

// GC removes the sandbox folders under the work folder whose trajectories
// are finalized (see RemoveSandbox); dryRun only reports.
func GC(ctx context.Context, w *Where, dryRun bool) ([]GCResult, error) {
	root := filepath.Join(w.WorkDir, folder.SandboxesDir)
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	var out []GCResult
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		id := e.Name()
		r := GCResult{ID: id, Dir: filepath.Join(root, id), Bytes: du(filepath.Join(root, id))}
		if err := store.ValidateID(id); err != nil {
			r.Kept = "not a trajectory id"
		} else if err := checkFinalized(ctx, w, id); err != nil {
			r.Kept = err.Error()
		} else if !dryRun {
			if err := os.RemoveAll(r.Dir); err != nil {
				r.Kept = err.Error()
			} else {
				r.Removed = true
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// du sums the sizes of the regular files under dir.
func du(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
