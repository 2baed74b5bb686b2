package experiment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/trajlab/traj/orchestrator/folder"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/location"
	"github.com/trajlab/traj/trace/store/ref"
)

// Where is where an experiment's trajectories live: the store and the
// local work folder (trajectory folders with run.json, sandboxes), as
// traj run chooses them.
type Where struct {
	Store    store.Store
	StoreURL string
	WorkDir  string
}

// Open opens the spec's store (or storeURL when given) and resolves the
// work folder the way traj run does.
func Open(ctx context.Context, s *Spec, storeURL string) (*Where, error) {
	if storeURL == "" {
		storeURL = s.Store
	}
	raw := location.Choose(storeURL, os.Getenv)
	work := s.WorkDir
	if work == "" {
		work = os.Getenv("TRAJ_WORK_DIR")
	}
	if work == "" {
		work = location.Default
		switch location.Scheme(raw) {
		case "":
			work = raw
		case "file":
			if p, err := location.FilePath(raw); err == nil {
				work = p
			}
		}
	}
	abs, err := filepath.Abs(work)
	if err != nil {
		return nil, fmt.Errorf("work dir %q: %w", work, err)
	}
	st, err := location.Open(ctx, raw, location.Options{})
	if err != nil {
		return nil, err
	}
	return &Where{Store: st, StoreURL: raw, WorkDir: abs}, nil
}

// TrajectoryDir is the local folder of trajectory id.
func (w *Where) TrajectoryDir(id string) string {
	return filepath.Join(w.WorkDir, filepath.FromSlash(store.TrajectoryPrefix(id)))
}

// LocalDir is the experiment's own local folder (logs, submissions).
func (w *Where) LocalDir(name string) string {
	return filepath.Join(w.WorkDir, "experiments", name)
}

// Attempt is what the store and the work folder say about one trajectory.
type Attempt struct {
	ID string `json:"trajectory_id"`
	N  int    `json:"attempt"`
	// Started: a trace, chunks or a run.json exist.
	Started bool `json:"started"`
	// Reason is session_end's reason; "" while unfinished.
	Reason string `json:"end_reason,omitempty"`
	Detail string `json:"end_detail,omitempty"`
	// Running: run.json names a live recording process on this machine.
	Running bool     `json:"running,omitempty"`
	Parts   int      `json:"parts"`
	Cost    *float64 `json:"cost,omitempty"`
	// RunState is run.json when this machine has it.
	RunState *folder.RunState `json:"-"`
}

// Action is what a slot needs next.
type Action string

// Actions.
const (
	ActStart  Action = "start"  // no attempt yet
	ActResume Action = "resume" // the latest attempt died or was interrupted
	ActRetry  Action = "retry"  // the latest attempt failed: a new attempt
	ActWait   Action = "wait"   // a live process records the latest attempt
	ActDone   Action = "done"   // ended, not a failure
	ActFailed Action = "failed" // failed, attempts exhausted
)

// Slot is one cell and its attempts.
type Slot struct {
	Cell     Cell      `json:"cell"`
	Attempts []Attempt `json:"attempts"`
	Next     Action    `json:"next"`
	// NextID is the trajectory the next action runs.
	NextID string `json:"next_id,omitempty"`
}

// Latest is the newest attempt, or nil.
func (s *Slot) Latest() *Attempt {
	if len(s.Attempts) == 0 {
		return nil
	}
	return &s.Attempts[len(s.Attempts)-1]
}

// Inspect reads the state of every attempt of cell c and decides the next
// action under the spec's relaunch policy.
func Inspect(ctx context.Context, w *Where, s *Spec, c Cell) (*Slot, error) {
	slot := &Slot{Cell: c}
	for n := 1; n <= s.Relaunch.MaxAttempts; n++ {
		a, err := inspectAttempt(ctx, w, c.AttemptID(n))
		if err != nil {
			return nil, err
		}
		if !a.Started {
			break
		}
		a.N = n
		slot.Attempts = append(slot.Attempts, *a)
	}
	last := slot.Latest()
	switch {
	case last == nil:
		slot.Next, slot.NextID = ActStart, c.AttemptID(1)
	case last.Running:
		slot.Next, slot.NextID = ActWait, last.ID
	case last.Reason == "" || last.Reason == trace.EndInterrupted:
		slot.Next, slot.NextID = ActResume, last.ID
	case slices.Contains(s.Relaunch.On, last.Reason) && last.N < s.Relaunch.MaxAttempts:
		slot.Next, slot.NextID = ActRetry, c.AttemptID(last.N+1)
	case slices.Contains(s.Relaunch.On, last.Reason):
		slot.Next = ActFailed
	default:
		slot.Next = ActDone
	}
	return slot, nil
}

// summaryFields are the fields of a trajectory's summary.json the
// experiment reads (the file is written by the report package).
type summaryFields struct {
	Parts     int      `json:"parts"`
	EndReason string   `json:"end_reason"`
	EndDetail string   `json:"end_detail"`
	Cost      *float64 `json:"cost"`
	TraceSize int64    `json:"trace_size"`
}

func inspectAttempt(ctx context.Context, w *Where, id string) (*Attempt, error) {
	a := &Attempt{ID: id}
	if rs, err := folder.ReadRunState(filepath.Join(w.TrajectoryDir(id), store.RunStateName)); err == nil {
		a.Started, a.RunState = true, &rs
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("attempt %s: %w", id, err)
	}
	// In the store by ref's one rule: a trace, or the chunks of one that
	// never got its final upload.
	l, inStore, err := ref.Lookup(ctx, w.Store, id)
	if err != nil {
		return nil, err
	}
	a.Started = a.Started || inStore
	if l.HasTrace {
		if err := readEnd(ctx, w.Store, id, l.Trace.Size, a); err != nil {
			return nil, err
		}
	}
	if a.RunState != nil && a.RunState.Status == "running" && a.Reason == "" {
		if l, err := folder.Locate(ctx, folder.LocateOptions{ID: id, WorkDir: w.WorkDir, StoreImpl: w.Store}); err == nil {
			a.Running = l.Running()
		}
	}
	return a, nil
}

// readEnd fills a's end from summary.json when it describes the current
// trace (same size), else from the trace itself.
func readEnd(ctx context.Context, st store.Store, id string, traceSize int64, a *Attempt) error {
	var sum summaryFields
	err := st.Load(ctx, store.SummaryKey(id), func(r io.Reader) error {
		sum = summaryFields{}
		return json.NewDecoder(r).Decode(&sum)
	})
	if err == nil && sum.TraceSize == traceSize && sum.EndReason != "" && sum.EndReason != "running" {
		a.Reason, a.Detail, a.Parts, a.Cost = sum.EndReason, sum.EndDetail, sum.Parts, sum.Cost
		return nil
	}
	err = st.Load(ctx, store.TraceKey(id), func(r io.Reader) error {
		s, err := trace.Summarize(r)
		if err != nil {
			return err
		}
		a.Reason, a.Detail, a.Parts, a.Cost = s.EndReason, s.EndDetail, s.Parts, s.Cost
		return nil
	})
	if err != nil {
		// A trace torn or unreadable mid-run counts as unfinished: resume
		// repairs or refuses it with its own message.
		a.Reason = ""
	}
	return nil
}
