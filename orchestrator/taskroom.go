package orchestrator

import (
	"context"
	"fmt"
	"os"

	"github.com/trajlab/traj/environment"
	"github.com/trajlab/traj/orchestrator/launch"
	"github.com/trajlab/traj/orchestrator/task"
	"github.com/trajlab/traj/sandbox/disk"
	"github.com/trajlab/traj/trace/gitstate"
)

// taskRoom prepares the room a task brings (a Harbor task's; nil for
// traj's own tasks): a new workspace holds the image's workdir (the
// task's files), and the run's timeout is at most the task's agent
// timeout. The room's image, workdir, network and limits are applied to
// the agent's sandbox by launch (TaskRoom).
func taskRoom(ctx context.Context, opts *Options, env environment.Environment, ws string) (*launch.TaskRoom, error) {
	e, ok := env.(environment.Roomed)
	if !ok {
		return nil, nil
	}
	r := e.AgentRoom()
	if r.Seed != nil && emptyWorkspace(ws) {
		if err := r.Seed(ctx, ws); err != nil {
			return nil, fmt.Errorf("seed the task's room: %w", err)
		}
	}
	if t := r.AgentTimeout; t > 0 && (opts.Timeout <= 0 || opts.Timeout > t) {
		opts.Timeout = t
	}
	return launch.TaskRoomOf(env), nil
}

// emptyWorkspace: ws is missing or holds nothing but a file system's
// lost+found (the workspace's disk image).
func emptyWorkspace(ws string) bool {
	ents, err := os.ReadDir(ws)
	if err != nil {
		return os.IsNotExist(err)
	}
	for _, e := range ents {
		if e.Name() != "lost+found" {
			return false
		}
	}
	return true
}

// startCheckpoint commits what the task's room seeded into a new
// workspace as the trajectory's start ("part 0 checkpoint"), so the start
// commit is the task's files, not an empty tree: ground truth and replay
// score the tree the agent was given. Nothing for traj's own tasks or a
// continued trace.
func startCheckpoint(ctx context.Context, room *launch.TaskRoom, s Start, repo *gitstate.Repo) error {
	if room == nil || s.Recorded.Trace {
		return nil
	}
	if _, err := repo.Checkpoint(ctx, 0); err != nil {
		return fmt.Errorf("checkpoint the task's files: %w", err)
	}
	return nil
}

// taskDisk is o with a Harbor task's storage as the sandbox's disk cap
// (workspace and harness state) when the user set none: the default cap
// gives way, an explicit --disk or a resumed run's stays.
func taskDisk(tk *task.Task, o launch.SandboxOptions) launch.SandboxOptions {
	if tk.Storage <= 0 || (o.Disk != 0 && !o.DiskOptional) {
		return o
	}
	o.Disk = max(tk.Storage, disk.MinSize)
	return o
}
