package launch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/trajlab/traj/environment/evaluation/registry"
	"github.com/trajlab/traj/orchestrator/task"
	"github.com/trajlab/traj/sandbox/harness"
	"github.com/trajlab/traj/sandbox/playback"
	"github.com/trajlab/traj/sandbox/scripted"
)

// Check is what a run is checked for before anything is created: the
// test environment and its fixtures, the harness binary, the model
// script, the model endpoint, the sandbox.
type Check struct {
	// Environments is what the task's environment name picks.
	Environments registry.Environments
	Task         *task.Task
	TestsDir     string
	// Harness is the run's harness (resolved by the caller); HarnessBin
	// its executable ("": found as `make setup` installs it).
	Harness    harness.Harness
	HarnessBin string
	// Model is PROVIDER/MODEL; Script serves it offline; BaseURL is a
	// custom endpoint.
	Model, Script, BaseURL string
	// Playback is a rerun's recorded model-call record: the model is
	// served from it, no endpoint is checked; a fork's (Fork) is checked.
	Playback string
	Fork     bool
	// Sandbox is where the agent will run.
	Sandbox SandboxOptions
}

// Preflight checks c, so that a bad flag or an unreachable model fails
// within seconds and leaves no half-made trajectory behind.
func Preflight(ctx context.Context, c Check) error {
	if _, err := OpenEnvironment(ctx, c.Environments, c.Task, c.TestsDir); err != nil {
		return err
	}
	if c.Harness.Locate == nil {
		return errors.New("preflight: no harness")
	}
	if _, err := c.Harness.Locate(c.HarnessBin); err != nil {
		return err
	}
	if err := c.Sandbox.Check(); err != nil {
		return err
	}
	if c.Playback != "" {
		calls, err := playback.Load(c.Playback)
		if err == nil && len(calls) == 0 {
			err = fmt.Errorf("%s holds no model call a rerun can play", c.Playback)
		}
		if err != nil {
			return fmt.Errorf("rerun: %w", err)
		}
		if !c.Fork {
			return nil
		}
	}
	if c.Script != "" {
		_, err := scripted.Load(c.Script)
		return err
	}
	return CheckModel(ctx, c.Model, c.Script, c.BaseURL)
}

// ModelTimeout bounds CheckModel's request.
const ModelTimeout = 5 * time.Second

// providerEndpoints are the API hosts of the providers OpenCode has
// built in, for CheckModel; a provider not listed is not checked.
var providerEndpoints = map[string]string{
	"anthropic":  "https://api.anthropic.com/v1/models",
	"openai":     "https://api.openai.com/v1/models",
	"google":     "https://generativelanguage.googleapis.com/",
	"openrouter": "https://openrouter.ai/api/v1/models",
	"groq":       "https://api.groq.com/openai/v1/models",
	"mistral":    "https://api.mistral.ai/v1/models",
	"deepseek":   "https://api.deepseek.com/models",
	"xai":        "https://api.x.ai/v1/models",
}

// CheckModel fails when model (PROVIDER/MODEL) cannot be served: the
// scripted provider without a script, or an endpoint (baseURL, else the
// provider's known API host) that does not answer within ModelTimeout.
// Any HTTP answer, even 401 or 404, counts as reachable: keys and model
// names are the provider's to judge, at the first model call.
func CheckModel(ctx context.Context, model, script, baseURL string) error {
	provider, _, _ := strings.Cut(model, "/")
	if provider == ScriptedProvider {
		if script == "" {
			return fmt.Errorf("model %s is served from a script: give --script FILE (for example sandbox/scripted/demo/c-compiler.jsonl)", model)
		}
		return nil
	}
	endpoint := providerEndpoints[provider]
	if baseURL != "" {
		endpoint = strings.TrimSuffix(baseURL, "/") + "/models"
	}
	if endpoint == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, ModelTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return fmt.Errorf("model endpoint %s: %w", endpoint, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("model endpoint %s of %s does not answer (no response within %s)", endpoint, model, ModelTimeout)
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("model endpoint %s of %s cannot be reached: %w", endpoint, model, err)
	}
	resp.Body.Close()
	return nil
}
