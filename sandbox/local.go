package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/trajlab/traj/sandbox/xec"
	"github.com/trajlab/traj/trace/gitstate"
)

// LocalOptions configure a local sandbox.
type LocalOptions struct {
	// TrajectoryDir is the trajectory's folder; created if missing.
	TrajectoryDir string
	// Workspace is the agent's working tree; <TrajectoryDir>/workspace
	// when empty. A missing or empty folder becomes a git repository with
	// an initial empty commit; an existing repository is reused (resume).
	Workspace string
}

// Local runs services as process groups on this machine.
type Local struct {
	traj, ws string

	mu       sync.Mutex
	services []*xec.Process
	names    map[string]bool
	stopped  bool
}

var _ Sandbox = (*Local)(nil)

// NewLocal prepares the trajectory folder and the workspace repository.
func NewLocal(ctx context.Context, opts LocalOptions) (*Local, error) {
	if opts.TrajectoryDir == "" {
		return nil, errors.New("local sandbox: no trajectory folder")
	}
	traj, err := filepath.Abs(opts.TrajectoryDir)
	if err != nil {
		return nil, fmt.Errorf("local sandbox: %w", err)
	}
	ws := opts.Workspace
	if ws == "" {
		ws = filepath.Join(traj, "workspace")
	}
	if ws, err = filepath.Abs(ws); err != nil {
		return nil, fmt.Errorf("local sandbox: %w", err)
	}
	if err := os.MkdirAll(traj, 0o755); err != nil {
		return nil, fmt.Errorf("local sandbox: trajectory folder: %w", err)
	}
	if err := initWorkspace(ctx, ws); err != nil {
		return nil, fmt.Errorf("local sandbox: %w", err)
	}
	return &Local{traj: traj, ws: ws, names: map[string]bool{}}, nil
}

// initWorkspace makes ws a git repository with an initial empty commit,
// unless it already is one.
func initWorkspace(ctx context.Context, ws string) error {
	if _, err := gitstate.Open(ctx, ws, gitstate.Options{}); err == nil {
		return nil
	}
	if ents, err := os.ReadDir(ws); err == nil && len(ents) > 0 {
		return fmt.Errorf("workspace %s: not empty and not a git repository", ws)
	}
	if _, err := gitstate.Init(ctx, ws, gitstate.Options{}); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	return nil
}

// Workspace is the agent's working tree.
func (l *Local) Workspace() string { return l.ws }

// TrajectoryDir is the trajectory's folder.
func (l *Local) TrajectoryDir() string { return l.traj }

// LogPath is <trajectory>/logs/<name>.log.
func (l *Local) LogPath(name string) string {
	return filepath.Join(l.traj, "logs", name+".log")
}

var serviceName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// StartService starts spec as a process group logging to LogPath(name).
func (l *Local) StartService(ctx context.Context, spec ServiceSpec) (Service, error) {
	if !serviceName.MatchString(spec.Name) {
		return nil, fmt.Errorf("start service %q: name must be letters, digits, '.', '_' or '-'", spec.Name)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return nil, fmt.Errorf("start service %s: sandbox stopped", spec.Name)
	}
	if l.names[spec.Name] {
		return nil, fmt.Errorf("start service %s: name already used", spec.Name)
	}
	dir := spec.Dir
	if dir == "" {
		dir = l.ws
	}
	p, err := xec.Start(ctx, xec.Spec{
		Name: spec.Name, Path: spec.Path, Args: spec.Args, Dir: dir, Env: spec.Env,
		LogPath: l.LogPath(spec.Name), Grace: spec.Grace,
	})
	if err != nil {
		return nil, err
	}
	l.names[spec.Name] = true
	l.services = append(l.services, p)
	return p, nil
}

// Stop stops every service, newest first. Errors of services that had
// exited on their own are returned joined; the services are stopped anyway.
func (l *Local) Stop(ctx context.Context) error {
	l.mu.Lock()
	l.stopped = true
	svcs := l.services
	l.services = nil
	l.mu.Unlock()
	var errs []error
	for i := len(svcs) - 1; i >= 0; i-- {
		if err := svcs[i].Stop(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
