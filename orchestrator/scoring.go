package orchestrator

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/trajlab/traj/environment"
	"github.com/trajlab/traj/environment/evaluation"
	"github.com/trajlab/traj/environment/evaluation/registry"
	"github.com/trajlab/traj/environment/mcp"
	"github.com/trajlab/traj/orchestrator/engine"
	"github.com/trajlab/traj/orchestrator/groundtruth"
	"github.com/trajlab/traj/orchestrator/progress"
	"github.com/trajlab/traj/orchestrator/task"
	"github.com/trajlab/traj/replay/evalbox"
	"github.com/trajlab/traj/replay/source"
	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/sandbox/gateway/tool"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/atomicfile"
	"github.com/trajlab/traj/trace/gitstate"
)

// scoring is how a run is scored outside the agent's reach: ground truth
// of every checkpoint in the background (unless the task turns it off)
// and the agent's run_tests behind the tool gateway (unless the task
// takes it away). Both evaluate in evaluation sandboxes and share the
// store's evaluation cache with `traj replay evaluate`.
type scoring struct {
	opts  Options
	s     Start
	bg    *groundtruth.Background
	tests *groundtruth.TestsTool
	gt    *groundtruth.Scorer
	// reader is a second handle on the checkpoint history, so exporting
	// trees never waits on the recorder's checkpoints.
	reader *gitstate.Repo
}

// newScoring prepares the scorers; start starts the background.
func newScoring(ctx context.Context, opts Options, s Start, env environment.Environment, repo *gitstate.Repo) (*scoring, error) {
	sc := &scoring{opts: opts, s: s}
	if s.Task.GroundTruth.Off && !s.Task.AgentRunTests() {
		return sc, nil
	}
	reader, err := gitstate.Open(ctx, repo.GitDir(), repo.Dir(), gitstate.Options{})
	if err != nil {
		return nil, fmt.Errorf("open checkpoint history for evaluation: %w", err)
	}
	sc.reader = reader
	// The evaluation sandbox: the run's provider (the best available when
	// none is asked for), checked against the task's settings.
	probe, err := evalbox.New(ctx, evalbox.Config{Env: env, Settings: s.Task.EvalSettings(), Provider: opts.Sandbox.Provider})
	if errors.Is(err, evalbox.ErrProvider) {
		return nil, fmt.Errorf("task %s: %w (--sandbox bwrap)", s.Task.Name, err)
	}
	if err != nil {
		return nil, err
	}
	provider := probe.Provider
	// One budget for every evaluation of the run: as many evaluation
	// rooms (evalbox.StandardRoom, the same context replay evaluates in)
	// as fit in the agent's share of the host (its sandbox's limits and
	// disk cap).
	budget := groundtruth.NewBudget(groundtruth.DefaultSlots, evalShare(opts.Sandbox.Limits), opts.Sandbox.Disk)
	opts.Logger.Debug("evaluation budget", "held", budget.Held())
	cache := source.Cache(s.Store)
	// The store's secret, from which every case's nonce derives: ground
	// truth, run_tests and a later replay evaluate score alike.
	secret, err := evalSecret(ctx, s, opts.Logger)
	if err != nil {
		return nil, err
	}
	// Ground truth and run_tests differ only in their cases at once.
	cfg := evalbox.Config{Env: env, Settings: s.Task.EvalSettings(), Provider: provider, Cache: cache, Secret: secret}
	eval := func(caseWorkers int) (*evalbox.Evaluator, error) {
		c := cfg
		c.CaseWorkers = caseWorkers
		return evalbox.New(ctx, c)
	}
	if !s.Task.GroundTruth.Off {
		// Half the cores: the recorder and the agent come first (every
		// evaluation, run_tests too, runs at the room's low priority).
		ev, err := eval(max(1, runtime.NumCPU()/2))
		if err != nil {
			return nil, err
		}
		sc.gt = &groundtruth.Scorer{Trees: reader, Eval: ev, Cache: cache,
			Paths: s.Task.TestPaths, Logger: opts.Logger, Now: opts.Now, Budget: budget}
		if sm := s.Task.GroundTruth.Sample; sm != nil {
			sampler, ok := env.(environment.Sampler)
			if !ok {
				return nil, fmt.Errorf("task %s: ground_truth.sample: environment %s cannot sample its test paths", s.Task.Name, s.Task.Environment)
			}
			sc.gt.Sample = &groundtruth.Sample{Env: sampler, Size: sm.Size, Seed: sm.Seed}
		}
	}
	if s.Task.AgentRunTests() {
		// The agent waits for this one: all the cores.
		ev, err := eval(0)
		if err != nil {
			return nil, err
		}
		run := &groundtruth.Scorer{Trees: reader, Eval: ev, Cache: cache, Paths: s.Task.TestPaths, Logger: opts.Logger,
			Budget: budget}
		sc.tests = groundtruth.NewTestsTool(run, env, repo.Snapshot, mcp.Feedback(s.Task.Feedback))
		// A resumed run has spent the answers its trace records.
		sc.tests.MaxCalls = s.Task.RunTestsCalls
		sc.tests.Answered(len(s.Recorded.Calls))
	}
	return sc, nil
}

// evalShare is the part of the host a run's evaluations share: the
// agent sandbox's limits (no memory limit there still bounds them, by
// sandbox.DefaultMemory; no CPU limit leaves them the host's cores).
func evalShare(agent sandbox.Limits) sandbox.Limits {
	share := agent
	if share.Memory < 0 {
		share.Memory = 0
	}
	return share
}

// start starts ground truth in the background; results are reported as
// they land.
func (sc *scoring) start(ctx context.Context, rep progress.Sink, now func() time.Time) {
	if sc.gt == nil {
		return
	}
	gt := sc.s.Task.GroundTruth
	fullEvery := 0
	if gt.Sample != nil {
		fullEvery = gt.Sample.FullEvery
	}
	sc.bg = groundtruth.Start(ctx, sc.gt, groundtruth.Options{Workers: gt.Workers,
		FailingTests: gt.FailingTests, Logger: sc.opts.Logger, FullEvery: fullEvery, NoWait: !gt.WaitAtTurnEnd(),
		Prior: sc.s.Recorded.GroundTruth,
		OnResult: func(g trace.GroundTruth) {
			rep.Report(progress.Event{Type: progress.GroundTruth, Time: now(), Part: g.Part,
				GroundTruth: &progress.GroundTruthScore{Passed: g.Passed, Failed: g.Failed, Total: g.Total, Solved: g.Solved, Error: g.Error,
					Sampled: g.Sampled}})
		}})
}

func (sc *scoring) tools() ([]tool.Tool, error) {
	if sc.tests == nil {
		return nil, nil
	}
	t, err := sc.tests.Tool()
	if err != nil {
		return nil, err
	}
	return []tool.Tool{t}, nil
}

// loopGroundTruth is the loop's port (nil without ground truth: a nil
// *Background must not become a non-nil interface).
func (sc *scoring) loopGroundTruth() engine.GroundTruth {
	if sc.bg == nil {
		return nil
	}
	return sc.bg
}

func (sc *scoring) fullToolResult() func(string) ([]byte, bool) {
	if sc.tests == nil {
		return nil
	}
	return sc.tests.Full
}

// finish queues the final checkpoint, lets what is queued land (within
// timeout; at once when ctx was cancelled: the user stopped the run), and
// returns the results not yet in a part: they go on session_end.
func (sc *scoring) finish(ctx context.Context, parts int, final trace.RepoCheckpoint, timeout time.Duration) []trace.GroundTruth {
	if sc == nil || sc.bg == nil {
		return nil
	}
	wait, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	if ctx.Err() != nil {
		// Stopped by the user: finish now; what is not evaluated yet is
		// left for replay evaluate (same cache).
		cancel()
	} else if final.CommitAfter != "" {
		// The final tree on the sample (the curve) and in full.
		sc.bg.Submit(parts, final.CommitAfter)
		sc.bg.SubmitFull(parts, final.CommitAfter)
	}
	sc.bg.Close(wait)
	if n := sc.bg.Dropped(); n > 0 {
		sc.opts.Logger.Warn("ground truth fell behind: checkpoints left for `traj replay evaluate`", "checkpoints", n)
	}
	return sc.bg.Take()
}

// solvedAt is the part whose checkpoint ground truth first found solved.
func (sc *scoring) solvedAt() int {
	if sc == nil || sc.bg == nil {
		return 0
	}
	return sc.bg.SolvedAt()
}

// close stops the background if the run ends before finishing.
func (sc *scoring) close() {
	if sc.bg != nil {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		sc.bg.Close(ctx)
	}
}

// environmentInfo is the environment the trace records: its name, test
// paths and the task's settings as fields (evaluation.Recorded reads them
// back), and as version the one that keys the task's results (the
// environment's marked with the settings, which traj before the fields
// read the settings from).
func environmentInfo(env environment.Environment, tk *task.Task) *trace.EnvironmentInfo {
	s := tk.EvalSettings()
	info := &trace.EnvironmentInfo{Name: tk.Environment, TestPaths: tk.TestPaths, Version: evaluation.Version(env.Version(), s)}
	s.Record(info)
	return info
}

// environments is what a task's environment name picks.
func (o Options) environments() registry.Environments {
	if len(o.Environments.Names()) == 0 {
		return registry.Builtin()
	}
	return o.Environments
}

// gatewayLedger is the loop's view of the tool gateway's calls.
type gatewayLedger struct{ g *tool.Gateway }

// newGatewayLedger returns nil without a gateway (a nil *tool.Gateway
// must not become a non-nil interface).
func newGatewayLedger(g *tool.Gateway) engine.GatewayCalls {
	if g == nil {
		return nil
	}
	return gatewayLedger{g}
}

func (l gatewayLedger) Claim(id string) { l.g.Claim(id) }

func (l gatewayLedger) Unclaimed(t time.Time) []trace.GatewayCall {
	var out []trace.GatewayCall
	for _, c := range l.g.Unclaimed(t) {
		out = append(out, trace.GatewayCall{ToolCallID: c.ToolCallID, Tool: c.Tool, Arguments: c.Arguments,
			Start: trace.Timestamp(c.Start), DurationMs: c.DurationMS, Text: c.Result.Text, IsError: c.Result.IsError})
	}
	return out
}

// evalSecret is the store's evaluation secret (source.EvalSecret). A run
// never dies because its store cannot be reached: then the trajectory
// folder's own secret (made once, kept for a resume, never shown to a
// sandbox) scores this run, and the log says that a later replay evaluate
// against the store may draw other nonces. An honest compiler's results
// do not depend on the nonces; only chance passes of a fixed program can.
func evalSecret(ctx context.Context, s Start, log *slog.Logger) ([]byte, error) {
	secret, err := source.EvalSecret(ctx, s.Store)
	if err == nil {
		return secret, nil
	}
	p := filepath.Join(s.Paths.Dir, localSecretName)
	if b, rerr := os.ReadFile(p); rerr == nil && len(b) >= 16 {
		log.Warn("store unreachable: ground truth uses the trajectory's own evaluation secret", "error", err)
		return b, nil
	}
	fresh := make([]byte, 32)
	if _, rerr := rand.Read(fresh); rerr != nil {
		return nil, fmt.Errorf("make the trajectory's evaluation secret: %w", rerr)
	}
	if werr := atomicfile.WriteBytes(p, fresh); werr != nil {
		return nil, fmt.Errorf("%w (and keep the trajectory's own: %v)", err, werr)
	}
	log.Warn("store unreachable: ground truth uses the trajectory's own evaluation secret", "error", err)
	return fresh, nil
}

// localSecretName is the trajectory folder's evaluation secret, used only
// while the store's cannot be read (evalSecret); it is not uploaded.
const localSecretName = "evalsecret.local"
