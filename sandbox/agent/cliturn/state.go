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
