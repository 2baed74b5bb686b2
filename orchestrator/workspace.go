package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/trajlab/traj/orchestrator/folder"
	"github.com/trajlab/traj/orchestrator/launch"
	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/sandbox/disk"
)

// DefaultDisk is the workspace's disk cap of `traj run` without --disk.
const DefaultDisk = 4 << 30

// MountWorkspace gives the workspace of p its disk cap (package
// sandbox/disk) before anything writes it, and returns what unmounts it.
// Defer it: every way a run returns (an error, a panic, SIGINT or SIGTERM,
// which end the run through its context) unmounts. A recorder killed with
// SIGKILL leaves its mount behind; the trajectory's next MountWorkspace
// (resume), AttachWorkspace (finalize) or traj gc removes it.
//   - An image in the sandbox folder (an earlier run of the trajectory) is
//     mounted as it is, whatever o says: the workspace lives in it.
//   - Else there is no cap when o.Disk <= 0, when the workspace already
//     holds files (it was recorded without a cap), or for the default cap
//     of the local provider.
//   - Else a new image of o.Disk bytes. Where none can be mounted (not
//     root), a cap o.DiskOptional marks as the default is logged once and
//     the run goes on without one; a cap the user asked for fails the run.
func MountWorkspace(ctx context.Context, p folder.Paths, o launch.SandboxOptions, log *slog.Logger) (func(), error) {
	img := p.DiskImage()
	if fi, err := os.Stat(img); err == nil {
		if o.Disk != 0 && !o.DiskOptional && o.Disk != fi.Size() {
			log.Warn("the workspace keeps the disk cap it was recorded with; --disk is not applied", "cap", fi.Size(), "asked", o.Disk)
		}
		return attach(ctx, img, p.Workspace, log)
	}
	if o.Disk <= 0 {
		return func() {}, nil
	}
	if o.DiskOptional && o.Provider == sandbox.ProviderLocal {
		// No isolation: the agent can fill any disk its user can, and a
		// process it leaves behind keeps the mount busy and writes into
		// the folder under it once detached. Only an asked-for cap.
		log.Info("no workspace disk cap by default with --sandbox local (give --disk for one)")
		return func() {}, nil
	}
	if ents, err := os.ReadDir(p.Workspace); len(ents) > 0 || (err != nil && !errors.Is(err, fs.ErrNotExist)) {
		if !o.DiskOptional {
			return nil, fmt.Errorf("--disk: the workspace %s was recorded without a disk cap and keeps none (resume without --disk)", p.Workspace)
		}
		log.Info("no workspace disk cap: the workspace was recorded without one", "workspace", p.Workspace)
		return func() {}, nil
	}
	err := disk.Available()
	if err == nil {
		// A resume whose sandbox folder was removed makes it again.
		err = os.MkdirAll(p.Sandbox, 0o755)
	}
	if err == nil {
		err = disk.Create(ctx, img, o.Disk)
	}
	if err != nil {
		if !o.DiskOptional {
			return nil, fmt.Errorf("--disk: %w", err)
		}
		log.Warn("the workspace has no disk cap: the agent's files can fill the disk that holds the store (--disk off: no cap, without this warning)", "reason", err.Error())
		return func() {}, nil
	}
	log.Info("workspace disk cap", "bytes", o.Disk, "image", img)
	return attach(ctx, img, p.Workspace, log)
}

// AttachWorkspace mounts the workspace's image, when the trajectory has
// one, for a finalize after its recorder died; it returns the unmount.
func AttachWorkspace(ctx context.Context, sandboxDir, workspace string, log *slog.Logger) (func(), error) {
	img := filepath.Join(sandboxDir, folder.DiskImageName)
	if _, err := os.Stat(img); err != nil {
		return func() {}, nil
	}
	return attach(ctx, img, workspace, log)
}

func attach(ctx context.Context, img, ws string, log *slog.Logger) (func(), error) {
	if err := disk.Attach(ctx, img, ws); err != nil {
		return nil, err
	}
	return func() {
		if err := disk.Unmount(ws); err != nil {
			log.Error("the workspace stays mounted", "err", err, "unmount", "umount "+ws)
		}
	}, nil
}
