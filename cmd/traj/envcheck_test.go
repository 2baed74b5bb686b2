package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trajlab/traj/sandbox"
)

// TestEnvCheck runs `traj env check` on a testdata Harbor task (oracle 1,
// no-op 0: exit 0) and on a copy whose solution does nothing (the check
// fails: exit 1), and `traj env oracle-script` on it.
func TestEnvCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("container test")
	}
	if _, _, err := sandbox.FindEngine(context.Background(), ""); err != nil {
		t.Skipf("no container engine: %v", err)
	}
	traj := trajExe(t)
	task := "../../environment/harbor/testdata/shell-topwords"
	out, err := exec.Command(traj, "env", "check", task).CombinedOutput()
	if err != nil || !strings.Contains(string(out), `oracle  reward "1"`) || !strings.Contains(string(out), `no-op   reward "0"`) {
		t.Fatalf("env check: %v\n%s", err, out)
	}
	broken := filepath.Join(t.TempDir(), "shell-topwords")
	if err := exec.Command("cp", "-a", task, broken).Run(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(broken, "solution", "solve.sh"), []byte("true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command(traj, "env", "check", broken).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "WRONG (want reward 1)") {
		t.Fatalf("env check of a task whose oracle fails: %v\n%s", err, out)
	}
	out, err = exec.Command(traj, "env", "oracle-script", task).Output()
	if err != nil || !strings.Contains(string(out), `"name":"bash"`) || !strings.Contains(string(out), "uniq -c") {
		t.Fatalf("oracle-script: %v\n%s", err, out)
	}
}
