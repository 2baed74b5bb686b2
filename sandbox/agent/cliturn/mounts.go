package cliturn

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/trajlab/traj/sandbox"
)

// Folders are a CLI harness's folders in its state folder (the
// trajectory's sandbox folder): its own configuration and session folder
// (CLAUDE_CONFIG_DIR, CODEX_HOME), the HOME it runs with and the folder
// its stderr files go to. The adapter's state file stays beside them,
// outside every mount: only traj writes it.
type Folders struct {
	StateDir string
	// Config is the folder name of the harness's configuration
	// ("claude", "codex").
	Config string
}

// ConfigDir, HomeDir and StderrDir are the host paths of the folders.
func (f Folders) ConfigDir() string { return filepath.Join(f.StateDir, f.Config) }
func (f Folders) HomeDir() string   { return filepath.Join(f.StateDir, "home") }
func (f Folders) StderrDir() string { return filepath.Join(f.StateDir, "stderr") }

// Mounts creates the folders and returns what an isolated sandbox shows
// of the harness: its binary read-only at /opt/NAME/bin/BASE, its
// configuration, HOME and stderr folders (written by the harness) at
// /opt/NAME/config, /opt/NAME/home and /opt/NAME/stderr. The adapter sets
// HOME to the home folder: the sandbox's own HOME is a private tmpfs
// (a container refuses a second mount at its path). Nothing else of the
// state folder is shown.
func (f Folders) Mounts(name, binary string) ([]sandbox.Mount, error) {
	for _, d := range []string{f.ConfigDir(), f.HomeDir(), f.StderrDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("%s state folder: %w", name, err)
		}
	}
	opt := "/opt/" + name
	var out []sandbox.Mount
	if binary != "" {
		out = append(out, sandbox.Mount{Host: binary, Inside: opt + "/bin/" + filepath.Base(binary)})
	}
	return append(out,
		sandbox.Mount{Host: f.ConfigDir(), Inside: opt + "/config", Writable: true},
		sandbox.Mount{Host: f.StderrDir(), Inside: opt + "/stderr", Writable: true},
		sandbox.Mount{Host: f.HomeDir(), Inside: opt + "/home", Writable: true}), nil
}
