package replay

import (
	"errors"
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

// errHeaderRead stops ReadTraceHeader's scan once the header is read.
var errHeaderRead = errors.New("header read")

// ReadTraceHeader reads only the top-level fields that come before an
// agent_trace.json's turns (trace.Header), for commands that then stream
// the parts themselves. Turns is empty.
func ReadTraceHeader(path string) (*trace.Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open trace: %w", err)
	}
	defer f.Close()
	var h trace.Header
	err = trace.Scan(f, trace.Visitor{OnHeader: func(got *trace.Header) error {
		h = *got
		return errHeaderRead
	}})
	if err != nil && !errors.Is(err, errHeaderRead) {
		return nil, fmt.Errorf("read trace %s: %w", path, err)
	}
	return &trace.Trace{
		SchemaVersion: h.SchemaVersion, TrajectoryID: h.TrajectoryID, SessionID: h.SessionID,
		Agent: h.Agent, AgentModel: h.AgentModel, StartedAt: h.StartedAt,
		Task: h.Task, Environment: h.Environment, Capture: h.Capture, Turns: []trace.Turn{},
	}, nil
}
