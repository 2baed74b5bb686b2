package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/trajlab/traj/orchestrator/folder"
	"github.com/trajlab/traj/orchestrator/launch"
	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/sandbox/disk"
	"github.com/trajlab/traj/sandbox/harness"
	"github.com/trajlab/traj/trace/atomicfile"
)

// DefaultDisk is the workspace's disk cap of `traj run` without --disk.
const DefaultDisk = 4 << 30

// MountWorkspace gives the sandbox of p its disk cap (package
// sandbox/disk) before anything writes it, and returns what unmounts it.
// The cap holds every folder the agent's sandbox may write: the workspace
// and the writable state folders of harness h, resolved by the caller
// (the zero value is the default harness; OpenCode's
// snapshots of the workspace, a CLI harness's sessions and HOME), so what
// the agent's processes write, directly or through its harness, grows the
// host disk by at most the cap. One image, mounted at
// <sandbox>/DiskMountName, holds a copy of each folder's path; each is
// bound at its place, so every other part of traj sees the same paths.
// Defer the returned func: every way a run returns (an error, a panic,
// SIGINT or SIGTERM, which end the run through its context) unmounts. A
// recorder killed with SIGKILL leaves its mounts behind; the trajectory's
// next MountWorkspace (resume), AttachWorkspace (finalize) or traj gc
// removes them.
//   - An image in the sandbox folder (an earlier run of the trajectory) is
//     mounted as it is, whatever o says (a workspace-only image of an
//     older trajectory stays that).
//   - Else there is no cap when o.Disk <= 0, when the workspace already
//     holds files (it was recorded without a cap), or for the default cap
//     of the local provider.
//   - Else a new image of o.Disk bytes. Where none can be mounted (not
//     root), a cap o.DiskOptional marks as the default is logged once and
//     the run goes on without one; a cap the user asked for fails the run.
func MountWorkspace(ctx context.Context, p folder.Paths, o launch.SandboxOptions, h harness.Harness, log *slog.Logger) (func(), error) {
	if h.Mounts == nil {
		var err error
		if h, err = harness.Lookup(harness.Default); err != nil {
			return nil, err
		}
	}
	img := p.DiskImage()
	old := filepath.Join(p.Sandbox, folder.WorkspaceImageName)
	for _, im := range []string{img, old} {
		if fi, err := os.Stat(im); err == nil {
			if o.Disk != 0 && !o.DiskOptional && o.Disk != fi.Size() {
				log.Warn("the sandbox keeps the disk cap it was recorded with; --disk is not applied", "cap", fi.Size(), "asked", o.Disk)
			}
			if im == old {
				return attach(ctx, old, p.Workspace, log)
			}
			return attachSandbox(ctx, p.Sandbox, p.Workspace, &h, log)
		}
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
	log.Info("sandbox disk cap (workspace and harness state)", "bytes", o.Disk, "image", img)
	return attachSandbox(ctx, p.Sandbox, p.Workspace, &h, log)
}

// AttachWorkspace mounts the sandbox's image, when the trajectory has
// one, for a finalize after its recorder died; it returns the unmount.
// The folders bound are the ones the image lists (see bindsName).
func AttachWorkspace(ctx context.Context, sandboxDir, workspace string, log *slog.Logger) (func(), error) {
	if _, err := os.Stat(filepath.Join(sandboxDir, folder.DiskImageName)); err == nil {
		return attachSandbox(ctx, sandboxDir, workspace, nil, log)
	}
	img := filepath.Join(sandboxDir, folder.WorkspaceImageName)
	if _, err := os.Stat(img); err != nil {
		return func() {}, nil
	}
	return attach(ctx, img, workspace, log)
}

// bindsName is the list, in the image's root, of the folders (relative to
// the sandbox folder) the image holds: what to bind when the harness is
// not known (finalize) and what a harness of another version left.
const bindsName = "binds.json"

// attachSandbox mounts the sandbox folder's image and binds into it the
// workspace, the folders the image lists and the writable state folders
// of harness h (nil: none besides those listed). Whatever a killed
// recorder left mounted beneath the sandbox folder goes first.
func attachSandbox(ctx context.Context, sandboxDir, workspace string, h *harness.Harness, log *slog.Logger) (func(), error) {
	mnt := filepath.Join(sandboxDir, folder.DiskMountName)
	if err := disk.UnmountUnder(sandboxDir); err != nil {
		return nil, err
	}
	if err := disk.Attach(ctx, filepath.Join(sandboxDir, folder.DiskImageName), mnt); err != nil {
		return nil, err
	}
	unmount := func() {
		if err := disk.UnmountUnder(sandboxDir); err != nil {
			log.Error("the sandbox stays mounted", "err", err, "unmount", "umount -R "+mnt)
		}
	}
	binds, err := bindsOf(sandboxDir, mnt, workspace, h)
	if err == nil {
		err = bindAll(sandboxDir, mnt, binds)
	}
	if err != nil {
		unmount()
		return nil, fmt.Errorf("sandbox disk cap: %w", err)
	}
	return unmount, nil
}

// bindsOf is every folder the image holds, relative to the sandbox
// folder: the workspace first, those the image lists, the harness's
// writable state; the list is written back when it grew.
func bindsOf(sandboxDir, mnt, workspace string, h *harness.Harness) ([]string, error) {
	ws, err := filepath.Rel(sandboxDir, workspace)
	if err != nil || ws == "." || strings.HasPrefix(ws, "..") {
		return nil, fmt.Errorf("the workspace %s is not inside the sandbox folder %s", workspace, sandboxDir)
	}
	binds := []string{ws}
	var listed []string
	if b, err := os.ReadFile(filepath.Join(mnt, bindsName)); err == nil {
		if err := json.Unmarshal(b, &listed); err != nil {
			return nil, fmt.Errorf("read %s: %w", bindsName, err)
		}
	}
	binds = append(binds, listed...)
	if h != nil {
		state, err := h.WritableState(sandboxDir)
		if err != nil {
			return nil, err
		}
		for _, s := range state {
			rel, _ := filepath.Rel(sandboxDir, s)
			binds = append(binds, rel)
		}
	}
	slices.Sort(binds[1:])
	binds = slices.Compact(binds)
	for _, b := range binds {
		if !filepath.IsLocal(b) || b == folder.DiskMountName || strings.HasPrefix(b, folder.DiskMountName+string(filepath.Separator)) {
			return nil, fmt.Errorf("%s: %q is not a folder of the sandbox the image can hold", bindsName, b)
		}
	}
	if !slices.Equal(binds[1:], listed) {
		b, _ := json.Marshal(binds[1:])
		if err := atomicfile.WriteBytes(filepath.Join(mnt, bindsName), b); err != nil {
			return nil, err
		}
	}
	return binds, nil
}

// bindAll makes each folder's copy in the image (with the folder's own
// mode and owner; a new one 0755, as a new workspace) and binds it at the folder.
func bindAll(sandboxDir, mnt string, binds []string) error {
	for _, rel := range binds {
		src, dst := filepath.Join(mnt, rel), filepath.Join(sandboxDir, rel)
		mode, uid, gid := fs.FileMode(0o755), -1, -1
		if fi, err := os.Lstat(dst); err == nil && fi.IsDir() {
			mode = fi.Mode().Perm()
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				uid, gid = int(st.Uid), int(st.Gid)
			}
		}
		if _, err := os.Lstat(src); errors.Is(err, fs.ErrNotExist) {
			if err := os.MkdirAll(src, 0o700); err != nil {
				return err
			}
			if err := os.Chmod(src, mode); err != nil {
				return err
			}
			if uid >= 0 {
				if err := os.Lchown(src, uid, gid); err != nil {
					return err
				}
			}
		}
		if err := disk.Bind(src, dst); err != nil {
			return err
		}
	}
	return nil
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
