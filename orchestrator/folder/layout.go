package folder

import (
	"path/filepath"

	"github.com/trajlab/traj/trace/store"
)

// Names in the work folder and the trajectory folder (besides the store's
// objects, named by trace/store).
const (
	// SandboxesDir holds each trajectory's sandbox (workspace, harness
	// state), outside the trajectory folder so it never reaches the store.
	SandboxesDir = "sandboxes"
	// DiskImageName is the sandbox's filesystem image in the sandbox
	// folder when it has a disk limit: mounted at DiskMountName, it holds
	// every folder the agent's sandbox may write (the workspace, the
	// harness's writable state), each bound at its place.
	DiskImageName = "sandbox.img"
	// DiskMountName is where the image is mounted in the sandbox folder.
	DiskMountName = "disk"
	// WorkspaceImageName is the image of a trajectory recorded before the
	// cap held the harness's state: mounted at the workspace alone.
	WorkspaceImageName = "workspace.img"
)

// Paths are the local folders of trajectory ID under a work folder.
type Paths struct {
	ID string
	// Dir is the trajectory folder, Sandbox its sandbox, Workspace the
	// agent's workspace in it.
	Dir, Sandbox, Workspace string
}

// PathsOf returns the folders of trajectory id under the absolute work
// folder work.
func PathsOf(work, id string) Paths {
	sb := filepath.Join(work, SandboxesDir, id)
	return Paths{ID: id, Dir: filepath.Join(work, filepath.FromSlash(store.TrajectoryPrefix(id))), Sandbox: sb,
		Workspace: filepath.Join(sb, "workspace")}
}

// DiskImage is the sandbox's filesystem image (see DiskImageName).
func (p Paths) DiskImage() string { return filepath.Join(p.Sandbox, DiskImageName) }

// TracePath is the local agent_trace.json.
func (p Paths) TracePath() string { return filepath.Join(p.Dir, store.TraceName) }

// PendingPath is the local record of objects not uploaded.
func (p Paths) PendingPath() string { return filepath.Join(p.Dir, store.PendingName) }

// LogsDir is the trajectory's logs/ folder.
func (p Paths) LogsDir() string { return filepath.Join(p.Dir, filepath.FromSlash(store.LogsDir)) }

// HistoryDir is the trajectory's history/ folder.
func (p Paths) HistoryDir() string { return filepath.Join(p.Dir, filepath.FromSlash(store.HistoryDir)) }
