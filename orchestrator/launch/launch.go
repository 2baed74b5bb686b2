// Package launch starts what a trajectory's agent needs in its sandbox:
// the scripted model (offline runs) and the harness behind the agent port
// (any of the registered harnesses, with the tool stub as its tests MCP
// server) and the tool
// gateway behind it, and checks before anything exists
// that they can start (Check: the environment and its fixtures, the
// harness binary, the model script, the model endpoint).
package launch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/trajlab/traj/sandbox"

	"github.com/trajlab/traj/orchestrator/secret"
	"github.com/trajlab/traj/sandbox/agent"
	"github.com/trajlab/traj/sandbox/gateway/model"
	"github.com/trajlab/traj/sandbox/gateway/tool"
	"github.com/trajlab/traj/sandbox/harness"
	"github.com/trajlab/traj/trace"
)

// ScriptedProvider is the provider name under which --script serves the
// scripted model.
const ScriptedProvider = "scripted"

// Spec is what starting the agent side of a run needs.
type Spec struct {
	ID         string
	Workspace  string
	SandboxDir string
	LogDir     string // the trajectory's logs/ folder (redacted copies)
	Model      string
	Script     string
	BaseURL    string
	APIKeyEnvs []string
	TrajBin    string
	TestsDir   string
	// DenyCCompiler: the task denies the C compiler; the agent's room
	// shows none (sandbox.Options.DenyCCompiler).
	DenyCCompiler bool
	Sandbox       SandboxOptions
	Logger        *slog.Logger
	// Harness is the run's harness (resolved by the caller); AgentBin its
	// executable ("": the harness's own rule finds it).
	Harness  harness.Harness
	AgentBin string
	// Record is the model-call record file (beside the trace).
	Record string
	// Playback, for a rerun, is the source's model-call record: the model
	// gateway's upstream answers from it (package sandbox/playback) and
	// no provider is called. AgentVersion is the harness version the
	// source recorded: another one is refused unless AllowOtherVersion.
	Playback          string
	AgentVersion      string
	AllowOtherVersion bool
	// ForkAt > 0 makes it a fork: the recorded calls up to the source's
	// part ForkAt, then the model Script or BaseURL names. SourceModel is
	// the model the source's calls name.
	ForkAt      int
	SourceModel string
	// SourceTrace is a fork's source trace: its part → call attribution
	// says which recorded calls came before part ForkAt (calls.Placement;
	// "": their parts_before).
	SourceTrace string
	// ContinueScript makes a fork's Script go on where the source's
	// left off at the fork point (the fork inherited the source's script)
	// rather than from its first response.
	ContinueScript bool
	// ToolVarying matches what varies from run to run in the answers of
	// Tools (groundtruth.AnswerVarying); with the harness's own
	// (harness.Harness.Varying) it is blanked when requests are compared.
	ToolVarying *regexp.Regexp
	// The model gateway's budgets and price (see orchestrator.Options).
	MaxTokens int64
	MaxCost   float64
	Price     *agent.Price
	// Parts is the recording loop's part counter, read by the model
	// gateway for its record (parts_before).
	Parts *atomic.Int64
	// OnModelResponse is told each model response's tool call ids
	// (model.Options.OnResponse).
	OnModelResponse func(toolCallIDs []string)
	// OnModelCallStart and OnModelCall: model.Options.OnCallStart and
	// OnCall (the recorder's attribution of calls to parts).
	OnModelCallStart func()
	OnModelCall      func(model.Call)
	// Tools are served to the agent through the tool gateway (run_tests
	// on an evaluation sandbox); the harness loads the stub as its tests
	// MCP server. None: no tests MCP server.
	Tools []tool.Tool
	// ToolRecord is the tool-call record file (beside the trace).
	ToolRecord string
	// Room, when set, is the task's own room (a Harbor task: TaskRoomOf):
	// the agent runs in a container from its image, the workspace at its
	// workdir, within its network policy and limits.
	Room *TaskRoom
}

// Launched is a running harness with its root session, plus what the run
// started around it.
type Launched struct {
	*agent.Started
	AfterTurn func() (reason, detail string)
	// Halted reports the model gateway's end reason (a budget reached, the
	// endpoint unreachable) once it has one.
	Halted func() (reason, detail string)
	// ToolGateway is the run's tool gateway (nil without tools): its
	// ledger of answered calls outlives Stop.
	ToolGateway *tool.Gateway
}

// Start starts the sandbox services: the scripted model (with --script)
// and the harness (with the tool stub as its tests MCP server) with its root
// session. Its Stop stops everything and copies the service logs, secrets
// redacted, into the trajectory's logs/ folder. On error everything
// started is stopped.
func Start(ctx context.Context, spec Spec) (_ *Launched, err error) {
	h := spec.Harness
	if h.Locate == nil {
		return nil, errors.New("launch: no harness")
	}
	hBin, err := h.Locate(spec.AgentBin)
	if err != nil {
		return nil, err
	}
	// The tool stub and the relay are the sandbox helper, never traj:
	// traj holds the suites, and the room shows what runs in it.
	helper, err := sandbox.FindHelper(spec.TrajBin)
	if err != nil {
		return nil, err
	}

	// Every harness reaches its model through the model gateway: it holds
	// the real key (the harness gets a token), records each call and
	// enforces the budgets. The gateway is the sandbox's only gateway.
	price := spec.Price
	scriptedModel := strings.HasPrefix(spec.Model, ScriptedProvider+"/")
	if price == nil && scriptedModel {
		// A nominal price (dollars per million tokens) so offline runs
		// exercise the cost accounting end to end.
		price = &agent.Price{Input: 1, Output: 4, CacheRead: 0.1, CacheWrite: 1.25}
	}
	espec := endpointSpec{Model: spec.Model, Script: spec.Script, Playback: spec.Playback, ForkAt: spec.ForkAt, SourceTrace: spec.SourceTrace, SourceModel: spec.SourceModel, ContinueScript: spec.ContinueScript, Varying: eitherOf(h.Varying, spec.ToolVarying), BaseURL: spec.BaseURL, Record: spec.Record,
		MaxTokens: spec.MaxTokens, MaxCost: spec.MaxCost, Price: price, Parts: spec.Parts, OnResponse: spec.OnModelResponse,
		OnCallStart: spec.OnModelCallStart, OnCall: spec.OnModelCall, Logger: spec.Logger}
	if len(spec.APIKeyEnvs) > 0 {
		espec.APIKeyEnv = spec.APIKeyEnvs[0]
	}
	ep, err := startEndpoint(ctx, espec)
	if err != nil {
		return nil, err
	}
	tg, err := startToolGateway(spec)
	if err != nil {
		ep.Stop()
		return nil, err
	}
	gateways := []string{ep.Addr}
	if tg != nil {
		gateways = append(gateways, tg.addr)
	}
	sb, err := openSandbox(ctx, spec, h, hBin, helper, gateways)
	if err != nil {
		tg.stop()
		ep.Stop()
		return nil, err
	}
	l := &Launched{Started: &agent.Started{}}
	var (
		stops = []func(context.Context){func(context.Context) { ep.Stop() }, func(context.Context) { tg.stop() }}
		// secrets grows as services start; Stop redacts the logs with
		// what it holds by then.
		secrets = append(secret.Gather(spec.APIKeyEnvs, os.Getenv), ep.Secrets...)
	)
	if tg != nil {
		secrets = append(secrets, tg.token)
		l.ToolGateway = tg.g
	}
	var once sync.Once
	var stopErr error
	stop := func(ctx context.Context) error {
		once.Do(func() {
			for i := len(stops) - 1; i >= 0; i-- {
				stops[i](ctx)
			}
			stopErr = sb.Stop(ctx)
			secret.CopyLogs(sandbox.LogsDir(spec.SandboxDir), spec.LogDir, secrets, spec.Logger)
		})
		return stopErr
	}
	defer func() {
		if err != nil {
			_ = stop(context.WithoutCancel(ctx))
		}
	}()

	aspec := agent.Spec{TrajectoryID: spec.ID, Workspace: spec.Workspace, StateDir: spec.SandboxDir,
		Binary: hBin, Model: spec.Model, Env: ep.Env, Endpoint: ep.Endpoint, Logger: spec.Logger}
	if tg != nil {
		// The stub runs in the sandbox (its command names the helper as
		// the sandbox shows it); the tests run outside, behind the gateway.
		helperIn, err := insidePath(sb, helper)
		if err != nil {
			return nil, fmt.Errorf("sandbox helper: %w", err)
		}
		aspec.MCP = []agent.MCPServer{{Name: "tests", Command: []string{helperIn, "tool-stub", "--gateway", "http://" + tg.addr},
			Env: []string{tool.TokenEnv + "=" + tg.token}}}
	}
	if scriptedModel {
		// The scripted model's own small model (titles, summaries); a
		// rerun of a scripted run asks for it as its source did.
		aspec.Endpoint.SmallModel = "small"
	}
	if spec.Script != "" {
		model := ep.Scripted
		l.AfterTurn = func() (string, string) {
			st := model.Status()
			switch {
			case st.Diverged > 0:
				return trace.EndAgentError, fmt.Sprintf("scripted model: the run diverged from the script %d time(s) (see the log)", st.Diverged)
			case st.Remaining == 0:
				return trace.EndAgentError, fmt.Sprintf("scripted model: all %d responses of the script were played", st.Played)
			}
			return "", ""
		}
	}
	if pb := ep.Playback; pb != nil && spec.ForkAt == 0 {
		l.AfterTurn = func() (string, string) {
			if st := pb.Status(); st.Remaining() == 0 {
				return trace.EndRecordedCallsSpent, fmt.Sprintf("rerun: all %d recorded model calls were played", st.Recorded)
			}
			return "", ""
		}
	}
	g := ep.Gateway
	l.Halted = func() (string, string) {
		select {
		case <-g.Done():
			return g.Reason()
		default:
			return "", ""
		}
	}

	started, err := h.Start(ctx, sb, aspec)
	if err != nil {
		return nil, err
	}
	if spec.Playback != "" && spec.AgentVersion != "" && started.Version != spec.AgentVersion && !spec.AllowOtherVersion {
		_ = started.Stop(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("rerun: the source was recorded with %s %s, this machine has %s %s (install that version, or --allow-other-version)",
			h.Name, spec.AgentVersion, h.Name, started.Version)
	}
	stops = append(stops, func(ctx context.Context) {
		if err := started.Stop(ctx); err != nil {
			spec.Logger.Debug("stop harness", "harness", started.Harness, "err", err)
		}
	})
	secrets = append(secrets, started.Secrets...)
	// A copy: its Stop becomes the launch's, which calls the harness's.
	own := *started
	own.Secrets, own.Stop = secrets, stop
	l.Started = &own
	return l, nil
}

// eitherOf matches what a or b matches (nil: neither is set).
func eitherOf(a, b *regexp.Regexp) *regexp.Regexp {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return regexp.MustCompile("(?:" + a.String() + ")|(?:" + b.String() + ")")
}

func randomHex() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// toolGateway is the run's tool gateway and what the stub needs to reach it.
type toolGateway struct {
	g      *tool.Gateway
	record *os.File
	addr   string
	token  string
}

// startToolGateway serves spec.Tools on loopback (nil without tools).
func startToolGateway(spec Spec) (*toolGateway, error) {
	if len(spec.Tools) == 0 {
		return nil, nil
	}
	tg := &toolGateway{token: randomHex()}
	opts := tool.Options{Token: tg.token, Tools: spec.Tools, Logger: spec.Logger}
	if spec.ToolRecord != "" {
		f, err := os.OpenFile(spec.ToolRecord, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("tool call record: %w", err)
		}
		tg.record, opts.Record = f, f
	}
	g, err := tool.New(opts)
	if err == nil {
		err = g.Listen("127.0.0.1:0")
	}
	if err != nil {
		if tg.record != nil {
			tg.record.Close()
		}
		return nil, err
	}
	tg.g, tg.addr = g, g.Addr()
	return tg, nil
}

// stop closes the gateway (calls still running are cancelled) and its
// record; a nil gateway is a no-op.
func (tg *toolGateway) stop() {
	if tg == nil {
		return
	}
	_ = tg.g.Close() // calls in flight are cancelled; the record holds the completed ones
	if tg.record != nil {
		tg.record.Close()
	}
}
