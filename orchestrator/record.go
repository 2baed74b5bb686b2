package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/trajlab/traj/orchestrator/engine"
	"github.com/trajlab/traj/orchestrator/folder"
	"github.com/trajlab/traj/orchestrator/groundtruth"
	"github.com/trajlab/traj/orchestrator/launch"
	"github.com/trajlab/traj/orchestrator/progress"
	"github.com/trajlab/traj/orchestrator/secret"
	"github.com/trajlab/traj/orchestrator/task"
	"github.com/trajlab/traj/sandbox/gateway/model"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/gitstate"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/upload"
)

// Start is where a recording begins: a new trajectory (Run) or one that
// continues (recovery.Resume). Record takes it from there, the same way
// for both.
type Start struct {
	Task     *task.Task
	Paths    folder.Paths
	Store    store.Store
	StoreURL string
	// InPlace: the trajectory folder is the store's own folder.
	InPlace bool
	// StartedAt is the trajectory's start (a trace timestamp).
	StartedAt string
	// Recorded is what the trace already holds (zero: a new trace).
	Recorded Recorded
}

// Recorded is what an earlier recording of the trajectory left.
type Recorded struct {
	// Trace: the trace exists and is continued (else it is created).
	Trace        bool
	Parts, Turns int
	// Tokens and Cost are the trajectory's totals so far (trace.Usage).
	Tokens trace.Tokens
	Cost   float64
	// Claims are what the recorded parts claimed of each model call.
	Claims map[int]trace.Claim
	// Calls are the recorded run_tests calls, for the test status.
	Calls []trace.EnvoiCall
	// LastBundled is the newest commit already in a history bundle.
	LastBundled string
	// GroundTruth are the ground-truth results the trace holds, in order
	// (groundtruth.Options.Prior).
	GroundTruth []trace.GroundTruth
}

// lineage is the trace's forked_from (fork) or rerun_of (not), nil when
// the run is not of that kind.
func lineage(o Options, fork bool) *trace.Lineage {
	if o.Rerun == nil || (o.Rerun.ForkAt > 0) != fork {
		return nil
	}
	l := o.Rerun.Of
	if fork {
		l.Part = o.Rerun.ForkAt
	}
	return &l
}

// forkPrompt is a fork's PromptBefore: its --prompt, once, for the first
// turn that starts with the inherited parts in.
func forkPrompt(o Options) func(int) string {
	if o.Rerun == nil || o.Rerun.ForkAt == 0 || o.Rerun.Prompt == "" {
		return nil
	}
	used := false
	return func(parts int) string {
		if used || parts < o.Rerun.ForkAt {
			return ""
		}
		used = true
		return o.Rerun.Prompt
	}
}

// Record runs the recording from s: run.json, the harness, the trace
// (created or continued), the turn loop, then the final checkpoint,
// session_end, bundle and uploads.
func Record(ctx context.Context, opts Options, s Start) (res *Result, err error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	log, p := opts.Logger, s.Paths
	state, err := RunStateOf(opts, s)
	if err != nil {
		return nil, err
	}
	if err := folder.WriteRunState(p.Dir, state); err != nil {
		return nil, err
	}
	var up *upload.Uploader
	if !s.InPlace {
		up = upload.New(context.WithoutCancel(ctx), s.Store, upload.Options{PendingFile: p.PendingPath(), Logger: log})
		defer func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opts.FinishTimeout)
			defer cancel()
			if _, cerr := up.Close(cctx); cerr != nil && err == nil {
				log.Warn("close uploader", "err", cerr)
			}
		}()
	}

	env, err := launch.OpenEnvironment(ctx, opts.environments(), s.Task, opts.TestsDir)
	if err != nil {
		return nil, err
	}
	room, err := taskRoom(ctx, &opts, env, p.Workspace)
	if err != nil {
		return nil, err
	}
	// The checkpoint history is traj's, outside the workspace (made with an
	// empty commit on the first start, reopened on resume).
	repo, err := folder.OpenCheckpoints(ctx, state.CheckpointsDir(), p.Workspace, s.Task.Capture, opts.Now)
	if err != nil {
		return nil, err
	}
	if err := startCheckpoint(ctx, room, s, repo); err != nil {
		return nil, err
	}
	head, err := repo.Head()
	if err != nil {
		return nil, fmt.Errorf("open workspace: %w", err)
	}
	sc, err := newScoring(ctx, opts, s, env, repo)
	if err != nil {
		return nil, err
	}
	defer sc.close()
	// The model gateway links each call to the parts recorded before it:
	// the loop counts them into partsSoFar, the gateway reads it.
	var partsSoFar atomic.Int64
	partsSoFar.Store(int64(s.Recorded.Parts))
	tools, err := sc.tools()
	if err != nil {
		return nil, err
	}
	sc.start(ctx, opts.Reporter, opts.Now)
	lspec := launch.Spec{ID: p.ID, Workspace: p.Workspace, SandboxDir: p.Sandbox, LogDir: p.LogsDir(),
		Model: opts.Model, Script: opts.Script, BaseURL: opts.BaseURL, APIKeyEnvs: opts.APIKeyEnvs,
		TrajBin: opts.TrajBin, TestsDir: opts.TestsDir, Sandbox: opts.Sandbox, Logger: log, DenyCCompiler: s.Task.DenyCCompiler,
		Harness: opts.harness, AgentBin: opts.AgentBin, Record: filepath.Join(p.Dir, store.ModelCallsName),
		MaxTokens: opts.MaxTokens, MaxCost: opts.MaxCost, Price: opts.Price,
		Parts:    &partsSoFar,
		Playback: opts.playback(),
		Tools:    tools, ToolRecord: filepath.Join(p.Dir, store.ToolCallsName), ToolVarying: groundtruth.AnswerVarying,
		Room: room}
	responseTools := &engine.ResponseTools{}
	lspec.OnModelResponse = responseTools.Announce
	modelCalls := &engine.ModelCalls{MessagePerTurn: opts.harness.TurnMessages}
	lspec.OnModelCallStart, lspec.OnModelCall = modelCalls.Started, func(c model.Call) { modelCalls.Completed(engineCall(c)) }
	if opts.Rerun != nil {
		lspec.AgentVersion, lspec.AllowOtherVersion = opts.Rerun.AgentVersion, opts.Rerun.AllowOtherVersion
		lspec.ForkAt, lspec.SourceModel, lspec.ContinueScript = opts.Rerun.ForkAt, opts.Rerun.SourceModel, opts.Rerun.ContinueScript
		lspec.SourceTrace = opts.Rerun.Trace
	}
	ag, err := launch.Start(ctx, lspec)
	if err != nil {
		return nil, err
	}
	stopped := false
	stopAgent := func() {
		if stopped {
			return
		}
		stopped = true
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := ag.Stop(sctx); err != nil {
			log.Warn("stop agent services", "err", err)
		}
	}
	defer stopAgent()
	state.SessionID = ag.Root.ID
	if err := folder.WriteRunState(p.Dir, state); err != nil {
		return nil, err
	}

	var enq folder.Enqueuer
	if up != nil {
		enq = up
	}
	rec := s.Recorded
	// Every write to the trace is handed to pub, which uploads its chunk.
	pub := folder.NewHistoryPublisher(p.ID, p.Dir, repo, enq, rec.LastBundled, log)
	wopts := trace.WriterOptions{Logger: log}
	envInfo := environmentInfo(env, s.Task)
	w, err := openTrace(s, trace.Header{
		TrajectoryID: p.ID, SessionID: ag.Root.ID, Agent: trace.AgentID{Name: ag.Harness, Version: ag.Version}.String(), AgentModel: opts.Model,
		StartedAt: s.StartedAt, Task: s.Task.Name, Environment: envInfo, Capture: &s.Task.Capture,
		RerunOf: lineage(opts, false), ForkedFrom: lineage(opts, true),
	}, wopts, pub, opts.Now)
	if err != nil {
		return nil, err
	}
	defer w.Close()

	opts.Reporter.Report(progress.Event{Type: progress.RunStarted, Time: opts.Now(), TrajectoryID: p.ID,
		Task: s.Task.Name, Model: opts.Model, Dir: p.Dir, Attach: ag.Attach, MaxParts: opts.MaxParts})

	ledger := newGatewayLedger(ag.ToolGateway)
	loop := engine.NewLoop(engine.LoopConfig{StartPart: rec.Parts, StartTurn: rec.Turns,
		RootSessionID: ag.Root.ID, RootSession: ag.Root, Task: s.Task,
		MaxParts: opts.MaxParts, StartCommit: head.String(), AbortGrace: opts.AbortGrace, MaxEmptyTurns: opts.MaxEmptyTurns,
		StallTimeout: opts.StallTimeout, PromptBefore: forkPrompt(opts),
		Now: opts.Now, Logger: log, AfterTurn: afterTurn(pub, ag.AfterTurn), Halted: ag.Halted, ReadToolOutput: ag.ReadToolOutput,
		GroundTruth: sc.loopGroundTruth(), StopAtFirst: s.Task.GroundTruth.StopAtFirst, FullToolResult: sc.fullToolResult(),
		GatewayCalls: ledger, ResponseTools: responseTools, CountTools: opts.harness.LateToolEvents, ModelCalls: modelCalls,
		Redact: secret.NewRedactor(ag.Secrets), Parts: &partsSoFar,
	}, ag.Agent, repo, w, pub, opts.Reporter)
	for _, c := range rec.Calls {
		loop.Observe(c)
	}

	lctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	loopDone := make(chan struct{})
	go acknowledgeStop(ctx, loopDone, opts)
	out, loopErr := loop.Run(lctx)
	close(loopDone)
	cancel()
	// Session totals cover the whole trajectory.
	out.Tokens.Add(rec.Tokens)
	out.Cost += rec.Cost
	out.Claims = mergeClaims(rec.Claims, out.Claims)
	if loopErr != nil {
		log.Error("recording stopped", "err", loopErr)
		if out.Detail == "" {
			out.Detail = loopErr.Error()
		}
	}
	// The harness stops before the final checkpoint, so nothing changes
	// the workspace behind it.
	stopAgent()
	f := finisher{opts: opts, s: s, state: state, repo: repo, w: w, up: up, pub: pub, sc: sc,
		gateway: ledger, redact: secret.NewRedactor(ag.Secrets)}
	return f.finish(ctx, out, loopErr)
}

// afterTurn publishes the call records at every turn end, then asks the
// harness's own turn-end check (next) whether the run must end.
func afterTurn(pub *folder.HistoryPublisher, next func() (string, string)) func() (string, string) {
	return func() (string, string) {
		pub.TurnEnded()
		if next == nil {
			return "", ""
		}
		return next()
	}
}

// FinishingMessage is reported as soon as the run is asked to stop
// (Ctrl-C, SIGTERM): finishing takes a while, and it is not lost work.
const FinishingMessage = "finishing: stopping the agent, final checkpoint…"

// acknowledgeStop reports FinishingMessage at once when ctx is cancelled
// before the loop is done.
func acknowledgeStop(ctx context.Context, loopDone <-chan struct{}, opts Options) {
	select {
	case <-ctx.Done():
		opts.Reporter.Report(progress.Event{Type: progress.Finishing, Time: opts.Now(), Message: FinishingMessage})
	case <-loopDone:
	}
}

// absPath makes a path given on the command line absolute, so a later
// resume from another folder finds it ("" stays "").
func absPath(p string) string {
	if p == "" {
		return ""
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// openTrace creates the trace, or continues the recorded one: a finished
// trace loses its session_end, an open last turn (the process died in it)
// is closed, and the loop then continues with a new turn. Each write is
// handed to pub.
func openTrace(s Start, h trace.Header, wopts trace.WriterOptions, pub engine.Publisher, now func() time.Time) (*trace.Writer, error) {
	path := s.Paths.TracePath()
	if !s.Recorded.Trace {
		w, err := trace.Create(path, h, wopts)
		if err != nil {
			return nil, err
		}
		pub.TraceWritten(w.Written())
		return w, nil
	}
	w, err := trace.OpenForAppend(path, wopts)
	if err != nil {
		return nil, err
	}
	if err := w.Reopen(); err != nil {
		w.Close()
		return nil, err
	}
	pub.TraceWritten(w.Written())
	if w.TurnOpen() {
		if err := w.EndTurn(trace.TurnEnd{EndedAt: trace.Timestamp(now())}); err != nil {
			w.Close()
			return nil, fmt.Errorf("close the interrupted turn: %w", err)
		}
		pub.TraceWritten(w.Written())
	}
	return w, nil
}

// finisher holds what finishing a recording needs.
type finisher struct {
	opts  Options
	s     Start
	state folder.RunState
	repo  *gitstate.Repo
	w     *trace.Writer
	up    *upload.Uploader
	pub   *folder.HistoryPublisher
	sc    *scoring
	// gateway is the tool gateway's ledger (nil without one): the calls
	// no part claimed go on session_end.
	gateway engine.GatewayCalls
	// redact clears secrets from what session_end carries of the agent's
	// (the gateway calls; parts are redacted as they are written).
	redact *secret.Redactor
}

// finish ends the trajectory: final checkpoint, session_end, bundle,
// uploads. It runs under its own deadlines even when ctx was cancelled:
// one for the final checkpoint, one for ground truth, and one for the
// record (session_end, bundle, uploads) that starts after ground truth, so
// a long evaluation queue never leaves the history unwritten.
func (f *finisher) finish(parent context.Context, out engine.Outcome, loopErr error) (*Result, error) {
	p, log := f.s.Paths, f.opts.Logger
	if out.Reason == "" {
		out.Reason = trace.EndInterrupted
	}
	res := &Result{TrajectoryID: p.ID, Dir: p.Dir, Workspace: p.Workspace}
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(parent), f.opts.FinishTimeout)
	final, err := f.repo.Checkpoint(cctx, out.Parts)
	ccancel()
	// The final tree's ground truth (and what is still queued) lands
	// before session_end, under its own deadline.
	truth := f.sc.finish(parent, out.Parts, final, f.opts.FinishTimeout)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), f.opts.FinishTimeout)
	defer cancel()
	if err != nil {
		// The trace still closes, at the last recorded commit.
		log.Error("final checkpoint", "err", err)
		final = trace.RepoCheckpoint{CommitAfter: f.w.LastCommit()}
		if out.Detail == "" {
			out.Detail = "final checkpoint: " + err.Error()
		}
	}
	if final.Committed {
		if err := f.pub.FinalBundle(ctx, out.Parts, final.CommitAfter); err != nil {
			log.Warn("history bundle of the final checkpoint", "err", err)
		}
	}
	if at := f.sc.solvedAt(); at > 0 && loopErr == nil {
		// Solved is ground truth's to say: a budget that ran out after a
		// passing checkpoint does not hide it. An error (the agent died,
		// the environment failed, the user stopped the run) keeps its
		// reason, and the detail says what ground truth found.
		solved := fmt.Sprintf("ground truth: the checkpoint of part %d passes every required test path", at)
		switch out.Reason {
		case trace.EndSolved:
			if out.Detail == "" {
				out.Detail = solved
			}
		case trace.EndPartLimit, trace.EndTimeout, trace.EndTokenLimit, trace.EndCostLimit, trace.EndRecordedCallsSpent:
			out.Detail = solved + " (the loop ended: " + out.Reason + ")"
			out.Reason = trace.EndSolved
		default:
			out.Detail = strings.TrimPrefix(out.Detail+"; "+solved, "; ")
		}
	}
	end := trace.SessionEnd{Reason: out.Reason, FinalGitCommit: final.CommitAfter,
		EndedAt: trace.Timestamp(f.opts.Now()), Detail: out.Detail, GroundTruth: truth}
	if f.gateway != nil {
		// The harness is stopped: no part can claim a call any more.
		end.GatewayCalls = f.redact.GatewayCalls(f.gateway.Unclaimed(time.Now().Add(time.Hour)))
	}
	tok, cost := out.Tokens, out.Cost
	end.Tokens, end.Cost = &tok, &cost
	if err := GatewayTotals(&end, filepath.Join(p.Dir, store.ModelCallsName), out.Tokens, out.Cost, out.Claims); err != nil {
		log.Warn("model-call record: totals stay the harness's", "err", err)
	}
	tok, cost = *end.Tokens, *end.Cost
	artifacts, err := folder.CloseTrace(ctx, f.w, f.repo, f.s.Store, p.ID, p.Dir, &end, log)
	if err != nil {
		// The trace could not be closed (changed behind the writer, disk
		// full, …): say what was recorded and why it stopped, and leave
		// run.json "stopped" for traj trace finalize, never "running".
		end.TotalParts, end.TotalTurns = f.w.LastPart(), f.w.Turns()
		if end.Detail == "" {
			end.Detail = err.Error()
		}
		res.End = end
		f.state.Stopped(end, err)
		if serr := folder.WriteRunState(p.Dir, f.state); serr != nil {
			log.Warn("save run state", "err", serr)
		}
		return res, err
	}
	f.pub.TraceWritten(f.w.Written()) // session_end's tail
	res.End, res.Artifacts = end, artifacts
	f.state.Finished(end)
	if err := folder.WriteRunState(p.Dir, f.state); err != nil {
		return res, err
	}
	if f.up != nil {
		objs, err := folder.Objects(p.Dir, p.ID)
		if err != nil {
			return res, err
		}
		// The history bundles were enqueued as they were made.
		objs = slices.DeleteFunc(objs, func(o folder.Object) bool { return strings.HasPrefix(o.Key, store.HistoryPrefix(p.ID)) })
		folder.EnqueueTraceLast(ctx, f.up, p.ID, objs, func(o folder.Object) { _ = f.up.Enqueue(o.Key, store.File(o.Path)) }, log)
		rep, err := f.up.Flush(ctx)
		if err != nil {
			log.Warn("final uploads", "err", err)
		}
		for _, fl := range rep.Failed {
			res.NotUploaded = append(res.NotUploaded, fl.Key)
		}
		if len(res.NotUploaded) > 0 {
			f.opts.Reporter.Report(progress.Event{Type: progress.Warning, Time: f.opts.Now(),
				Message: fmt.Sprintf("%d objects not uploaded (kept locally in %s): %s", len(res.NotUploaded), p.Dir, rep.Err())})
		}
	}
	f.opts.Reporter.Report(progress.Event{Type: progress.RunEnded, Time: f.opts.Now(), TrajectoryID: p.ID,
		Reason: end.Reason, Part: res.End.TotalParts, Turn: res.End.TotalTurns, GitCommit: end.FinalGitCommit,
		TokensTotal: tok.Total(), Cost: cost, Artifacts: artifacts, Message: end.Detail, Dir: p.Dir})
	return res, loopErr
}

// engineCall is what the recorder keeps of a model call to attribute it.
func engineCall(c model.Call) engine.ModelCall {
	return engine.ModelCall{Seq: c.Seq, Model: c.Model, LatencyMS: c.LatencyMS, ResponseID: c.ResponseID,
		ToolCallIDs: c.ToolCallIDs, Outputs: c.Outputs, Tools: c.Tools, Tokens: c.Tokens, Cost: c.Cost,
		Failed: c.Status >= 400 || c.Status == 0 || c.Error != ""}
}

// mergeClaims adds b's claims to a's (either may be nil).
func mergeClaims(a, b map[int]trace.Claim) map[int]trace.Claim {
	out := map[int]trace.Claim{}
	for _, m := range []map[int]trace.Claim{a, b} {
		for seq, c := range m {
			o := out[seq]
			o.Parts += c.Parts
			o.Shares += c.Shares
			o.Tokens.Add(c.Tokens)
			o.Cost += c.Cost
			out[seq] = o
		}
	}
	return out
}

// GatewayTotals makes end's totals the sums of the model gateway's record
// (model_calls.jsonl), keeps the harness's (harness, harnessCost) beside
// them, and records what no part claims (claims: the parts' claims on each
// call) as unattributed. A run without a record (none was kept) keeps
// end's totals. The finish of a run and `traj trace finalize` call it.
func GatewayTotals(end *trace.SessionEnd, record string, harness trace.Tokens, harnessCost float64, claims map[int]trace.Claim) error {
	if _, err := os.Stat(record); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var calls []trace.CallUsage
	totals, err := model.ReadRecord(record, func(c model.Call) error {
		u := trace.CallUsage{Seq: c.Seq, Outputs: len(c.Outputs)}
		if c.Tokens != nil {
			u.Tokens = *c.Tokens
		}
		if c.Cost != nil {
			u.Cost = *c.Cost
		}
		calls = append(calls, u)
		return nil
	})
	if err != nil {
		return err
	}
	end.HarnessTokens, end.HarnessCost = &harness, &harnessCost
	tok, cost := totals.Tokens, totals.Cost
	end.Tokens, end.Cost, end.ModelCalls = &tok, &cost, totals.Calls
	end.Unattributed = trace.Unclaimed(calls, claims)
	return nil
}
