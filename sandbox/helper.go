package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

const (
	// HelperName is the sandbox helper's file name (cmd/traj-sandbox):
	// the tool stub, the relay and the guard. It links no test
	// environment, so a room that shows it shows no expectation.
	HelperName = "traj-sandbox"
	// HelperEnv names the helper's path when it is not beside traj's
	// executable (tests that run traj from elsewhere).
	HelperEnv = "TRAJ_SANDBOX_BIN"
)

// FindHelper is the sandbox helper: $TRAJ_SANDBOX_BIN when set, else
// traj-sandbox beside trajExe (traj's own executable). Never traj
// itself: traj embeds the basics suite with its expectations, and every
// room shows its helper.
func FindHelper(trajExe string) (string, error) {
	p := os.Getenv(HelperEnv)
	if p == "" {
		if trajExe == "" {
			return "", errors.New("find the sandbox helper: traj's executable is unknown")
		}
		p = filepath.Join(filepath.Dir(trajExe), HelperName)
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("find the sandbox helper %q: %w", p, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("find the sandbox helper: %w (build it with `make build`, which puts %s beside traj, or set %s)", err, HelperName, HelperEnv)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("find the sandbox helper: %s is not an executable file", abs)
	}
	return abs, nil
}
