package launch

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/trajlab/traj/sandbox/agent"
	"github.com/trajlab/traj/sandbox/gateway/model"
	modelcalls "github.com/trajlab/traj/sandbox/gateway/model/calls"
	"github.com/trajlab/traj/sandbox/playback"
	"github.com/trajlab/traj/sandbox/scripted"
	"github.com/trajlab/traj/trace"
)

// modelTokenEnv names the variable that holds the per-trajectory token the
// harness presents to the model gateway as its API key.
const modelTokenEnv = "TRAJ_MODEL_TOKEN"

// endpointSpec says where a run's model calls go.
type endpointSpec struct {
	// Model is PROVIDER/MODEL.
	Model string
	// Script serves the scripted model in-process as the upstream.
	Script string
	// Playback serves a recorded model-call record as the upstream (a
	// rerun): no provider is called. ForkAt > 0 makes it a fork: the
	// recorded calls up to the source's part ForkAt, then the model
	// Script or BaseURL names.
	Playback string
	ForkAt   int
	// SourceTrace places the recorded calls among the source's parts
	// (calls.Placement).
	SourceTrace string
	// SourceModel is a fork's source's PROVIDER/MODEL, which the recorded
	// calls name.
	SourceModel string
	// ContinueScript: a fork's Script starts past the responses its
	// source played before the fork point (scriptPlayed).
	ContinueScript bool
	// Varying is what the harness documents as varying in its requests
	// from run to run (harness.Harness.Varying).
	Varying *regexp.Regexp
	// BaseURL is the real provider's base URL ("" picks the provider's
	// public API for anthropic and openai).
	BaseURL string
	// APIKeyEnv names the variable of traj's environment holding the real
	// key; the gateway reads it, the harness never sees it.
	APIKeyEnv string
	// Record is the model-call record file (model_calls.jsonl).
	Record    string
	MaxTokens int64
	MaxCost   float64
	Price     *agent.Price
	Parts     *atomic.Int64
	// OnResponse: model.Options.OnResponse.
	OnResponse  func(toolCallIDs []string)
	OnCallStart func()
	OnCall      func(model.Call)
	Logger      *slog.Logger
}

// modelEndpoint is the model side of a running trajectory: the model
// gateway in front of the upstream (a real provider or the scripted model).
type modelEndpoint struct {
	Gateway *model.Gateway
	// Addr is the gateway's loopback address (the sandbox's gateway).
	Addr string
	// Endpoint is what the harness is given (the gateway, the token's
	// variable name, the price).
	Endpoint agent.Endpoint
	// Env holds the token variable for the harness's environment.
	Env []string
	// Secrets are the token and the real key: never in a trace or log.
	Secrets []string
	// Scripted is the scripted model when the run is offline.
	Scripted *scripted.Server
	// Playback is the recorded model of a rerun.
	Playback *playback.Server
	Stop     func()
}

// knownUpstreams are the public APIs used when no --base-url is given.
// Each serves the API its harness speaks under that base: Anthropic
// Messages and an OpenAI-compatible chat completions (Anthropic), chat
// completions and Responses (OpenAI), chat completions (the others).
var knownUpstreams = map[string]string{
	"anthropic":  "https://api.anthropic.com/v1",
	"openai":     "https://api.openai.com/v1",
	"openrouter": "https://openrouter.ai/api/v1",
	"groq":       "https://api.groq.com/openai/v1",
	"mistral":    "https://api.mistral.ai/v1",
	"deepseek":   "https://api.deepseek.com/v1",
	"xai":        "https://api.x.ai/v1",
	"google":     "https://generativelanguage.googleapis.com/v1beta/openai",
}

// upstreamFor is the base URL the gateway forwards to for a real provider.
func upstreamFor(spec endpointSpec) (string, error) {
	if spec.BaseURL != "" {
		return strings.TrimRight(spec.BaseURL, "/"), nil
	}
	provider, _, _ := strings.Cut(spec.Model, "/")
	if u, ok := knownUpstreams[provider]; ok {
		return u, nil
	}
	return "", fmt.Errorf("model %q: no known API for provider %q; give --base-url", spec.Model, provider)
}

// startEndpoint starts the scripted model (with Script) and the model
// gateway on loopback. A real upstream that cannot be reached fails here,
// within seconds, naming it.
func startEndpoint(ctx context.Context, spec endpointSpec) (_ *modelEndpoint, err error) {
	ep := &modelEndpoint{}
	var stops []func()
	ep.Stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	defer func() {
		if err != nil {
			ep.Stop()
		}
	}()
	_, modelID, _ := strings.Cut(spec.Model, "/")
	var upstream, key string
	// halt ends the run from the upstream's side (the gateway is made
	// after it).
	var halt func(reason, detail string)
	switch {
	case spec.Playback != "" && spec.ForkAt == 0:
		// A rerun: the recorded calls alone.
	case spec.Script != "":
		script, err := scripted.Load(spec.Script)
		if err != nil {
			return nil, err
		}
		ln, err := model.Listen("127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("scripted model: %w", err)
		}
		skip := 0
		if spec.ContinueScript && spec.Playback != "" && spec.ForkAt > 0 {
			if skip, err = scriptPlayed(spec.Playback, spec.SourceTrace, spec.ForkAt); err != nil {
				return nil, err
			}
			spec.Logger.Info("fork: the script goes on where its source was at the fork point", "responses_played", skip)
		}
		ep.Scripted = scripted.New(script, scripted.Options{Models: []string{modelID, "small"}, SideModels: []string{"small"},
			Logger: spec.Logger, Skip: skip})
		stops = append(stops, serve(ctx, "scripted model", ep.Scripted.Serve, ln, spec.Logger))
		upstream = scripted.BaseURL(ln.Addr())
	default:
		if upstream, err = upstreamFor(spec); err != nil {
			return nil, err
		}
		if spec.APIKeyEnv != "" {
			key = os.Getenv(spec.APIKeyEnv)
			if key == "" {
				return nil, fmt.Errorf("--api-key-env %s: the variable is empty or unset", spec.APIKeyEnv)
			}
			ep.Secrets = append(ep.Secrets, key)
		}
	}
	if spec.Playback != "" {
		// A rerun or a fork: the recorded calls answer first; a fork's
		// upstream (above) from its fork point on.
		calls, err := playback.Load(spec.Playback)
		if err != nil {
			return nil, fmt.Errorf("rerun: %w", err)
		}
		var placed modelcalls.Placement
		if spec.ForkAt > 0 {
			if placed, err = modelcalls.Place(spec.SourceTrace); err != nil {
				return nil, fmt.Errorf("fork: %w", err)
			}
		}
		ln, err := model.Listen("127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("rerun: %w", err)
		}
		var models map[string]string
		if _, src, ok := strings.Cut(spec.SourceModel, "/"); ok && src != modelID {
			models = map[string]string{modelID: src}
		}
		ep.Playback, err = playback.New(calls, playback.Options{Logger: spec.Logger, ForkAt: spec.ForkAt, Placed: placed, Then: upstream, Models: models, Varying: spec.Varying,
			OnSpent: func(detail string) { halt(trace.EndRecordedCallsSpent, "rerun: "+detail) }})
		if err != nil {
			return nil, err
		}
		stops = append(stops, serve(ctx, "playback", ep.Playback.Serve, ln, spec.Logger))
		upstream = playback.BaseURL(ln.Addr())
	}
	var record *os.File
	var prior model.Totals
	if spec.Record != "" {
		// A resumed trajectory appends to its record: seq goes on.
		if _, err := os.Stat(spec.Record); err == nil {
			if prior, err = model.ReadRecord(spec.Record, nil); err != nil {
				return nil, err
			}
		}
		if record, err = os.OpenFile(spec.Record, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
			return nil, fmt.Errorf("model-call record: %w", err)
		}
		stops = append(stops, func() { _ = record.Close() })
	}
	token := "traj-" + randomHex()
	ep.Secrets = append(ep.Secrets, token)
	opts := model.Options{Upstream: upstream, APIKey: key, Token: token, Price: spec.Price, Varying: spec.Varying,
		MaxTokens: spec.MaxTokens, MaxCost: spec.MaxCost, Parts: spec.Parts, OnResponse: spec.OnResponse,
		OnCallStart: spec.OnCallStart, OnCall: spec.OnCall, Prior: prior, Logger: spec.Logger}
	if record != nil {
		opts.Record = record
	}
	g, err := model.New(opts)
	if err != nil {
		return nil, err
	}
	halt = g.Halt
	// A fork's provider is checked before the run (Preflight), not here:
	// the gateway's upstream is the playback.
	if spec.Script == "" && spec.Playback == "" {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := g.Check(cctx)
		cancel()
		if err != nil {
			return nil, err
		}
	}
	ln, err := model.Listen("127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	// Stopped before the record file closes (stops run newest first).
	stops = append(stops, serve(ctx, "model gateway", g.Serve, ln, spec.Logger))
	ep.Gateway, ep.Addr = g, ln.Addr().String()
	ep.Env = []string{modelTokenEnv + "=" + token}
	ep.Endpoint = agent.Endpoint{BaseURL: "http://" + ln.Addr().String() + "/v1", APIKeyEnv: modelTokenEnv, Price: spec.Price}
	return ep, nil
}

// serve runs a loopback server on ln until the returned stop, which
// waits for it to end; ctx's cancellation does not stop it (the run's
// finish still needs it).
func serve(ctx context.Context, name string, run func(context.Context, net.Listener) error, ln net.Listener, log *slog.Logger) func() {
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := run(sctx, ln); err != nil {
			log.Warn(name+" stopped", "err", err)
		}
	}()
	return func() { cancel(); <-served }
}

// scriptPlayed is how many script responses the scripted model had played
// in the model-call record calls (a fork's source, trace tracePath) before
// the source held forkAt parts: the calls the fork replays
// (calls.Placement), less the side requests and the scripted model's own
// answers (scripted.PlayedLine).
func scriptPlayed(calls, tracePath string, forkAt int) (int, error) {
	recorded, err := playback.Load(calls)
	if err != nil {
		return 0, fmt.Errorf("fork: %w", err)
	}
	placed, err := modelcalls.Place(tracePath)
	if err != nil {
		return 0, fmt.Errorf("fork: %w", err)
	}
	n := 0
	for _, c := range recorded {
		if !placed.StartedBefore(c, forkAt) {
			continue
		}
		reply, _ := model.Assemble(c.API, []byte(c.Response))
		if scripted.PlayedLine(c.Status, reply.Text, len(reply.ToolCalls)) {
			n++
		}
	}
	return n, nil
}
