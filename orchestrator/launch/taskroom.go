package launch

import (
	"context"
	"fmt"

	"github.com/trajlab/traj/environment"
	"github.com/trajlab/traj/sandbox"
)

// TaskRoom is the agent's room a task brings (a Harbor task's): the
// container image the agent runs in, where the workspace is inside it,
// whether it may reach the internet, and its limits.
type TaskRoom struct {
	Image         string
	Workdir       string
	AllowInternet bool
	CPUs          float64
	Memory        int64
	// RootFS unpacks the image for a room in bwrap (environment.Room's).
	RootFS func(ctx context.Context) (string, error)
}

// TaskRoomOf is env's room (environment.Roomed), nil for an environment
// without one (the C compiler's agent runs in traj's own sandbox image).
func TaskRoomOf(env environment.Environment) *TaskRoom {
	e, ok := env.(environment.Roomed)
	if !ok {
		return nil
	}
	r := e.AgentRoom()
	return &TaskRoom{Image: r.Image, Workdir: r.Workdir, AllowInternet: r.AllowInternet, CPUs: r.CPUs, Memory: r.Memory, RootFS: r.RootFS}
}

// apply is o with the room's image, workdir, network and limits: the
// container provider (the image is the task's), or bwrap over the
// image's root file system when asked (--sandbox bwrap), no network
// beyond traj's gateways unless the task allows the internet, the task's
// CPUs and memory unless the user set them.
func (r *TaskRoom) apply(ctx context.Context, o SandboxOptions) (SandboxOptions, error) {
	switch o.Provider {
	case "", sandbox.ProviderContainer:
		o.Provider = sandbox.ProviderContainer
	case sandbox.ProviderBwrap:
		if r.RootFS == nil {
			return o, fmt.Errorf("--sandbox bwrap: the task's image has no root file system to show")
		}
		root, err := r.RootFS(ctx)
		if err != nil {
			return o, fmt.Errorf("--sandbox bwrap: %w", err)
		}
		o.RootFS = root
	default:
		return o, fmt.Errorf("--sandbox %s: a Harbor task's agent runs in its image: a container (--sandbox container) or bwrap over its root file system (--sandbox bwrap)", o.Provider)
	}
	o.Image, o.WorkspaceInside = r.Image, r.Workdir
	if !r.AllowInternet {
		if o.Network == sandbox.NetworkFull {
			return o, fmt.Errorf("--network full: the task sets allow_internet = false")
		}
		if o.Network == "" {
			o.Network = sandbox.NetworkGateways
		}
	}
	if o.Limits.CPUs == 0 {
		o.Limits.CPUs = r.CPUs
	}
	if o.Limits.Memory == 0 && r.Memory > 0 {
		o.Limits.Memory = r.Memory
	}
	return o, nil
}
