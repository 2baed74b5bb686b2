package opencode

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// InstallDir is where `make setup` installs the pinned opencode-ai npm
// package, relative to the repository root.
const InstallDir = "sandbox/opencode/npm/node_modules"

// BinaryEnv names the environment variable that points to the binary.
const BinaryEnv = "TRAJ_OPENCODE_BIN"

// ErrNoBinary: no OpenCode binary was found anywhere.
var ErrNoBinary = errors.New("opencode binary not found (run `make setup` to install the pinned OpenCode, or pass --agent-bin)")

// Locator finds the OpenCode binary. The zero value uses the process's
// environment, executable, working folder and PATH.
type Locator struct {
	Getenv     func(string) string
	Executable func() (string, error)
	Getwd      func() (string, error)
	LookPath   func(string) (string, error)
	GOOS       string
	GOARCH     string
}

// ResolveBinary finds OpenCode: flag (the --agent-bin value), then
// $TRAJ_OPENCODE_BIN, then the repository's install folder found by
// walking up from the traj executable and from the working folder, then
// `opencode` on PATH. An explicit flag or variable that does not name an
// executable is an error, not a reason to look further.
func ResolveBinary(flag string) (string, error) { return Locator{}.Resolve(flag) }

// Resolve is ResolveBinary with l's lookups.
func (l Locator) Resolve(flag string) (string, error) {
	l.fill()
	if flag != "" {
		return checkExecutable(flag, "--agent-bin")
	}
	if env := l.Getenv(BinaryEnv); env != "" {
		return checkExecutable(env, BinaryEnv)
	}
	var starts []string
	if exe, err := l.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		starts = append(starts, filepath.Dir(exe))
	}
	if wd, err := l.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	for _, start := range starts {
		if p, ok := l.findInstall(start); ok {
			return p, nil
		}
	}
	if p, err := l.LookPath("opencode"); err == nil {
		return p, nil
	}
	return "", ErrNoBinary
}

func (l *Locator) fill() {
	if l.Getenv == nil {
		l.Getenv = os.Getenv
	}
	if l.Executable == nil {
		l.Executable = os.Executable
	}
	if l.Getwd == nil {
		l.Getwd = os.Getwd
	}
	if l.LookPath == nil {
		l.LookPath = exec.LookPath
	}
	if l.GOOS == "" {
		l.GOOS = runtime.GOOS
	}
	if l.GOARCH == "" {
		l.GOARCH = runtime.GOARCH
	}
}

// packageNames are the npm packages holding the native binary for this
// platform, in order of preference.
func (l Locator) packageNames() []string {
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[l.GOARCH]
	if arch == "" {
		arch = l.GOARCH
	}
	base := "opencode-" + l.GOOS + "-" + arch
	return []string{base, base + "-baseline"}
}

// findInstall walks up from dir looking for the install folder.
func (l Locator) findInstall(dir string) (string, bool) {
	for {
		for _, pkg := range l.packageNames() {
			p := filepath.Join(dir, filepath.FromSlash(InstallDir), pkg, "bin", "opencode")
			if _, err := checkExecutable(p, ""); err == nil {
				return p, true
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

func checkExecutable(p, from string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("opencode binary %s (from %s): %w", p, from, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("opencode binary %s (from %s): %w; run `make setup`", p, from, err)
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("opencode binary %s (from %s): not an executable file", p, from)
	}
	return abs, nil
}
