package evaluate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trajlab/traj/environment/evaluation/registry"
	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/evaluate"
	"github.com/trajlab/traj/replay/labels"
	"github.com/trajlab/traj/replay/replaytest"
	"github.com/trajlab/traj/replay/source"
	"github.com/trajlab/traj/sandbox"
)

// The handler as a library caller (the experiment) uses it: a local
// evaluate writes the report; the same request again is served by the
// cache and leaves it as it is; a cluster is handed the evaluator the
// local evaluate used (same cache keys), against the store's cache.
func TestRun(t *testing.T) {
	if _, err := os.Stat("/usr/bin/gcc"); err != nil {
		t.Skip("needs gcc")
	}
	tj := replaytest.Build(t, "handler-eval", replaytest.AttributionScript(), 3, true)
	dir := t.TempDir()
	out := filepath.Join(dir, "eval.json")
	var stderr bytes.Buffer
	req := evaluate.Request{
		Source: source.Request{TracePath: tj.TracePath, BundlePath: tj.BundlePath, StoreURL: filepath.Join(dir, "runs")},
		Output: out, Tests: []string{"basics/control_flow"}, Workers: 1, Sandbox: sandbox.ProviderLocal,
		Labels: labels.Defaults(), Environments: registry.Builtin(), Stderr: &stderr,
	}
	ctx := context.Background()
	if err := evaluate.Run(ctx, req); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	var rep replay.Output
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Stats.Parts != 10 || rep.Stats.TreesEvaluated == 0 || rep.Environment.Name != "c-compiler" || len(rep.Labels) == 0 {
		t.Fatalf("report: %+v, environment %+v, labels %s", rep.Stats, rep.Environment, rep.Labels)
	}
	// Part 3 builds the compiler: every control_flow case passes.
	if pe := rep.PartEvaluations[3]; pe == nil || pe.Total == 0 || pe.Passed != pe.Total {
		t.Errorf("part 3: %+v", pe)
	}

	// The second evaluate is served by the cache and writes the report
	// with its inputs' digest; the third finds it unchanged.
	stderr.Reset()
	if err := evaluate.Run(ctx, req); err != nil || !strings.Contains(stderr.String(), "6 from cache") {
		t.Fatalf("second evaluate: %v\n%s", err, stderr.String())
	}
	data, _ = os.ReadFile(out)
	stderr.Reset()
	if err := evaluate.Run(ctx, req); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(out); !bytes.Equal(again, data) || !strings.Contains(stderr.String(), "every tree from the cache") {
		t.Errorf("third evaluate rewrote the report or evaluated again: %s", stderr.String())
	}

	var handed evaluate.Evaluation
	cluster := req
	cluster.Executor = "slurm"
	cluster.Cluster = func(_ context.Context, _ *source.Trajectory, e evaluate.Evaluation) error {
		handed = e
		return nil
	}
	if err := evaluate.Run(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	if handed.Evaluator == nil || handed.Options.Cache == nil || handed.Evaluator.Version() != rep.Environment.Version ||
		strings.Join(handed.Options.TestPaths, ",") != "basics/control_flow" {
		t.Errorf("cluster got %+v, local evaluate keyed by %q", handed, rep.Environment.Version)
	}
}

// The caller's mistakes are usage errors (exit status 2 at the command
// line), found before anything is evaluated.
func TestRunUsage(t *testing.T) {
	tj := replaytest.Build(t, "handler-usage", replaytest.AttributionScript()[:3], 3, true)
	dir := t.TempDir()
	base := evaluate.Request{
		Source: source.Request{TracePath: tj.TracePath, BundlePath: tj.BundlePath, StoreURL: filepath.Join(dir, "runs")},
		Output: filepath.Join(dir, "eval.json"), Sandbox: sandbox.ProviderLocal,
	}
	for _, tc := range []struct {
		name string
		edit func(*evaluate.Request)
		want string
	}{
		{"no output", func(r *evaluate.Request) { r.Output = "" }, "missing flags: --output=FILE"},
		{"store only, loose trace", func(r *evaluate.Request) { r.StoreOnly = true }, "no store to keep its evaluation in"},
		{"cluster without cache", func(r *evaluate.Request) { r.Executor, r.NoCache = "slurm", true }, "--no-cache does not apply"},
		{"cluster without a cluster", func(r *evaluate.Request) { r.Executor = "slurm" }, "no cluster"},
		{"unknown test path", func(r *evaluate.Request) { r.Tests = []string{"basics/nope"} }, `test path "basics/nope" is not available`},
	} {
		req := base
		tc.edit(&req)
		err := evaluate.Run(context.Background(), req)
		if !errors.Is(err, replay.ErrUsage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a usage error containing %q", tc.name, err, tc.want)
		}
	}
	if _, err := os.Stat(base.Output); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused evaluate left %s", base.Output)
	}
}
