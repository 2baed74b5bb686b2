package sweep

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/trajlab/traj/orchestrator/experiment"
	"github.com/trajlab/traj/replay/githistory"
	"github.com/trajlab/traj/replay/report"
	"github.com/trajlab/traj/replay/rerun"
	"github.com/trajlab/traj/replay/sweepvalue"
	"github.com/trajlab/traj/sandbox/harness"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/location"
	"github.com/trajlab/traj/trace/store/ref"
)

// Executors.
const (
	ExecLocal = "local"
	ExecSlurm = "slurm"
)

// Request is one sweep.
type Request struct {
	// Source is the trajectory to fork (REF: an id in Store, a folder, a
	// trace file, an s3:// URL).
	Source string
	// Store is the store of the forks and the result ("": TRAJ_STORE, else
	// ./runs); WorkDir the local folder of their trajectory folders and
	// sandboxes (as traj run --work-dir).
	Store   string
	WorkDir string
	// Name is the sweep's experiment name (default <source>-sweep).
	Name string
	// At are the parts to fork at; Every, when > 0, sweeps every Every-th
	// part instead (Every, 2·Every, … up to the source's last).
	At    []int
	Every int
	// Model, Script and Prompt: the forks' model after the fork point
	// (default the source's), its script (scripted models) and the message
	// opening the next turn.
	Model  string
	Script string
	Prompt string
	// Repeats forks at each part; MaxParts each fork's part budget
	// (inherited parts count).
	Repeats  int
	MaxParts int
	// Timeout bounds each fork ("": traj run's, the source's).
	Timeout string
	// Sandbox is each fork's provider ("": the source's unless local).
	Sandbox string
	// Run are more traj run flags given to every fork (e.g. tests-dir).
	Run map[string]string
	// Executor is ExecLocal (default) or ExecSlurm; Parallel the local
	// forks at once (default: experiment.DefaultParallel); Slurm the
	// array's sbatch settings; Poll how often the Slurm wait asks squeue.
	Executor string
	Parallel int
	Slurm    experiment.Slurm
	Poll     time.Duration
	// TrajBin is the traj executable the forks run.
	TrajBin string
	// Events receives the forks' progress (may be nil).
	Events func(experiment.Event)
	Logger *slog.Logger
}

// ErrRequest marks a request that cannot be run as asked (parts past the
// source's, none to fork at): the caller's mistake, not a failure.
var ErrRequest = errors.New("bad sweep request")

// ParseAt reads --at: "P1,P2,…" or "every:N".
func ParseAt(s string) (at []int, every int, err error) {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(s, "every:"); ok {
		n, err := strconv.Atoi(strings.TrimSpace(rest))
		if err != nil || n <= 0 {
			return nil, 0, fmt.Errorf("--at %q: want every:N with N > 0", s)
		}
		return nil, n, nil
	}
	for _, f := range strings.Split(s, ",") {
		p, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || p <= 0 {
			return nil, 0, fmt.Errorf("--at %q: want parts P1,P2,… (> 0) or every:N", s)
		}
		at = append(at, p)
	}
	return at, 0, nil
}

// Outcome is a finished sweep: the result (also in the store) and the
// forks that did not run to an end.
type Outcome struct {
	Result *sweepvalue.Result
	// Unfinished lists forks whose slot stopped with an error or never
	// ended.
	Unfinished []string
}

// Print writes the sweep's value table to stdout and, to stderr, each
// fork whose prefix was not reproduced and each that did not end; it
// reports whether every fork ended reproduced (`traj sweep` exits 3
// otherwise).
func (o *Outcome) Print(stdout, stderr io.Writer) (complete bool, err error) {
	if err := report.WriteSweepText(stdout, o.Result); err != nil {
		return false, err
	}
	complete = len(o.Unfinished) == 0
	for _, f := range o.Result.Forks {
		if !f.PrefixOK {
			complete = false
			fmt.Fprintf(stderr, "traj: fork %s: prefix not reproduced: %s%s\n", f.ID, f.Divergence, f.Error)
		}
	}
	for _, u := range o.Unfinished {
		fmt.Fprintln(stderr, "traj: "+u)
	}
	return complete, nil
}

// Run runs the sweep and stores its result.
func Run(ctx context.Context, req Request) (*Outcome, error) {
	if req.Logger == nil {
		req.Logger = slog.New(slog.DiscardHandler)
	}
	if req.Repeats <= 0 || req.MaxParts <= 0 {
		return nil, fmt.Errorf("sweep: repeats and max parts must be > 0: %w", ErrRequest)
	}
	storeURL := location.Choose(req.Store, os.Getenv)
	src, err := openSource(ctx, req.Source, storeURL)
	if err != nil {
		return nil, err
	}
	at, err := parts(req, src.parts)
	if err != nil {
		return nil, err
	}
	spec, w, flags, err := writeSpec(ctx, req, src, storeURL, at)
	if err != nil {
		return nil, err
	}
	r := &experiment.Runner{Spec: spec, Where: w, TrajBin: req.TrajBin, Flags: flags, Events: req.Events, Logger: req.Logger}
	out := &Outcome{}
	switch req.Executor {
	case "", ExecLocal:
		parallel := req.Parallel
		if parallel <= 0 {
			parallel = experiment.DefaultParallel(spec)
		}
		o, err := experiment.RunLocal(ctx, r, parallel)
		if err != nil {
			return nil, err
		}
		out.Unfinished = o.SortedErrs()
	case ExecSlurm:
		if err := runSlurm(ctx, r, req.Poll); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("sweep: executor %q: want local or slurm", req.Executor)
	}
	forks, unfinished, err := collect(ctx, r, src)
	if err != nil {
		return nil, err
	}
	out.Unfinished = append(out.Unfinished, unfinished...)
	res := &sweepvalue.Result{Version: sweepvalue.Version, Name: spec.Name, Source: src.ref.ID, SourceParts: src.parts,
		Harness: spec.Matrix.Harnesses[0], Model: spec.Matrix.Models[0], Script: spec.Run["script"], Prompt: req.Prompt,
		Repeats: req.Repeats, MaxParts: req.MaxParts, Executor: cmp.Or(req.Executor, ExecLocal),
		CreatedAt: time.Now().UTC().Format(time.RFC3339), Forks: forks}
	res.Rows, res.Decisive = sweepvalue.Summarize(forks)
	if err := sweepvalue.Save(ctx, w.Store, res); err != nil {
		return nil, err
	}
	out.Result = res
	return out, nil
}

// source is the trajectory swept.
type source struct {
	ref    *ref.Trajectory
	trace  string
	header trace.Header
	parts  int
	// forkRef is how the forks name it (traj run --fork).
	forkRef string
	side    rerun.Side
}

func openSource(ctx context.Context, r, storeURL string) (*source, error) {
	rt, err := ref.Resolve(ctx, r, storeURL, ref.Options{})
	if err != nil {
		return nil, err
	}
	src := &source{ref: rt, forkRef: r}
	if rt.Dir != "" { // a folder or trace file: the forks run elsewhere
		if abs, err := filepath.Abs(r); err == nil {
			src.forkRef = abs
		}
	}
	if src.trace, _, err = rt.TracePath(ctx); err != nil {
		return nil, fmt.Errorf("sweep %s: %w", rt.ID, err)
	}
	f, err := os.Open(src.trace)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	err = trace.Scan(f, trace.Visitor{
		OnHeader: func(h *trace.Header) error { src.header = *h; return nil },
		OnPart:   func(int, *trace.Part) error { src.parts++; return nil },
	})
	if err != nil {
		return nil, fmt.Errorf("sweep %s: read trace: %w", rt.ID, err)
	}
	src.side = rerun.Side{ID: rt.ID, Trace: src.trace}
	if src.side.Bundles, err = rt.BundlePaths(ctx); err != nil {
		return nil, fmt.Errorf("sweep %s: its checkpoint history: %w", rt.ID, err)
	}
	if src.side.Calls, err = rt.Fetch(ctx, rt.Prefix+store.ModelCallsName); err != nil {
		return nil, fmt.Errorf("sweep %s: its model calls (%s) are what a fork plays: %w", rt.ID, store.ModelCallsName, err)
	}
	return src, nil
}

// parts are the swept parts: req.At, or every req.Every-th part, checked
// against the source's n parts.
func parts(req Request, n int) ([]int, error) {
	if req.Every > 0 {
		var at []int
		for p := req.Every; p <= n; p += req.Every {
			at = append(at, p)
		}
		if len(at) == 0 {
			return nil, fmt.Errorf("sweep: every:%d: the source has %d parts: %w", req.Every, n, ErrRequest)
		}
		return at, nil
	}
	if len(req.At) == 0 {
		return nil, fmt.Errorf("sweep: no part to fork at: %w", ErrRequest)
	}
	at := slices.Clone(req.At)
	slices.Sort(at)
	at = slices.Compact(at)
	if last := at[len(at)-1]; last > n {
		return nil, fmt.Errorf("sweep: part %d: the source has %d parts: %w", last, n, ErrRequest)
	}
	return at, nil
}

// writeSpec writes the sweep's experiment spec into the experiment's
// local folder and loads it back (so it is checked as any spec, and a
// Slurm task reads the same file).
func writeSpec(ctx context.Context, req Request, src *source, storeURL string, at []int) (*experiment.Spec, *experiment.Where, map[string]bool, error) {
	h, _, ok := harness.Recorded(src.header.Agent)
	if !ok {
		return nil, nil, nil, fmt.Errorf("sweep %s: traj does not know its harness %q", src.ref.ID, src.header.Agent)
	}
	name := req.Name
	if name == "" {
		name = strings.TrimRight(trimTo(src.ref.ID, 40), "-.") + "-sweep"
	}
	model := cmp.Or(req.Model, src.header.AgentModel)
	task := cmp.Or(src.header.Task, "task")
	run := map[string]string{}
	for k, v := range req.Run {
		run[k] = v
	}
	if req.Script != "" {
		abs, err := filepath.Abs(req.Script)
		if err != nil {
			return nil, nil, nil, err
		}
		run["script"] = abs
	}
	spec := map[string]any{
		"name":     name,
		"store":    storeURL,
		"matrix":   map[string]any{"harnesses": []string{h.Name}, "models": []string{model}, "tasks": []string{task}, "repeats": req.Repeats},
		"fork":     map[string]any{"from": src.forkRef, "at": at, "prompt": req.Prompt},
		"budget":   map[string]any{"max_parts": req.MaxParts},
		"relaunch": map[string]any{"max_attempts": 1},
	}
	if req.Timeout != "" {
		spec["budget"].(map[string]any)["timeout"] = req.Timeout
	}
	if req.WorkDir != "" {
		abs, err := filepath.Abs(req.WorkDir)
		if err != nil {
			return nil, nil, nil, err
		}
		spec["work_dir"] = abs
	}
	if req.Sandbox != "" {
		spec["sandbox"] = req.Sandbox
	}
	if len(run) > 0 {
		spec["run"] = run
	}
	if req.Slurm.Time != "" || req.Slurm.Partition != "" || req.Slurm.Account != "" || req.Slurm.MaxActive > 0 || len(req.Slurm.Args) > 0 {
		spec["slurm"] = req.Slurm
	}
	b, err := yaml.Marshal(spec)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("sweep spec: %w", err)
	}
	probe, err := experiment.Parse("sweep.yaml", b)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("sweep spec: %w", err)
	}
	w, err := experiment.Open(ctx, probe, "")
	if err != nil {
		return nil, nil, nil, err
	}
	path := filepath.Join(w.LocalDir(name), "sweep.yaml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, nil, nil, fmt.Errorf("make sweep folder: %w", err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return nil, nil, nil, fmt.Errorf("write sweep spec: %w", err)
	}
	s, err := experiment.Load(path)
	if err != nil {
		return nil, nil, nil, err
	}
	flags, err := experiment.RunFlags(ctx, req.TrajBin)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := s.CheckRunFlags(flags); err != nil {
		return nil, nil, nil, err
	}
	return s, w, flags, nil
}

func trimTo(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// runSlurm submits the forks that need work as a job array and waits
// until none is queued; slots left unfinished by a task that died are
// submitted again, three rounds at most.
func runSlurm(ctx context.Context, r *experiment.Runner, poll time.Duration) error {
	if poll <= 0 {
		poll = 10 * time.Second
	}
	if err := experiment.SaveRecord(ctx, r.Where, r.Spec); err != nil {
		return err
	}
	for round := 0; round < 3; round++ {
		slots, err := inspectAll(ctx, r)
		if err != nil {
			return err
		}
		sub, err := experiment.SubmitSlurm(ctx, r, slots, "")
		if err != nil {
			return err
		}
		if sub != nil {
			r.Logger.Info("sweep submitted", "job", sub.JobID, "forks", len(sub.Cells))
		}
		for {
			q, err := experiment.QueueState(ctx, r.Where, r.Spec)
			if err != nil {
				return err
			}
			if len(q) == 0 {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(poll):
			}
		}
		if sub == nil {
			return nil
		}
	}
	return nil
}

func inspectAll(ctx context.Context, r *experiment.Runner) ([]*experiment.Slot, error) {
	var slots []*experiment.Slot
	for _, c := range r.Spec.Cells() {
		s, err := experiment.Inspect(ctx, r.Where, r.Spec, c)
		if err != nil {
			return nil, err
		}
		slots = append(slots, s)
	}
	return slots, nil
}

// collect reads every fork: its fork point, value and whether its prefix
// is the source's.
func collect(ctx context.Context, r *experiment.Runner, src *source) ([]sweepvalue.Fork, []string, error) {
	slots, err := inspectAll(ctx, r)
	if err != nil {
		return nil, nil, err
	}
	var forks []sweepvalue.Fork
	var unfinished []string
	for _, slot := range slots {
		f := sweepvalue.Fork{At: slot.Cell.ForkAt, Repeat: slot.Cell.Repeat, ID: slot.Cell.ID}
		a := slot.Latest()
		if a == nil || !a.Started {
			f.Error = "never started"
			unfinished = append(unfinished, fmt.Sprintf("%s: never started", f.ID))
			forks = append(forks, f)
			continue
		}
		f.ID, f.End = a.ID, a.Reason
		if a.Reason == "" {
			unfinished = append(unfinished, fmt.Sprintf("%s: did not end (%s)", f.ID, slot.Next))
		}
		if err := readFork(ctx, r.Where.StoreURL, src, &f); err != nil {
			f.Error = err.Error()
		}
		forks = append(forks, f)
	}
	return forks, unfinished, nil
}

// readFork fills f from its trace: fork point, value, solved, and the
// comparison of its parts 1..fork point with the source's.
func readFork(ctx context.Context, storeURL string, src *source, f *sweepvalue.Fork) error {
	rt, err := ref.Resolve(ctx, f.ID, storeURL, ref.Options{})
	if err != nil {
		return err
	}
	tp, _, err := rt.TracePath(ctx)
	if err != nil {
		return err
	}
	fh, err := os.Open(tp)
	if err != nil {
		return err
	}
	tr, err := trace.Read(fh)
	fh.Close()
	if err != nil {
		return fmt.Errorf("read %s: %w", f.ID, err)
	}
	if tr.ForkedFrom == nil || tr.ForkedFrom.Part <= 0 {
		return fmt.Errorf("%s records no fork point", f.ID)
	}
	f.ForkPart = tr.ForkedFrom.Part
	f.Value, f.Solved = Value(tr, f.ForkPart)
	side := rerun.Side{ID: rt.ID, Trace: tp}
	if side.Bundles, err = rt.BundlePaths(ctx); err != nil {
		return err
	}
	rep, err := rerun.Compare(ctx, src.side, side, f.ForkPart, openTrees)
	if err != nil {
		return fmt.Errorf("compare %s with %s: %w", f.ID, src.ref.ID, err)
	}
	f.Reproduced = rep.Reproduced
	f.PrefixOK = rep.Reproduced == f.ForkPart
	if !f.PrefixOK {
		f.Divergence = rep.Summary()
	}
	return nil
}

func openTrees(ctx context.Context, bundles []string) (rerun.Trees, func(), error) {
	h, err := githistory.Open(ctx, bundles...)
	if err != nil {
		return nil, nil, err
	}
	return h, func() { _ = h.Close() }, nil
}

// Value is a fork's value from its fork point at on: the best score
// (report.TraceScores, ground truth first) standing at at or reached
// after it, and whether a result from there passed every case (nil: no
// result from there on).
func Value(tr *trace.Trace, at int) (*float64, bool) {
	s := report.TraceScores(tr).Score
	if s.Source == report.FromRunTests {
		return nil, false // the agent's claim, not ground truth
	}
	var best *float64
	from := at + 1
	if p, ok := s.At(at); ok {
		v := p.Rate
		best, from = &v, p.Part
	}
	for _, p := range s.Points {
		if p.Part > at && (best == nil || p.Rate > *best) {
			v := p.Rate
			best = &v
		}
	}
	solved := s.SolvedAt > 0 && s.SolvedAt >= from || tr.SessionEnd != nil && tr.SessionEnd.Reason == trace.EndSolved
	return best, solved
}
