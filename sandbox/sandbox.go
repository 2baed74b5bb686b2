// Package sandbox is where an agent runs: a workspace (a git repository
// with an initial empty commit) and the supervised services a trajectory
// needs (the OpenCode server, the scripted model). The local provider,
// the default, runs everything on this machine under the trajectory
// folder; every service is a process group that Stop, or the cancellation
// of the context it was started with, ends and reaps.
package sandbox

import (
	"context"
	"time"
)

// Sandbox is what the orchestrator needs from a place to run an agent.
type Sandbox interface {
	// Workspace is the agent's working tree, a git repository.
	Workspace() string
	// TrajectoryDir is the trajectory's local folder (trace, logs,
	// OpenCode state); it is outside the workspace.
	TrajectoryDir() string
	// StartService starts a supervised service; its stdout and stderr go
	// to LogPath(name). It is stopped by Stop or when ctx is cancelled.
	StartService(ctx context.Context, spec ServiceSpec) (Service, error)
	// LogPath is the log file of the service called name.
	LogPath(name string) string
	// Stop stops every service (newest first) and waits until each
	// process group is gone.
	Stop(ctx context.Context) error
}

// ServiceSpec describes a service process.
type ServiceSpec struct {
	// Name is unique within the sandbox; it names the log file.
	Name string
	Path string
	Args []string
	// Dir is the working directory; the workspace when empty.
	Dir string
	// Env is the complete environment; nil means traj's environment.
	Env []string
	// Grace between SIGTERM and SIGKILL on stop.
	Grace time.Duration
}

// Service is a running supervised process group.
type Service interface {
	Name() string
	PID() int
	// Done is closed when the service's main process has exited.
	Done() <-chan struct{}
	// Err is the exit error once Done is closed.
	Err() error
	// Stop ends the process group and reaps it.
	Stop() error
}
