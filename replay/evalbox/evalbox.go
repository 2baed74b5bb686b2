// Package evalbox evaluates untrusted trees (ground truth, run_tests and
// `traj replay evaluate` all come here): it decides what each action of
// an evaluation is shown (actions, below). The room an action runs in is
// package sandbox's: sandbox.Actions (action.go) makes it, and for a task
// that denies the C compiler sandbox/deny.go decides what every action
// gets beyond those mounts (compilers shown empty, writable places
// noexec, memfd_create refused).
//
// The evaluator is trusted code and runs in traj, on the host: the
// environment (environment/ccompiler) enumerates the cases, holds their
// expectations, compares and scores. Only three kinds of action run the
// tree's code, each in a sandbox of its own (sandbox.Actions: a fresh
// bwrap, or container, per action, network none) that shows only what
// the action needs and returns only raw observations (exit status,
// output up to a cap, time):
//
//   - the build: the exported tree (a copy, read-write at /workspace), no
//     test file, no fixture; `bash build.sh`.
//   - each case's compile: the built tree read-only at /workspace (for a
//     task that declares its build's artifacts, a folder holding only
//     them: artifacts.go, evaluateArtifacts), and
//     the case's private folder read-write at /case holding that case's
//     sources only (basics' `// expect:` lines removed); `/workspace/cc
//     /case/x.c -o /case/prog`. What the compile left is read on the
//     host, after every process of it is gone.
//   - each program's run: the produced program alone, read-only.
//
// Every evaluator is built by New (ground truth, run_tests, replay
// evaluate and a cluster's tasks differ only in its Config: the task's
// settings, evaluation.Settings, the provider, the cases at once), and
// every evaluation runs in one context, StandardRoom, wherever the tree
// is scored (ground truth, run_tests, replay evaluate, a cluster's
// tasks): nice 10, 2 GiB and 2 CPUs for its actions, 4096 processes, a
// fixed environment with none of the host's variables, fixed paths
// inside, and a scratch space of 2 GiB: a sparse ext4 image
// (sandbox/disk) made for the evaluation, which holds the tree's copy and
// its builds, the artifacts (copied sparse, refused above 512 MiB with a
// build error), every case's folder and the actions' own files. A build
// that writes more gets ENOSPC; the host's disk grows by at most the cap.
// The image costs 70–190 ms an evaluation (median 80 of 7: Create,
// Attach, Unmount, measured here under a load of 15), against seconds
// for the build and the cases. Where no image can be mounted (not root)
// the scratch space is an uncapped folder and no result is kept under an
// artifact key (it might not be the one the artifacts get elsewhere). How
// the rooms of a run count against its agent's share:
// orchestrator/groundtruth's Budget.
//
// Nothing is signed and there is no key: no result is ever read from a
// sandbox. Every action has its own PID namespace (bwrap) or container,
// so a process it leaves behind (a setsid daemon of build.sh) dies with
// it, before the next action starts; one case's actions never see
// another case's folder. deny_c_compiler needs bwrap or container
// (CheckProvider); what it takes out of every action: sandbox/deny.go.
//
// --sandbox local (trusted trees only) runs the same actions on the host
// (environment/host).
//
// # Cost (BenchmarkPerTree, side by side with the host)
//
// A bwrap per action was chosen over one sandbox per evaluation with a
// runner inside: it holds nothing in the sandbox to attack and needs no
// code of ours there. Measured here (2 cores, under a load of 13): a
// bwrap action start costs ~15 CPU-ms against ~8 for a plain fork and
// exec of /bin/true (112 and 28 ms wall); under a load of 30, 229 and 54
// ms wall. Each case pays two starts (compile, run) on top of gcc's own
// compile (~145 CPU-ms under that load). A container per action costs
// seconds under load (podman run): correct, but use bwrap for volume.
package evalbox

import (
	"context"
	"errors"
	"fmt"
	"github.com/trajlab/traj/environment/evaluation"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/trajlab/traj/environment"
	"github.com/trajlab/traj/environment/host"
	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/sandbox/xec"
)

// Payload is an evaluation's outcome: the result (what the cache
// stores) and the environment's own result of each path (every case's
// expected and actual output: what run_tests answers the agent).
type Payload struct {
	Result evaluation.Result    `json:"result"`
	Runs   []environment.Result `json:"runs,omitempty"`
}

// Evaluator is an evaluation.Evaluator for untrusted trees.
type Evaluator struct {
	// Provider is the sandbox provider: "bwrap", "container", or "local"
	// (no sandbox: trusted trees only). Required.
	Provider string
	// Env is the environment, on the host: its cases and expectations
	// never enter a sandbox.
	Env environment.Environment
	// EnvVersion is the cache key's version (Env.Version() when empty;
	// New marks the task's settings on it: evaluation.Version).
	EnvVersion string
	// CaseWorkers bounds the cases run at once in one evaluation (0: the
	// environment's default, the CPU count).
	CaseWorkers int
	// TempDir holds the per-evaluation folders (each evaluation's
	// scratch image, see Room); os.TempDir when empty. Nothing inside an
	// action shows where it is.
	TempDir string
	// DenyCCompiler takes every C compiler out of every action
	// (sandbox.ActionOptions.DenyCCompiler, sandbox/deny.go): the
	// drivers and front ends shown empty, as and ld kept, every writable
	// place noexec and memfd_create refused, so a compiler under test
	// that hands C to a C compiler, or carries one, fails every case
	// (the C-compiler task's rule). bwrap (as root) or container.
	DenyCCompiler bool
	// OnCase, when set, is called after each case (progress).
	OnCase func()
	// Artifacts are what the task's build produces and its compiles need
	// (paths relative to the tree, a trailing "/" for a folder; the
	// C-compiler task: "cc"). When set, every compile is shown a folder
	// holding only these, copied out of the built tree, so a result is a
	// function of their bytes: with Cache and a sandbox, it is kept and
	// found under their digest (evaluation.ArtifactCacheKey) once two builds
	// of the tree gave the same artifacts, and trees that build the same
	// compiler share one evaluation. The environment version must carry
	// them (evaluation.Version).
	Artifacts []string
	// Cache keeps results under the artifacts' digest; nil keys every
	// result by its tree alone.
	Cache evaluation.Cache
	// Secret is the store's evaluation secret (source.EvalSecret), from
	// which the cases' nonces derive: the same secret, the same result
	// case by case; with the artifacts' digest it also seeds the fresh
	// suite's programs. Read on the host; no action is shown it.
	Secret []byte

	// onScratch, when set (tests), is called with the scratch image's
	// file ("" when uncapped) before it is removed.
	onScratch func(image string)

	// inflight holds the artifacts being tested now, so evaluations of
	// trees that built the same ones (replay evaluate runs several at
	// once) wait for the first and are served from its entry.
	mu       sync.Mutex
	inflight map[string]chan struct{}
}

// Config is what New builds an Evaluator from: the one way ground truth,
// run_tests, `traj replay evaluate` and a cluster's tasks assemble one,
// differing only in these values.
type Config struct {
	// Env is the environment (registry.Environments.Open).
	Env environment.Environment
	// Settings are the task's (a run's task, or what a trace recorded:
	// evaluation.Recorded).
	Settings evaluation.Settings
	// Provider is the sandbox provider ("" picks sandbox.Default).
	Provider string
	// Cache keeps results under the artifacts' digest (nil: none).
	Cache evaluation.Cache
	// Secret is the store's evaluation secret (source.EvalSecret).
	Secret []byte
	// CaseWorkers bounds the cases run at once in one evaluation (0: the
	// CPU count).
	CaseWorkers int
	// OnCase, when set, is called after each case (progress).
	OnCase func()
	// TempDir holds the per-evaluation folders; os.TempDir when empty.
	TempDir string
}

// New is the one constructor of an Evaluator: the provider (the best
// available when none is asked for), checked against the settings (an
// error matching ErrProvider when it cannot deny the C
// compiler), and the version the results are keyed by
// (evaluation.Version of the environment's and the settings).
func New(ctx context.Context, c Config) (*Evaluator, error) {
	provider := c.Provider
	if provider == "" {
		var err error
		if provider, err = sandbox.Default(ctx); err != nil {
			return nil, fmt.Errorf("evaluation sandbox: %w", err)
		}
	}
	if err := CheckProvider(provider, c.Settings.DenyCCompiler); err != nil {
		return nil, err
	}
	if err := evaluation.CheckArtifacts(c.Settings.Artifacts); err != nil {
		return nil, fmt.Errorf("evaluation: %w", err)
	}
	return &Evaluator{Provider: provider, Env: c.Env, EnvVersion: evaluation.Version(c.Env.Version(), c.Settings),
		DenyCCompiler: c.Settings.DenyCCompiler, Artifacts: c.Settings.Artifacts, Cache: c.Cache, Secret: c.Secret,
		CaseWorkers: c.CaseWorkers, OnCase: c.OnCase, TempDir: c.TempDir}, nil
}

// claim makes this evaluation the one testing artifact: it waits while
// another evaluation of the same artifacts is in flight. release ends
// the claim.
func (e *Evaluator) claim(ctx context.Context, artifact string) (release func(), err error) {
	for {
		e.mu.Lock()
		ch, busy := e.inflight[artifact]
		if !busy {
			if e.inflight == nil {
				e.inflight = map[string]chan struct{}{}
			}
			ch = make(chan struct{})
			e.inflight[artifact] = ch
			e.mu.Unlock()
			return func() {
				e.mu.Lock()
				delete(e.inflight, artifact)
				e.mu.Unlock()
				close(ch)
			}, nil
		}
		e.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// CheckProvider says whether provider can run evaluations with the C
// compiler denied (deny) — the one rule, for run and replay alike: an
// isolated provider (bwrap or container; see sandbox/deny.go).
// Its error matches ErrProvider.
func CheckProvider(provider string, deny bool) error {
	if deny && provider != sandbox.ProviderBwrap && provider != sandbox.ProviderContainer {
		return providerError(fmt.Sprintf("denying the C compiler (deny_c_compiler) needs bwrap or container evaluation sandboxes, not %q", provider))
	}
	return nil
}

// ErrProvider is what CheckProvider's errors match (errors.Is): the
// provider asked for cannot run this task's evaluations.
var ErrProvider = errors.New("evaluation sandbox refused")

type providerError string

func (e providerError) Error() string        { return string(e) }
func (e providerError) Is(target error) bool { return target == ErrProvider }

// Version implements evaluation.Evaluator: the environment version (EnvVersion,
// else Env's) and the provider (evaluation.SandboxMark), what the cache keys carry.
func (e *Evaluator) Version() string {
	v := e.EnvVersion
	if v == "" {
		v = e.Env.Version()
	}
	return v + evaluation.SandboxMark + e.Provider
}

// Evaluate implements evaluation.Evaluator: dir (an exported tree) is built
// and tested, each action in its own sandbox; the build runs on a copy
// of dir in the evaluation's scratch space (local: on dir itself).
// With Artifacts and Cache, the result says which key keeps it
// (evaluation.Result.Key) and may come from the cache once the tree is built.
func (e *Evaluator) Evaluate(ctx context.Context, dir string, paths []string) (evaluation.Result, error) {
	p, err := e.evaluate(ctx, dir, paths, e.Cache)
	return p.Result, err
}

// EvaluateDetailed is Evaluate with the environment's own result of each
// path (Payload.Runs, in the order of paths): always run, never from the
// cache (the cache keeps no run's detail).
func (e *Evaluator) EvaluateDetailed(ctx context.Context, dir string, paths []string) (Payload, error) {
	return e.evaluate(ctx, dir, paths, nil)
}

func (e *Evaluator) evaluate(ctx context.Context, dir string, paths []string, cache evaluation.Cache) (Payload, error) {
	if err := CheckProvider(e.Provider, e.DenyCCompiler); err != nil {
		return Payload{}, fmt.Errorf("evaluation sandbox: %w", err)
	}
	if err := evaluation.CheckArtifacts(e.Artifacts); err != nil {
		return Payload{}, fmt.Errorf("evaluation: %w", err)
	}
	room := StandardRoom()
	if e.Provider == sandbox.ProviderLocal {
		ev := &evaluation.EnvironmentEvaluator{Env: e.Env, CaseWorkers: e.CaseWorkers, Executor: host.Executor{}, OnCase: e.OnCase,
			TempDir: e.TempDir}
		if len(e.Artifacts) == 0 {
			return detailed(ev.EvaluateDetailed(ctx, dir, paths))
		}
		work, err := os.MkdirTemp(e.TempDir, "traj-artifacts-")
		if err != nil {
			return Payload{}, fmt.Errorf("artifacts folder: %w", err)
		}
		defer os.RemoveAll(work)
		return e.evaluateArtifacts(ctx, ev, dir, work, paths, cache, room, "no sandbox: a compile could read more than the artifacts")
	}
	// Everything the tree's code writes lands in the evaluation's scratch
	// space, capped at room.Disk: the tree's copy and its builds, the
	// artifacts, every case's folder, the actions' own files.
	sc, err := openScratch(ctx, e.TempDir, room.Disk)
	if err != nil {
		return Payload{}, err
	}
	defer func() {
		if e.onScratch != nil {
			e.onScratch(sc.image())
		}
		sc.close()
	}()
	tree := sc.path(scratchTree)
	if err := copyTree(dir, tree); err != nil {
		return Payload{}, err
	}
	cases := sc.path(scratchCases)
	if err := os.Mkdir(cases, 0o700); err != nil {
		return Payload{}, fmt.Errorf("evaluation scratch space: %w", err)
	}
	x, closeX, err := e.executor(ctx, sc.path(scratchActs), room)
	if err != nil {
		return Payload{}, err
	}
	defer closeX()
	ev := &evaluation.EnvironmentEvaluator{Env: e.Env, CaseWorkers: e.CaseWorkers, Executor: x, OnCase: e.OnCase, Secret: e.Secret, TempDir: cases}
	if len(e.Artifacts) == 0 {
		return detailed(ev.EvaluateDetailed(ctx, tree, paths))
	}
	why := ""
	if !sc.capped {
		// Elsewhere the scratch space is capped: a result here may not be
		// the one the artifacts get there.
		why = "no capped scratch space (" + sc.why + ")"
	}
	return e.evaluateArtifacts(ctx, ev, tree, sc.dir, paths, cache, room, why)
}

func detailed(res evaluation.Result, runs []environment.Result, err error) (Payload, error) {
	if err != nil {
		return Payload{}, err
	}
	return Payload{Result: res, Runs: runs}, nil
}

// evaluateArtifacts builds dir, copies the build's artifacts into a
// folder of their own and tests that: what every compile is shown. The
// result is kept under the artifacts' digest when the evaluation can
// vouch that it depends on them alone: a sandbox shows each compile
// nothing else, and a second build of the same tree gave the same
// artifacts (a build that stamps a time or a random name would make
// every digest new, and a key that never repeats only costs a build).
// work is the folder for the second build and the artifacts (the
// scratch space); unkeyed, when set, says why no result may be kept
// under the artifacts' key.
func (e *Evaluator) evaluateArtifacts(ctx context.Context, ev *evaluation.EnvironmentEvaluator, dir, work string, paths []string, cache evaluation.Cache, room Room, unkeyed string) (Payload, error) {
	x := ev.Executor
	key := &evaluation.KeyUse{Key: evaluation.KeyTree}
	keyed := cache != nil && unkeyed == ""
	switch {
	case unkeyed != "":
		key.Why = unkeyed
	case cache == nil:
		key.Why = "no evaluation cache"
	}
	pristine := filepath.Join(work, scratchAgain)
	if keyed {
		if err := copyTree(dir, pristine); err != nil {
			return Payload{}, err
		}
	}
	build := e.Env.Build(ctx, dir, x)
	if err := ctx.Err(); err != nil {
		return Payload{}, err
	}
	shown := dir
	version := e.Version()
	var err error
	if build.OK {
		shown = filepath.Join(work, scratchArt)
		if key.Artifact, err = collectArtifacts(dir, shown, e.Artifacts, room.ArtifactBytes); err != nil {
			var big *tooLargeError
			if !errors.As(err, &big) {
				return Payload{}, err
			}
			// Refused, as a build that failed.
			build.OK, build.Error, shown, key.Artifact = false, big.Error(), dir, ""
		}
	}
	if !build.OK && keyed {
		key.Why = "the build failed"
		keyed = false
	}
	ak := evaluation.ArtifactCacheKey(key.Artifact, version, paths)
	if keyed {
		release, err := e.claim(ctx, key.Artifact)
		if err != nil {
			return Payload{}, err
		}
		defer release()
		c, ok, err := cache.Get(ctx, ak)
		if err == nil && ok && c.MatchesArtifact(key.Artifact, version, paths) {
			res := c.Result
			res.Key = &evaluation.KeyUse{Key: evaluation.KeyArtifact, Artifact: key.Artifact, Cached: true}
			return Payload{Result: res}, nil
		}
		// Not seen yet: is the build reproducible?
		again := e.Env.Build(ctx, pristine, x)
		if err := ctx.Err(); err != nil {
			return Payload{}, err
		}
		second := ""
		if again.OK {
			if second, err = collectArtifacts(pristine, filepath.Join(work, scratchArt2), e.Artifacts, room.ArtifactBytes); err != nil {
				var big *tooLargeError
				if !errors.As(err, &big) {
					return Payload{}, err
				}
				second = ""
			}
		}
		if second != key.Artifact {
			key.Why = "the build is not reproducible: a second build of the tree gave other artifacts"
			keyed = false
		}
	}
	start := time.Now()
	ev.Digest = key.Artifact // what the fresh suite's programs derive from
	res, runs, err := ev.RunBuilt(ctx, shown, build, paths)
	if err != nil {
		return Payload{}, err
	}
	if keyed {
		in := evaluation.Inputs{Artifact: key.Artifact, EnvVersion: version, TestPaths: paths}
		if _, err := evaluation.Keep(ctx, cache, in, res, time.Since(start)); err != nil {
			key.Why = "writing the artifacts' entry: " + err.Error()
		} else {
			key.Key = evaluation.KeyArtifact
		}
	}
	res.Key = key
	return Payload{Result: res, Runs: runs}, nil
}

// executor is the evaluation's sandboxed Executor, its own files in dir
// (inside the scratch space), in room, and what ends it.
func (e *Evaluator) executor(ctx context.Context, dir string, room Room) (environment.Executor, func(), error) {
	if e.Provider == "" {
		return nil, nil, errors.New("evaluation sandbox: no provider")
	}
	o := sandbox.ActionOptions{Dir: dir, Limits: room.Limits, Nice: room.Nice, DenyCCompiler: e.DenyCCompiler}
	acts, err := sandbox.NewActions(ctx, e.Provider, o)
	if err != nil {
		return nil, nil, fmt.Errorf("evaluation sandbox: %w", err)
	}
	return &actions{acts: acts}, func() { acts.Close() }, nil
}

// Where the actions see what they are shown.
const (
	treeInside    = "/workspace"
	caseInside    = "/case"
	programInside = "/run/program"
)

// actions is the sandboxed Executor: each method is one sandbox.Action
// showing only what it needs.
type actions struct{ acts *sandbox.Actions }

func (a *actions) Build(ctx context.Context, tree string, lim environment.Limits) (xec.Result, error) {
	return a.acts.Run(ctx, sandbox.Action{Path: "/bin/bash", Args: []string{"build.sh"}, Dir: treeInside,
		Mounts:  []sandbox.Mount{{Host: tree, Inside: treeInside, Writable: true}},
		Timeout: lim.Timeout, OutputLimit: lim.OutputLimit, CombineOutput: lim.CombineOutput})
}

func (a *actions) Compile(ctx context.Context, tree, dir string, args []string, lim environment.Limits) (xec.Result, error) {
	in := make([]string, len(args))
	for i, arg := range args {
		in[i] = arg
		if rel, ok := strings.CutPrefix(arg, dir+string(filepath.Separator)); ok {
			in[i] = caseInside + "/" + filepath.ToSlash(rel)
		}
	}
	return a.acts.Run(ctx, sandbox.Action{Path: treeInside + "/cc", Args: in, Dir: caseInside,
		Mounts:  []sandbox.Mount{{Host: tree, Inside: treeInside}, {Host: dir, Inside: caseInside, Writable: true}},
		Timeout: lim.Timeout, OutputLimit: lim.OutputLimit, CombineOutput: lim.CombineOutput})
}

func (a *actions) Run(ctx context.Context, program string, lim environment.Limits) (xec.Result, error) {
	return a.acts.Run(ctx, sandbox.Action{Path: programInside, Dir: "/tmp",
		Mounts:  []sandbox.Mount{{Host: program, Inside: programInside}},
		Timeout: lim.Timeout, OutputLimit: lim.OutputLimit, CombineOutput: lim.CombineOutput})
}
