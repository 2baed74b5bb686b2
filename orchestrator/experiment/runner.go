package experiment

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/trajlab/traj/orchestrator/progress"
	"github.com/trajlab/traj/sandbox/xec"
	"github.com/trajlab/traj/trace/store"
)

// Runner launches `traj run` processes for the slots of one experiment.
// Every executor uses it: the local executor for N slots at once, a Slurm
// array task or a Kubernetes pod for its one slot.
type Runner struct {
	Spec  *Spec
	Where *Where
	// TrajBin is the traj executable.
	TrajBin string
	// Flags are the flags `traj run` accepts (RunFlags).
	Flags map[string]bool
	// Events receives each child's progress events and the runner's own
	// (may be nil).
	Events func(Event)
	Logger *slog.Logger
	// Env is added to the children's environment.
	Env []string
}

// Event is a progress report of one slot.
type Event struct {
	Cell    Cell
	ID      string
	Attempt int
	Action  Action
	// Progress is a child's event; nil for the runner's own (Kind).
	Progress *progress.Event
	// Kind is "launch", "exit", "settled" (nothing to run) or "" (a
	// child's progress event).
	Kind string
	// ExitCode of the child (Kind exit), Err when it could not run.
	ExitCode int
	Err      error
	// Slot is the state after an exit.
	Slot *Slot
	// StartPart is the number of parts the trajectory had at launch.
	StartPart int
}

// A launch that leaves its slot as it was is retried MaxStalls-1 times,
// after StallPause, 2×StallPause, …
const (
	MaxStalls  = 5
	StallPause = 5 * time.Second
)

var flagRe = regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z0-9][a-z0-9-]*)`)

// RunFlags asks the traj binary which flags `traj run` accepts.
func RunFlags(ctx context.Context, trajBin string) (map[string]bool, error) {
	res, err := xec.Run(ctx, xec.Command{Path: trajBin, Args: []string{"run", "--help"}, Timeout: time.Minute, OutputLimit: 1 << 20, CombineOutput: true})
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s run --help: %w", trajBin, err)
	case res.ExitCode != 0 || res.TimedOut:
		return nil, fmt.Errorf("%s run --help: exit status %d: %s", trajBin, res.ExitCode, strings.TrimSpace(res.Stdout))
	}
	flags := map[string]bool{}
	for _, m := range flagRe.FindAllStringSubmatch(res.Stdout, -1) {
		flags[m[1]] = true
	}
	if !flags["max-parts"] {
		return nil, fmt.Errorf("%s run --help lists no --max-parts: not a traj binary?", trajBin)
	}
	return flags, nil
}

func (r *Runner) emit(ev Event) {
	if r.Events != nil {
		r.Events(ev)
	}
}

// Advance runs slot c until it needs nothing more: it starts, resumes and
// relaunches attempts as the relaunch policy says, each as its own `traj
// run` process, and returns the final state. A launch that changes nothing
// (the same action on the same trajectory again, e.g. the agent server did
// not start in time) is retried after a pause, at most MaxStalls times in a
// row; then the slot stops with an error instead of looping.
func (r *Runner) Advance(ctx context.Context, c Cell) (*Slot, error) {
	var lastAction Action
	lastID := ""
	stalls := 0
	for launched := false; ; launched = true {
		slot, err := Inspect(ctx, r.Where, r.Spec, c)
		if err != nil {
			return nil, err
		}
		switch slot.Next {
		case ActDone, ActFailed:
			if !launched {
				r.emit(Event{Cell: c, Kind: "settled", Slot: slot})
			}
			if err := r.cleanSandboxes(ctx, slot); err != nil {
				r.Logger.Warn("sandbox not removed", "err", err)
			}
			return slot, nil
		case ActWait:
			return slot, fmt.Errorf("trajectory %s is being recorded by another process (pid %d)", slot.NextID, slot.Latest().RunState.PID)
		}
		if ctx.Err() != nil {
			return slot, ctx.Err()
		}
		if slot.Next == lastAction && slot.NextID == lastID {
			stalls++
			if stalls >= MaxStalls {
				return slot, fmt.Errorf("trajectory %s: %s made no progress %d times; see %s", slot.NextID, slot.Next, stalls, r.LogPath(slot.NextID))
			}
			select {
			case <-ctx.Done():
				return slot, ctx.Err()
			case <-time.After(time.Duration(stalls) * StallPause):
			}
		} else {
			stalls = 0
		}
		lastAction, lastID = slot.Next, slot.NextID
		attempt := len(slot.Attempts)
		if slot.Next != ActResume {
			attempt++
		}
		// Failed attempts are finished: their sandboxes can go now.
		if err := r.cleanSandboxes(ctx, slot); err != nil {
			r.Logger.Warn("sandbox not removed", "err", err)
		}
		code, err := r.launch(ctx, slot, attempt)
		after, ierr := Inspect(ctx, r.Where, r.Spec, c)
		if ierr != nil {
			return nil, ierr
		}
		r.emit(Event{Cell: c, ID: slot.NextID, Attempt: attempt, Action: slot.Next, Kind: "exit", ExitCode: code, Err: err, Slot: after})
		if err != nil {
			return after, err
		}
		if ctx.Err() != nil {
			return after, ctx.Err()
		}
	}
}

// LogPath is where the output of trajectory id's traj run processes goes.
func (r *Runner) LogPath(id string) string {
	return filepath.Join(r.Where.LocalDir(r.Spec.Name), "logs", id+".log")
}

// launch runs one traj run process for the slot's next action and returns
// its exit code. A cancelled ctx sends SIGTERM (traj run then finishes the
// trajectory as interrupted); if the experiment process dies the kernel
// kills the child (Pdeathsig), and a later run resumes it.
func (r *Runner) launch(ctx context.Context, slot *Slot, attempt int) (int, error) {
	id := slot.NextID
	var args []string
	if slot.Next == ActResume {
		args = r.Spec.ResumeArgs(slot.Cell, id, r.Flags)
	} else {
		args = r.Spec.RunArgs(slot.Cell, id, r.Flags)
	}
	args = append(args, "--json")
	logPath := r.LogPath(id)
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return -1, fmt.Errorf("make log folder: %w", err)
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return -1, fmt.Errorf("open log: %w", err)
	}
	defer logf.Close()
	fmt.Fprintf(logf, "=== %s %s (attempt %d): traj %q\n", time.Now().UTC().Format(time.RFC3339), slot.Next, attempt, args)
	// Not xec.Start or xec.Run: the runner reads the child's stdout as a
	// live stream of events, and stops it with SIGTERM alone, however long
	// it takes (a `traj run` closing its trace and uploading must never get
	// a grace-period SIGKILL). It still starts by xec's rule: its own group
	// (the runner signals it whole) and death with the runner.
	cmd := exec.Command(r.TrajBin, args...)
	cmd.Env = append(os.Environ(), r.Env...)
	cmd.Stderr = logf
	cmd.SysProcAttr = xec.GroupAttr()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return -1, err
	}
	if err := cmd.Start(); err != nil {
		return -1, fmt.Errorf("start traj run for %s: %w", id, err)
	}
	start := 0
	if a := slot.Latest(); slot.Next == ActResume && a != nil {
		start = a.Parts
	}
	r.emit(Event{Cell: slot.Cell, ID: id, Attempt: attempt, Action: slot.Next, Kind: "launch", StartPart: start})
	stopped := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			_ = cmd.Process.Signal(syscall.SIGTERM)
		case <-stopped:
		}
	}()
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var ev progress.Event
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Type == "" {
			fmt.Fprintf(logf, "%s\n", sc.Bytes())
			continue
		}
		r.emit(Event{Cell: slot.Cell, ID: id, Attempt: attempt, Action: slot.Next, Progress: &ev})
	}
	_, _ = io.Copy(logf, stdout)
	err = cmd.Wait()
	close(stopped)
	code := cmd.ProcessState.ExitCode()
	fmt.Fprintf(logf, "=== exit %d\n", code)
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return code, fmt.Errorf("traj run for %s: %w", id, err)
	}
	return code, nil
}

// cleanSandboxes removes the sandboxes of the slot's finished attempts
// unless the spec keeps them (RemoveSandbox decides what is safe).
func (r *Runner) cleanSandboxes(ctx context.Context, slot *Slot) error {
	if r.Spec.KeepSandbox {
		return nil
	}
	var errs []error
	for _, a := range slot.Attempts {
		if a.Reason == "" || a.Reason == "interrupted" && slot.NextID == a.ID {
			continue
		}
		if _, err := RemoveSandbox(ctx, r.Where, a.ID); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Record is experiments/<name>/experiment.json in the store: the spec as
// written and the trajectory slots it expands to, so a report or status
// by name needs no spec file.
type Record struct {
	Name   string `json:"name"`
	Digest string `json:"spec_sha256"`
	Spec   string `json:"spec"`
	Cells  []Cell `json:"cells"`
	// MaxAttempts is the relaunch limit: attempt ids run up to it.
	MaxAttempts int `json:"max_attempts"`
}

// SaveRecord writes the experiment's record into its store.
func SaveRecord(ctx context.Context, w *Where, s *Spec) error {
	text, err := os.ReadFile(s.Path)
	if err != nil {
		return fmt.Errorf("read experiment spec: %w", err)
	}
	rec := Record{Name: s.Name, Digest: s.Digest, Spec: string(text), Cells: s.Cells(), MaxAttempts: s.Relaunch.MaxAttempts}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	if err := w.Store.Save(ctx, store.ExperimentKey(s.Name), store.Bytes(b)); err != nil {
		return fmt.Errorf("save experiment record: %w", err)
	}
	return nil
}

// LoadRecord reads experiment name's record from st.
func LoadRecord(ctx context.Context, st store.Store, name string) (*Record, error) {
	var rec Record
	err := st.Load(ctx, store.ExperimentKey(name), func(r io.Reader) error {
		rec = Record{}
		return json.NewDecoder(r).Decode(&rec)
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("experiment %q: no record in the store (run it first, or give the spec file)", name)
	}
	if err != nil {
		return nil, fmt.Errorf("read experiment record %q: %w", name, err)
	}
	return &rec, nil
}
