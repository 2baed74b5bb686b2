package harbor

import (
	"context"
	"errors"

	"github.com/trajlab/traj/environment"
	"github.com/trajlab/traj/sandbox"
)

// Name is the environment's name in a task and a trace (the registry's
// entry, environment/evaluation/registry).
const Name = "harbor"

// OpenFolder loads the task folder dir and opens its environment: what
// the registry's entry does ("" is an error naming what is missing).
func OpenFolder(ctx context.Context, dir string, o Options) (*Env, error) {
	if dir == "" {
		return nil, errors.New("a Harbor task's environment needs its task folder (--task)")
	}
	t, err := Load(dir)
	if err != nil {
		return nil, err
	}
	return Open(ctx, t, o)
}

var _ environment.Roomed = (*Env)(nil)

// AgentRoom implements environment.Roomed: the agent runs in the task's
// image, the workspace at the workdir, within the task's network policy,
// limits and agent timeout; a new workspace is seeded from the image.
func (e *Env) AgentRoom() environment.Room {
	s := e.Task.Environment
	return environment.Room{Image: e.Image.ID, Workdir: e.Workdir, AllowInternet: s.AllowInternet,
		CPUs: s.CPUs, Memory: s.Memory, AgentTimeout: e.Task.AgentTimeout,
		RootFS: func(ctx context.Context) (string, error) { return e.RootFS(ctx, sandbox.CacheDir()) },
		Seed:   e.Seed}
}
