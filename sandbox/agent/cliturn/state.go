package cliturn

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/trajlab/traj/trace/atomicfile"
)

// LoadState reads the adapter's state file dir/name into v; a missing file
// leaves v as it is (a new trajectory).
func LoadState(dir, name string, v any) error {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	return nil
}

// SaveState writes v to dir/name atomically: a kill leaves the old or the
// new state, never a torn one.
func SaveState(dir, name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return atomicfile.WriteBytes(filepath.Join(dir, name), b)
}

// RewriteConfig makes path (a harness's configuration, in a folder the
// agent can write) hold exactly data, so nothing the agent wrote there
// survives into the next turn. A regular file that already holds data is
// left alone: an agent that filled its capped disk does not fail the next
// turn. Anything else is replaced, never written through: the agent may
// have left a symlink to a host file there, and traj writes as root.
func RewriteConfig(path string, data []byte) error {
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() && fi.Size() == int64(len(data)) {
		if b, err := os.ReadFile(path); err == nil && string(b) == string(data) {
			return nil
		}
	}
	if err := atomicfile.WriteBytes(path, data); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}
