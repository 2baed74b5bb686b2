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

// ReadTraceOutline reads an agent_trace.json keeping, of each part, only
// what replay's checks and checkout read: its index, time, session, type,
// git_commit and repo_checkpoint (without the changed-file lists). Turns
// and the top-level fields are kept whole. The parts' payloads (content,
// sessions, messages, run_tests results) are dropped as the trace streams
// by, so memory grows with the number of parts (~200 bytes each), not
// with their size: verify and checkout-part of a 50,000-part, 200 MB trace
// hold ~10 MB of it instead of ~500 MB.
func ReadTraceOutline(path string) (*trace.Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open trace: %w", err)
	}
	defer f.Close()
	tr, err := trace.ReadKeeping(f, func(p *trace.Part) trace.Part {
		o := trace.Part{Part: p.Part, Timestamp: p.Timestamp, GitCommit: p.GitCommit, SessionID: p.SessionID, PartType: p.PartType}
		if cp := p.RepoCheckpoint; cp != nil {
			o.RepoCheckpoint = &trace.RepoCheckpoint{CommitBefore: cp.CommitBefore, CommitAfter: cp.CommitAfter, Committed: cp.Committed, AgentGitHead: cp.AgentGitHead}
		}
		return o
	})
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
