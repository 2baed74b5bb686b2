package cliturn

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestRewriteConfig: the configuration ends up holding traj's bytes
// whatever the agent left at its path, a symlink to a host file is
// replaced and never written through, and a file already right is not
// touched (no write a full disk could refuse).
func TestRewriteConfig(t *testing.T) {
	const want = "# traj's\n"
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, path, host string)
		same  bool // the file already right: the same inode afterwards
	}{
		{name: "missing", setup: func(*testing.T, string, string) {}},
		{name: "already right", same: true, setup: func(t *testing.T, path, _ string) {
			must(t, os.WriteFile(path, []byte(want), 0o600))
		}},
		{name: "changed by the agent", setup: func(t *testing.T, path, _ string) {
			must(t, os.WriteFile(path, []byte("model = \"evil\"\n"), 0o600))
		}},
		{name: "same size, other bytes", setup: func(t *testing.T, path, _ string) {
			must(t, os.WriteFile(path, []byte("# evil!!\n"), 0o600))
		}},
		{name: "symlink to a host file", setup: func(t *testing.T, path, host string) {
			must(t, os.Symlink(host, path))
		}},
		{name: "symlink to a host file holding the bytes", setup: func(t *testing.T, path, host string) {
			must(t, os.WriteFile(host, []byte(want), 0o600))
			must(t, os.Symlink(host, path))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			host := filepath.Join(t.TempDir(), "passwd")
			must(t, os.WriteFile(host, []byte("root:x:0:0\n"), 0o644))
			before, _ := os.ReadFile(host)
			path := filepath.Join(dir, "config.toml")
			tc.setup(t, path, host)
			var st0 syscall.Stat_t
			_ = syscall.Lstat(path, &st0)
			if err := RewriteConfig(path, []byte(want)); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Lstat(path)
			if err != nil || !fi.Mode().IsRegular() {
				t.Fatalf("after: %v, %v; want a regular file", fi, err)
			}
			if b, _ := os.ReadFile(path); string(b) != want {
				t.Errorf("holds %q, want %q", b, want)
			}
			if after, _ := os.ReadFile(host); string(after) != string(before) && tc.name != "symlink to a host file holding the bytes" {
				t.Errorf("the host file was written through the link: %q", after)
			}
			var st syscall.Stat_t
			must(t, syscall.Lstat(path, &st))
			if tc.same != (st.Ino == st0.Ino) {
				t.Errorf("same inode %v, want %v", st.Ino == st0.Ino, tc.same)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
