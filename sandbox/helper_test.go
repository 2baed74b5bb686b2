package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFindHelper: the helper beside traj's executable, or at
// $TRAJ_SANDBOX_BIN; missing or not executable, an error that says how to
// build it. Never traj itself.
func TestFindHelper(t *testing.T) {
	dir := t.TempDir()
	traj := filepath.Join(dir, "traj")
	for _, f := range []string{traj, filepath.Join(dir, HelperName)} {
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	plain := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, env, exe, want, err string
	}{
		{"beside traj", "", traj, filepath.Join(dir, HelperName), ""},
		{"env", filepath.Join(dir, HelperName), "/nowhere/traj", filepath.Join(dir, HelperName), ""},
		{"missing", "", "/nowhere/traj", "", "make build"},
		{"env missing", "/nowhere/" + HelperName, traj, "", HelperEnv},
		{"not executable", plain, traj, "", "not an executable"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(HelperEnv, c.env)
			got, err := FindHelper(c.exe)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("FindHelper = %q, %v; want an error naming %q", got, err, c.err)
				}
				return
			}
			if err != nil || got != c.want || got == traj {
				t.Fatalf("FindHelper = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}
