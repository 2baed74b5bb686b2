package folder

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/trajlab/traj/sandbox/xec"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/location"
	"github.com/trajlab/traj/trace/store/ref"
)

// ErrStillRunning is returned when a command that continues or closes a
// trajectory finds its recording process still alive.
var ErrStillRunning = errors.New("trajectory is still being recorded")

// LocateOptions name a trajectory recorded earlier on this machine, the
// way `traj run` was given them.
type LocateOptions struct {
	// ID is the trajectory id.
	ID string
	// Store is the store URL; "" means the one run.json recorded, else
	// TRAJ_STORE, else the default.
	Store string
	// StoreImpl, when set, is used instead of opening a store (tests).
	StoreImpl store.Store
	// WorkDir holds trajectories/<id>; default: Store's folder when it is
	// local, else ./runs (as for `traj run`).
	WorkDir string
	Logger  *slog.Logger
}

// Located is a trajectory's local folder, its run state and its store.
type Located struct {
	ID string
	// Dir is the trajectory folder, WorkDir the folder above trajectories/.
	Dir, WorkDir string
	State        RunState
	Store        store.Store
	StoreURL     string
	// InPlace: the trajectory folder is the store's own folder for the
	// trajectory, so nothing needs uploading.
	InPlace bool
}

// TracePath is the local agent_trace.json.
func (l *Located) TracePath() string { return filepath.Join(l.Dir, store.TraceName) }

// Locate finds trajectory opts.ID's folder and run.json and opens its store.
func Locate(ctx context.Context, opts LocateOptions) (*Located, error) {
	if err := store.ValidateID(opts.ID); err != nil {
		return nil, err
	}
	work := opts.WorkDir
	flagStore := location.Choose(opts.Store, os.Getenv)
	if work == "" {
		work = location.Default
		if location.Scheme(flagStore) == "" {
			work = flagStore
		} else if location.Scheme(flagStore) == "file" {
			if p, err := location.FilePath(flagStore); err == nil {
				work = p
			}
		}
	}
	abs, err := filepath.Abs(work)
	if err != nil {
		return nil, fmt.Errorf("work dir %q: %w", work, err)
	}
	l := &Located{ID: opts.ID, WorkDir: abs, Dir: filepath.Join(abs, filepath.FromSlash(store.TrajectoryPrefix(opts.ID)))}
	l.State, err = ReadRunState(filepath.Join(l.Dir, store.RunStateName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("trajectory %s: no %s in %s (give --work-dir, or --store as for traj run)", opts.ID, store.RunStateName, l.Dir)
	}
	if err != nil {
		return nil, err
	}
	if l.State.TrajectoryID != opts.ID {
		return nil, fmt.Errorf("run state %s names trajectory %q, not %q", filepath.Join(l.Dir, store.RunStateName), l.State.TrajectoryID, opts.ID)
	}
	l.StoreURL = opts.Store
	if l.StoreURL == "" {
		l.StoreURL = l.State.Store
	}
	if l.StoreURL == "" {
		l.StoreURL = flagStore
	}
	if opts.StoreImpl != nil {
		l.Store = opts.StoreImpl
	} else {
		st, err := location.Open(ctx, l.StoreURL, location.Options{Logger: opts.Logger})
		if err != nil {
			return nil, err
		}
		l.Store = st
	}
	l.InPlace = InPlace(l.Store, l.ID, l.TracePath())
	return l, nil
}

// InPlace reports whether st keeps trajectory id's trace at tracePath: the
// trajectory folder is then the store's own folder for it.
func InPlace(st store.Store, id, tracePath string) bool {
	lp, ok := store.AsLocal(st)
	if !ok {
		return false
	}
	p, err := lp.LocalPath(store.TraceKey(id))
	return err == nil && filepath.Clean(p) == tracePath
}

// Running reports whether the process that recorded the trajectory is
// still alive (run.json says running and its pid is a live traj process).
func (l *Located) Running() bool {
	return l.State.Status == "running" && processAlive(l.State.PID)
}

// CheckNotRunning refuses to touch a trajectory another process records.
func (l *Located) CheckNotRunning() error {
	if l.Running() {
		return fmt.Errorf("trajectory %s: %w by process %d (stop it first, or wait)", l.ID, ErrStillRunning, l.State.PID)
	}
	return nil
}

// processAlive reports whether pid is a live process that looks like traj
// (a pid reused by an unrelated program after a crash does not count).
func processAlive(pid int) bool {
	if pid <= 0 || pid == os.Getpid() {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	cmdline, ok := xec.Cmdline(pid)
	if !ok {
		return true // cannot tell: assume it is
	}
	// A zombie (killed, not yet reaped by its parent) is not running.
	if m, ok := xec.ReadStat(pid); ok && m.State == 'Z' {
		return false
	}
	return strings.Contains(cmdline, "traj")
}

// SplitRef splits a reference to a trajectory recorded on this machine
// into its id and work dir: a folder <work>/trajectories/<id> (or its
// agent_trace.json) gives both; anything else is an id, with workDir as
// given. These commands change the trajectory's own folder, so an s3://
// URL is refused. A folder counts when it holds run.json or is a
// trajectory folder (ref.IsTrajectoryFolder).
func SplitRef(r, workDir string) (id, work string, err error) {
	switch location.Scheme(r) {
	case "":
	case "file":
		if r, err = location.FilePath(r); err != nil {
			return "", "", err
		}
	default:
		return "", "", fmt.Errorf("trajectory %q: this command works on the trajectory's folder on this machine (where traj run recorded it); give its id or folder", r)
	}
	dir := r
	if filepath.Base(r) == store.TraceName {
		dir = filepath.Dir(r)
	}
	fi, statErr := os.Stat(dir)
	isPath := strings.ContainsAny(r, `/\`) || strings.HasSuffix(r, ".json")
	if statErr != nil || !fi.IsDir() {
		if isPath {
			if err := store.ValidateID(r); err != nil {
				return "", "", fmt.Errorf("%q is neither a trajectory id (%v) nor a trajectory folder", r, err)
			}
			return "", "", fmt.Errorf("trajectory folder %q: no such folder", dir)
		}
		return r, workDir, nil
	}
	if !isPath && !fileExists(filepath.Join(dir, store.RunStateName)) && !ref.IsTrajectoryFolder(dir) {
		return r, workDir, nil // a folder that happens to share the id's name
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", "", fmt.Errorf("trajectory folder %q: %w", dir, err)
	}
	parent := filepath.Dir(abs)
	if filepath.Base(parent)+"/" != store.TrajectoriesDir {
		return "", "", fmt.Errorf("trajectory folder %s: want <work-dir>/%s<id>", abs, store.TrajectoriesDir)
	}
	id, work = filepath.Base(abs), filepath.Dir(parent)
	if workDir != "" {
		if w, err := filepath.Abs(workDir); err != nil || w != work {
			return "", "", fmt.Errorf("trajectory folder %s is not in --work-dir %s", abs, workDir)
		}
	}
	return id, work, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
