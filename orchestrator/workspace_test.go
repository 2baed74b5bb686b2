package orchestrator

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/trajlab/traj/orchestrator/folder"
	"github.com/trajlab/traj/orchestrator/launch"
	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/sandbox/disk"
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
		opts    launch.SandboxOptions
		files   bool // the workspace holds files before (recorded without a cap)
		mounted bool
		fails   bool
	}{
		{name: "new", opts: launch.SandboxOptions{Disk: size}, mounted: true},
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
			unmount, err := MountWorkspace(t.Context(), p, tc.opts, log)
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
			// Killed: no unmount. The resume mounts the image again, over
			// the mount left behind, whatever it is asked.
			again, err := MountWorkspace(t.Context(), p, launch.SandboxOptions{Disk: -1}, log)
			if err != nil {
				unmount()
				t.Fatal(err)
			}
			again()
			if m, _ := disk.Mounted(p.Workspace); m {
				t.Fatal("still mounted after the unmount")
			}
			// Finalize finds the files in the image.
			fin, err := AttachWorkspace(t.Context(), p.Sandbox, p.Workspace, log)
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(p.Workspace, "kept.txt"))
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
