package harbor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/trajlab/traj/environment"
	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/sandbox/image"
)

// Env is a Harbor task as a traj environment: one test path (the task's
// name), no build, and a Run that scores a tree in a fresh verifier room
// (Verify).
type Env struct {
	Task   *Task
	Engine image.Engine
	// Image is the task's image (built from environment/, or
	// docker_image), the same for the agent's room and the verifier's.
	Image image.Built
	// Workdir is where the workspace is, in both rooms.
	Workdir string
	version string
}

var _ environment.Environment = (*Env)(nil)

// Options tune Open.
type Options struct {
	// Engine is the container engine binary ("": podman, else docker).
	Engine string
	// CacheDir holds image build locks and temporary root file systems
	// (sandbox.CacheDir() when empty).
	CacheDir string
	// Log receives the image build's progress (nil: dropped).
	Log io.Writer
}

// Open makes the task's image (cached by its context's digest; see
// sandbox/image.BuildContext) and returns the environment.
func Open(ctx context.Context, t *Task, o Options) (*Env, error) {
	eng, _, err := sandbox.FindEngine(ctx, o.Engine)
	if err != nil {
		return nil, fmt.Errorf("open Harbor task %s: %w", t.Name, err)
	}
	if o.CacheDir == "" {
		o.CacheDir = sandbox.CacheDir()
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	e := &Env{Task: t, Engine: eng}
	if ref := t.Environment.DockerImage; ref != "" {
		id, err := eng.Run(ctx, time.Minute, nil, "image", "inspect", "--format", "{{.Id}}", ref)
		if err != nil {
			if _, _, ok := image.DebianRef(ref); !ok {
				return nil, fmt.Errorf("open Harbor task %s: docker_image %s is not on this machine and traj pulls from no registry (load it into the engine first)", t.Name, ref)
			}
			if err := image.EnsureDebian(ctx, eng, ref, o.CacheDir, o.Log); err != nil {
				return nil, fmt.Errorf("open Harbor task %s: %w", t.Name, err)
			}
			if id, err = eng.Run(ctx, time.Minute, nil, "image", "inspect", "--format", "{{.Id}}", ref); err != nil {
				return nil, fmt.Errorf("open Harbor task %s: %w", t.Name, err)
			}
		}
		e.Image = image.Built{Name: ref, ID: id}
	} else {
		e.Image, err = image.BuildContext(ctx, eng, image.ContextBuild{Dir: filepath.Join(t.Dir, "environment"),
			Repository: "localhost/traj-harbor-" + t.Name, Timeout: t.Environment.BuildTimeout, CacheDir: o.CacheDir}, o.Log)
		if err != nil {
			return nil, fmt.Errorf("open Harbor task %s: %w", t.Name, err)
		}
	}
	e.Workdir = t.Environment.Workdir
	if e.Workdir == "" {
		wd, err := eng.Run(ctx, time.Minute, nil, "image", "inspect", "--format", "{{.Config.WorkingDir}}", e.Image.ID)
		if err != nil {
			return nil, fmt.Errorf("open Harbor task %s: %w", t.Name, err)
		}
		if e.Workdir = strings.TrimSpace(wd); e.Workdir == "" || e.Workdir == "/" {
			e.Workdir = DefaultWorkdir
		}
	}
	h := sha256.New()
	fmt.Fprintf(h, "harbor verifier 1\nimage %s\nworkdir %s\ninternet %v\ntimeout %s\ncpus %v\nmemory %d\n",
		e.Image.ID, e.Workdir, t.Environment.AllowInternet, t.VerifierTimeout, t.Environment.CPUs, t.Environment.Memory)
	for _, k := range sortedKeys(t.VerifierEnv) {
		fmt.Fprintf(h, "env %q=%q\n", k, t.VerifierEnv[k])
	}
	if err := image.DigestTree(h, filepath.Join(t.Dir, "tests")); err != nil {
		return nil, fmt.Errorf("open Harbor task %s: tests: %w", t.Name, err)
	}
	e.version = "harbor-" + hex.EncodeToString(h.Sum(nil)[:8])
	return e, nil
}

// Version implements environment.Environment: a digest of the image's ID,
// the tests' files and the verifier's settings, so results are cached by
// tree and image.
func (e *Env) Version() string { return e.version }

// TestPaths implements environment.Environment: the task's name.
func (e *Env) TestPaths() []string { return []string{e.Task.Name} }

// Build implements environment.Environment: a Harbor task has no build
// of its own (test.sh builds what it needs, in the verifier's room).
func (e *Env) Build(context.Context, string, environment.Executor) environment.BuildResult {
	return environment.BuildResult{OK: true, Phase: environment.PhaseBuild}
}

// Run implements environment.Environment: Verify on a copy of workspace,
// as a Result whose cases are the CTRF report's tests (when test.sh
// writes one) and the reward (passed when it is 1). opts.Executor is not
// used: the verifier's room is a container of its own.
func (e *Env) Run(ctx context.Context, workspace, testPath string, opts environment.RunOptions) (environment.Result, error) {
	if testPath != e.Task.Name {
		return environment.Result{}, fmt.Errorf("%w: %q (the task's one path is %q)", environment.ErrUnknownPath, testPath, e.Task.Name)
	}
	v, err := e.Verify(ctx, workspace, opts.TempDir)
	if err != nil {
		return environment.Result{}, err
	}
	res := v.Result(testPath)
	if opts.Progress != nil {
		opts.Progress(res.Total, res.Total)
	}
	return res, nil
}

// Result is v as an environment.Result for path.
func (v Verdict) Result(path string) environment.Result {
	res := environment.Result{Path: path, Build: environment.BuildResult{OK: true, Phase: environment.PhaseBuild},
		DurationMS: v.Elapsed.Milliseconds()}
	seen := map[string]int{}
	for _, t := range v.Tests {
		name := path + "/" + t.Name
		if seen[name]++; seen[name] > 1 || t.Name == RewardCase {
			name += " #" + strconv.Itoa(seen[name])
		}
		c := environment.CaseResult{Name: name, Phase: environment.PhaseCompare, Passed: t.Status == "passed",
			Error: t.Message, ActualExitCode: -1, RunMS: t.DurationMS}
		if !c.Passed && c.Error == "" {
			c.Error = "test " + t.Status
		}
		res.Cases = append(res.Cases, c)
	}
	rc := environment.CaseResult{Name: path + "/" + RewardCase, Phase: environment.PhaseCompare, Passed: v.Solved(),
		ActualStdout: v.RewardText, ActualExitCode: v.ExitCode, StderrTail: v.Output, RunMS: v.Elapsed.Milliseconds()}
	switch {
	case v.TimedOut:
		rc.Phase, rc.Error = environment.PhaseTimeout, v.Problem
	case !rc.Passed:
		rc.Error = v.Problem
		if rc.Error == "" {
			rc.Error = "reward " + strconv.FormatFloat(v.Reward, 'g', -1, 64) + ", not 1"
		}
	}
	res.Cases = append(res.Cases, rc)
	sort.Slice(res.Cases, func(i, j int) bool { return res.Cases[i].Name < res.Cases[j].Name })
	for _, c := range res.Cases {
		if c.Passed {
			res.Passed++
		} else {
			res.Failed++
		}
	}
	res.Total = len(res.Cases)
	return res
}

// RewardCase names the case that holds the reward in a Result.
const RewardCase = "reward"
