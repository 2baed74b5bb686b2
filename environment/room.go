package environment

import (
	"context"
	"time"
)

// Room is the agent's room an environment brings (a Harbor task's: its
// image), which the run applies to the agent's sandbox: the image, where
// the workspace is inside it, its network and limits, and how a new
// workspace is seeded. traj's own environments bring none (the agent
// runs in traj's sandbox image).
type Room struct {
	// Image is the container image the agent runs in (its ID).
	Image string
	// Workdir is where the workspace is inside it.
	Workdir string
	// AllowInternet false: no network beyond traj's gateways.
	AllowInternet bool
	// CPUs and Memory (bytes) bound the room unless the user set limits
	// (the disk cap is the task's: orchestrator/task.Task.Storage).
	CPUs   float64
	Memory int64
	// AgentTimeout bounds the run (0: none).
	AgentTimeout time.Duration
	// RootFS unpacks the image for a room in bwrap (nil: none).
	RootFS func(ctx context.Context) (string, error)
	// Seed copies the task's files into a new workspace (nil: nothing).
	Seed func(ctx context.Context, workspace string) error
}

// Roomed is an Environment whose agent runs in a room of its own; the
// run asks by this interface, never by the environment's name.
type Roomed interface {
	Environment
	AgentRoom() Room
}
