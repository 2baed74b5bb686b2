package replay

import (
	"fmt"
	"os"

	"github.com/trajlab/traj/trace"
)

// ReadTraceFile reads an agent_trace.json from disk (traj's or the
// original recorder's shape).
func ReadTraceFile(path string) (*trace.Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open trace: %w", err)
	}
	defer f.Close()
	tr, err := trace.Read(f)
	if err != nil {
		return nil, fmt.Errorf("read trace %s: %w", path, err)
	}
	return tr, nil
}
