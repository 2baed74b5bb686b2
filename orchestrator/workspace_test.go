package orchestrator

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/trajlab/traj/orchestrator/folder"
	"github.com/trajlab/traj/orchestrator/launch"
	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/sandbox/disk"
	"github.com/trajlab/traj/sandbox/harness"
)

// TestMountWorkspace: which workspace gets a disk cap, and that a mount
// left by a killed recorder is taken over by the next run and by finalize.
func TestMountWorkspace(t *testing.T) {
	if err := disk.Available(); err != nil {
		if os.Geteuid() != 0 && os.Getenv("CI") == "" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	const size = disk.MinSize
	for _, tc := range []struct {
		name    string
		agent   string // "" is OpenCode
		legacy  bool   // a workspace-only image, as recorded before the cap held harness state
		opts    launch.SandboxOptions
		files   bool // the workspace holds files before (recorded without a cap)
		mounted bool
		fails   bool
	}{
		{name: "new", opts: launch.SandboxOptions{Disk: size}, mounted: true},
		{name: "new claude-code", agent: "claude-code", opts: launch.SandboxOptions{Disk: size}, mounted: true},
		{name: "new codex", agent: "codex", opts: launch.SandboxOptions{Disk: size}, mounted: true},
		{name: "workspace-only image", legacy: true, opts: launch.SandboxOptions{Disk: -1}, mounted: true},
		{name: "default", opts: launch.SandboxOptions{Disk: size, DiskOptional: true}, mounted: true},
		{name: "off", opts: launch.SandboxOptions{Disk: -1}},
		{name: "local default", opts: launch.SandboxOptions{Disk: size, DiskOptional: true, Provider: sandbox.ProviderLocal}},
		{name: "local asked for", opts: launch.SandboxOptions{Disk: size, Provider: sandbox.ProviderLocal}, mounted: true},
		{name: "unset", opts: launch.SandboxOptions{}},
		{name: "recorded without a cap", opts: launch.SandboxOptions{Disk: size, DiskOptional: true}, files: true},
		{name: "recorded without a cap, asked for", opts: launch.SandboxOptions{Disk: size}, files: true, fails: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := folder.PathsOf(t.TempDir(), "t")
			if tc.files {
				write(t, filepath.Join(p.Workspace, "main.c"), "int main;\n")
			}
			if tc.legacy {
				if err := os.MkdirAll(p.Sandbox, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := disk.Create(t.Context(), filepath.Join(p.Sandbox, folder.WorkspaceImageName), size); err != nil {
					t.Fatal(err)
				}
			}
			h, err := harness.Lookup(tc.agent)
			if err != nil {
				t.Fatal(err)
			}
			unmount, err := MountWorkspace(t.Context(), p, tc.opts, h, log)
			if tc.fails {
				if err == nil {
					unmount()
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m, _ := disk.Mounted(p.Workspace); m != tc.mounted {
				unmount()
				t.Fatalf("mounted %v, want %v", m, tc.mounted)
			}
			if !tc.mounted {
				unmount()
				return
			}
			write(t, filepath.Join(p.Workspace, "kept.txt"), "kept\n")
			// Every folder the harness's sandbox may write is in the cap
			// too (not for an image recorded as the workspace's alone).
			state, err := h.WritableState(p.Sandbox)
			if err != nil {
				unmount()
				t.Fatal(err)
			}
			for _, d := range state {
				if m, _ := disk.Mounted(d); m == tc.legacy {
					unmount()
					t.Fatalf("state folder %s mounted %v", d, m)
				}
			}
			if !tc.legacy {
				// The cap is shared: the state folder fills it.
				f, err := os.Create(filepath.Join(state[0], "fill"))
				if err != nil {
					unmount()
					t.Fatal(err)
				}
				_, err = f.Write(make([]byte, 2*size))
				f.Close()
				if !errors.Is(err, syscall.ENOSPC) {
					unmount()
					t.Fatalf("writing twice the cap into %s: %v, want ENOSPC", state[0], err)
				}
				if err := os.Remove(filepath.Join(state[0], "fill")); err != nil {
					t.Fatal(err)
				}
				write(t, filepath.Join(state[0], "session.json"), "{}\n")
			}
			// Killed: no unmount. The resume mounts the image again, over
			// the mounts left behind, whatever it is asked.
			again, err := MountWorkspace(t.Context(), p, launch.SandboxOptions{Disk: -1}, h, log)
			if err != nil {
				unmount()
				t.Fatal(err)
			}
			again()
			if m, _ := disk.Mounted(p.Workspace); m {
				t.Fatal("still mounted after the unmount")
			}
			if b, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(b), p.Sandbox) {
				t.Fatalf("a mount under the sandbox folder is left:\n%s", b)
			}
			if !tc.legacy {
				if _, err := os.Stat(filepath.Join(state[0], "session.json")); !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("the harness's state is on the host disk, not in the image (%v)", err)
				}
			}
			// Finalize finds the files in the image.
			fin, err := AttachWorkspace(t.Context(), p.Sandbox, p.Workspace, log)
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(p.Workspace, "kept.txt"))
			if !tc.legacy {
				// Finalize knows no harness: the image lists its folders.
				if _, err := os.Stat(filepath.Join(state[0], "session.json")); err != nil {
					fin()
					t.Fatalf("finalize does not see the harness's state: %v", err)
				}
			}
			fin()
			if err != nil || string(b) != "kept\n" {
				t.Fatalf("finalize reads %q, %v", b, err)
			}
			if m, _ := disk.Mounted(p.Workspace); m {
				t.Fatal("finalize left the mount")
			}
		})
	}
}

func write(t *testing.T, p, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
