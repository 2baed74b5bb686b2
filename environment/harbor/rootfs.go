package harbor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/trajlab/traj/sandbox/xec"
)

// RootFS is the task image's root file system unpacked on the host, for
// an agent's room in bwrap over it (sandbox.Options.RootFS): made once
// per image under cacheDir/rootfs/<image id> (the engine's export of a
// container never started) and reused. It is read-only to every room.
func (e *Env) RootFS(ctx context.Context, cacheDir string) (string, error) {
	id := strings.TrimPrefix(e.Image.ID, "sha256:")
	if len(id) > 24 {
		id = id[:24]
	}
	dir := filepath.Join(cacheDir, "rootfs", id)
	if st, err := os.Stat(filepath.Join(dir, "usr")); err == nil && st.IsDir() {
		return dir, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", fmt.Errorf("unpack %s: %w", e.Image.Name, err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), id+".tmp-")
	if err != nil {
		return "", fmt.Errorf("unpack %s: %w", e.Image.Name, err)
	}
	defer os.RemoveAll(tmp)
	name := "traj-rootfs-" + e.Task.Name + "-" + randomSuffix()
	if _, err := e.Engine.Run(ctx, time.Minute, nil, "create", "--name", name, e.Image.ID, "true"); err != nil {
		return "", fmt.Errorf("unpack %s: %w", e.Image.Name, err)
	}
	defer e.Engine.Run(context.WithoutCancel(ctx), time.Minute, nil, "rm", "-f", "--ignore", name) //nolint:errcheck
	tar := filepath.Join(tmp, "rootfs.tar")
	if _, err := e.Engine.Run(ctx, 10*time.Minute, nil, "export", "-o", tar, name); err != nil {
		return "", fmt.Errorf("unpack %s: %w", e.Image.Name, err)
	}
	root := filepath.Join(tmp, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		return "", fmt.Errorf("unpack %s: %w", e.Image.Name, err)
	}
	res, err := xec.Run(ctx, xec.Command{Path: "tar", Args: []string{"-x", "-f", tar, "-C", root, "--exclude=./dev/*", "--exclude=dev/*"},
		Timeout: 10 * time.Minute, OutputLimit: 4096, CombineOutput: true})
	switch {
	case err != nil:
		return "", fmt.Errorf("unpack %s: %w", e.Image.Name, err)
	case res.ExitCode != 0:
		return "", fmt.Errorf("unpack %s: tar: %s", e.Image.Name, strings.TrimSpace(res.Stdout))
	}
	if err := os.Rename(root, dir); err != nil && !os.IsExist(err) {
		if st, serr := os.Stat(filepath.Join(dir, "usr")); serr == nil && st.IsDir() {
			return dir, nil // unpacked meanwhile by another run
		}
		return "", fmt.Errorf("unpack %s: %w", e.Image.Name, err)
	}
	return dir, nil
}
