package recovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/trajlab/traj/orchestrator"
	"github.com/trajlab/traj/orchestrator/folder"
	"github.com/trajlab/traj/orchestrator/secret"
	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/sandbox/harness"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/gitstate"
	"github.com/trajlab/traj/trace/store"
)

// FinalizeOptions tune Finalize.
type FinalizeOptions struct {
	// Reason is session_end.reason (default interrupted).
	Reason string
	// Detail goes into session_end.detail (default: says the trajectory
	// was finalized after its recording process stopped).
	Detail string
	// Now is the clock (default time.Now).
	Now    func() time.Time
	Logger *slog.Logger
}

// FinalizeResult is what Finalize did.
type FinalizeResult struct {
	orchestrator.Result
	// AlreadyFinished: the trace had its session_end; only the run state
	// and the uploads were brought up to date.
	AlreadyFinished bool
	Sync            SyncReport
}

// Finalize closes a trajectory that will not continue, typically one whose
// `traj run` was killed: a final checkpoint of the workspace (or, when the
// workspace is gone, the repository rebuilt from the history bundles),
// repo.bundle, session_end with reason interrupted, run.json marked
// finished, and every object uploaded (see Sync). It refuses a trajectory
// whose recording process is alive. Inputs it cannot read make it fail
// before anything is written.
func Finalize(ctx context.Context, l *folder.Located, opts FinalizeOptions) (*FinalizeResult, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Reason == "" {
		opts.Reason = trace.EndInterrupted
	}
	if opts.Detail == "" {
		opts.Detail = "finalized after the recording process stopped (traj trace finalize)"
	}
	if err := l.CheckNotRunning(); err != nil {
		return nil, err
	}
	if l.State.SandboxDir != "" && l.State.Workspace != "" {
		unmount, err := orchestrator.AttachWorkspace(ctx, l.State.SandboxDir, l.State.Workspace, opts.Logger)
		if err != nil {
			return nil, fmt.Errorf("finalize %s: %w", l.ID, err)
		}
		defer unmount()
	}
	res := &FinalizeResult{Result: orchestrator.Result{TrajectoryID: l.ID, Dir: l.Dir, Workspace: l.State.Workspace}}
	if err := recoverTrace(l, opts.Logger); err != nil {
		return nil, fmt.Errorf("finalize %s: %w", l.ID, err)
	}
	// Everything that only reads comes first, so a failure changes nothing.
	sum, err := scanTrace(l.TracePath())
	if err != nil {
		return nil, fmt.Errorf("finalize %s: read trace %s: %w", l.ID, l.TracePath(), err)
	}
	if sum.finished {
		res.AlreadyFinished = true
		if err := finishedState(l, sum); err != nil {
			return nil, err
		}
	} else if err := finalizeTrace(ctx, l, sum, opts, res); err != nil {
		return nil, err
	}
	sr, err := Sync(ctx, l, opts.Logger)
	res.Sync = sr
	for _, f := range sr.Failed {
		res.NotUploaded = append(res.NotUploaded, f.Key)
	}
	if err != nil {
		return res, err
	}
	return res, nil
}

// finalizeTrace closes the unfinished trace sum describes: the workspace
// (or a rebuilt repository) is opened before anything is written.
func finalizeTrace(ctx context.Context, l *folder.Located, sum *traceSummary, opts FinalizeOptions, res *FinalizeResult) error {
	var rules trace.CaptureRules
	if sum.capture != nil {
		rules = *sum.capture
	}
	repo, cleanup, err := historyRepo(ctx, l, sum.lastCommit, rules)
	if err != nil {
		return fmt.Errorf("finalize %s: %w", l.ID, err)
	}
	defer cleanup()

	w, err := trace.OpenForAppend(l.TracePath(), trace.WriterOptions{Logger: opts.Logger})
	if err != nil {
		return fmt.Errorf("finalize %s: %w", l.ID, err)
	}
	defer w.Close()
	final := w.LastCommit()
	if repo.workspace {
		cp, err := repo.Checkpoint(ctx, w.LastPart())
		if err != nil {
			return fmt.Errorf("finalize %s: final checkpoint: %w", l.ID, err)
		}
		final = cp.CommitAfter
	}
	var (
		tok  trace.Tokens
		cost float64
	)
	if t := sum.usage.Tokens(); t != nil {
		tok = *t
	}
	if c := sum.usage.Cost(); c != nil {
		cost = *c
	}
	end := trace.SessionEnd{Reason: opts.Reason, FinalGitCommit: final, EndedAt: trace.Timestamp(opts.Now()),
		Detail: opts.Detail, Tokens: &tok, Cost: &cost}
	if claims := sum.usage.Claims(); claims != nil {
		// Parts name the model gateway's calls: its record's sums are the
		// totals, the harness's beside, the rest unattributed.
		var htok trace.Tokens
		var hcost float64
		if t := sum.usage.HarnessTokens(); t != nil {
			htok = *t
		}
		if c := sum.usage.HarnessCost(); c != nil {
			hcost = *c
		}
		if err := orchestrator.GatewayTotals(&end, filepath.Join(l.Dir, store.ModelCallsName), htok, hcost, claims); err != nil {
			opts.Logger.Warn("model-call record: totals stay the parts'", "err", err)
		}
	}
	artifacts, err := folder.CloseTrace(ctx, w, repo.Repo, l.Store, l.ID, l.Dir, &end, opts.Logger)
	if err != nil {
		return fmt.Errorf("finalize %s: %w", l.ID, err)
	}
	res.End, res.Artifacts = end, artifacts
	keepLogs(l, opts.Logger)
	l.State.Finished(end)
	return folder.WriteRunState(l.Dir, l.State)
}

// keepLogs copies the services' logs of a run that died before it could
// copy them itself into the trajectory's logs/, secrets redacted (the
// harness's secret files left in the sandbox, store credentials, the values of
// the API-key variables run.json names).
func keepLogs(l *folder.Located, log *slog.Logger) {
	dst := filepath.Join(l.Dir, filepath.FromSlash(store.LogsDir))
	if ents, _ := os.ReadDir(dst); len(ents) > 0 || l.State.SandboxDir == "" {
		return
	}
	secrets := secret.Gather(l.State.APIKeyEnvs, os.Getenv)
	if h, err := harness.Lookup(l.State.Agent); err == nil {
		for _, f := range h.SecretFiles(l.State.SandboxDir) {
			if b, err := os.ReadFile(f); err == nil {
				secrets = append(secrets, strings.TrimSpace(string(b)))
			}
		}
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		log.Warn("keep logs", "err", err)
		return
	}
	secret.CopyLogs(sandbox.LogsDir(l.State.SandboxDir), dst, secrets, log)
}

// recoverTrace puts the last good copy of the trace back when the trace
// was changed behind its writer (the writer kept that copy in the shadow)
// or the shadow holds a complete part more (killed mid-append).
func recoverTrace(l *folder.Located, log *slog.Logger) error {
	ok, err := trace.RecoverFromShadow(l.TracePath())
	if err != nil {
		return err
	}
	if ok {
		log.Warn("trace restored from its last good copy (the shadow)", "trace", l.TracePath())
	}
	return nil
}

// finishedState brings run.json up to date with a trace that already has
// its session_end, sum (the process died between the two writes).
func finishedState(l *folder.Located, sum *traceSummary) error {
	if l.State.Status == "finished" {
		return nil
	}
	l.State.Finished(trace.SessionEnd{EndedAt: sum.endedAt, Reason: sum.reason})
	return folder.WriteRunState(l.Dir, l.State)
}

// traceFinished reports whether the trace has its session_end.
func traceFinished(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	fin := false
	err = trace.Scan(f, trace.Visitor{OnEnd: func(t *trace.Trace) error { fin = t.SessionEnd != nil; return nil }})
	if err != nil {
		return false, fmt.Errorf("read trace %s: %w", path, err)
	}
	return fin, nil
}

// traceSummary is what resume and finalize need from a recorded trace.
type traceSummary struct {
	parts, turns int
	lastCommit   string
	// usage is the trajectory's totals (session_end's when finished).
	usage trace.Usage
	calls []trace.EnvoiCall
	// groundTruth are the ground-truth results recorded, in order.
	groundTruth []trace.GroundTruth
	// lastTurnOpen: the last turn has no ended_at (the process died in it).
	lastTurnOpen bool
	finished     bool
	// reason and endedAt are session_end's when finished.
	reason, endedAt string
	// capture is the header's capture rules (nil in older traces).
	capture *trace.CaptureRules
}

func scanTrace(path string) (*traceSummary, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s := &traceSummary{}
	err = trace.Scan(f, trace.Visitor{
		OnHeader: func(h *trace.Header) error {
			s.capture = h.Capture
			return nil
		},
		OnPart: func(_ int, p *trace.Part) error {
			s.parts = p.Part
			s.lastCommit = p.GitCommit
			s.usage.AddPart(p)
			s.calls = append(s.calls, p.EnvoiCalls...)
			s.groundTruth = append(s.groundTruth, p.GroundTruth...)
			return nil
		},
		OnTurn: func(_ int, t *trace.Turn) error {
			s.turns++
			s.lastTurnOpen = t.EndedAt == ""
			return nil
		},
		OnEnd: func(t *trace.Trace) error {
			s.usage.End(t.SessionEnd)
			if s.finished = t.SessionEnd != nil; s.finished {
				s.reason, s.endedAt = t.SessionEnd.Reason, t.SessionEnd.EndedAt
				s.groundTruth = append(s.groundTruth, t.SessionEnd.GroundTruth...)
			}
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// workRepo is the repository a finalize or resume works from.
type workRepo struct {
	*gitstate.Repo
	// workspace: the agent's own workspace (else a clone from the history
	// bundles in a temp folder).
	workspace bool
}

// historyRepo opens the trajectory's checkpoint history with its workspace
// when both are there (rules: the capture rules the trace names), else
// rebuilds the history from the history bundles (the trajectory folder's
// history/, else the store's) in a temp folder removed by cleanup.
// lastCommit, the trace's last commit, must be in it.
func historyRepo(ctx context.Context, l *folder.Located, lastCommit string, rules trace.CaptureRules) (*workRepo, func(), error) {
	nop := func() {}
	if ws := l.State.Workspace; ws != "" && l.State.SandboxDir != "" {
		if repo, err := gitstate.Open(ctx, l.State.CheckpointsDir(), ws, gitstate.Options{Capture: rules}); err == nil {
			// Without its workspace the history still holds every commit;
			// only the final checkpoint is skipped.
			_, werr := os.Stat(ws)
			return &workRepo{Repo: repo, workspace: werr == nil}, nop, nil
		}
	}
	tmp, err := os.MkdirTemp("", "traj-history-")
	if err != nil {
		return nil, nop, err
	}
	cleanup := func() { os.RemoveAll(tmp) }
	bundles, err := folder.HistoryBundles(ctx, l, filepath.Join(tmp, "bundles"))
	if err != nil {
		cleanup()
		return nil, nop, err
	}
	repo, err := folder.CloneBundles(ctx, filepath.Join(tmp, "repo"), lastCommit, bundles)
	if errors.Is(err, gitstate.ErrUnknownCommit) && lastCommit != "" {
		// The last part's commit never reached a bundle (killed in
		// between): keep the newest history there is.
		repo, err = folder.CloneBundles(ctx, filepath.Join(tmp, "repo2"), "", bundles)
	}
	if err != nil {
		cleanup()
		return nil, nop, fmt.Errorf("workspace %s is gone; rebuild it from the history bundles: %w", l.State.Workspace, err)
	}
	return &workRepo{Repo: repo}, cleanup, nil
}
