package launch

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/trajlab/traj/environment"
	"github.com/trajlab/traj/environment/ccompiler"
	"github.com/trajlab/traj/environment/harbor"
	"github.com/trajlab/traj/orchestrator/task"
	"github.com/trajlab/traj/sandbox"
)

// OpenEnvironment returns the test environment a task names and checks
// that it knows every required test path.
func OpenEnvironment(tk *task.Task, testsDir string) (environment.Environment, error) {
	var env environment.Environment
	switch tk.Environment {
	case "c-compiler":
		e, err := ccompiler.New(ccompiler.Config{TestsDir: testsDir})
		if err != nil {
			return nil, fmt.Errorf("open environment %s: %w", tk.Environment, err)
		}
		env = e
	case "harbor":
		e, err := openHarbor(tk)
		if err != nil {
			return nil, err
		}
		env = e
	default:
		return nil, fmt.Errorf("task %s: unknown environment %q (known: c-compiler, harbor)", tk.Name, tk.Environment)
	}
	known := env.TestPaths()
	var missing []string
	for _, p := range tk.TestPaths {
		if !slices.Contains(known, p) {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("task %s: environment %s does not provide test paths %s (are the fixtures in --tests-dir / TRAJ_TESTS_DIR?)",
			tk.Name, tk.Environment, strings.Join(missing, ", "))
	}
	return env, nil
}

// openHarbor opens a Harbor task folder's environment: its image is
// built (or found) now, so a run fails before anything exists when the
// task cannot build offline.
func openHarbor(tk *task.Task) (environment.Environment, error) {
	if tk.Harbor == nil {
		return nil, fmt.Errorf("task %s: environment harbor needs a Harbor task folder", tk.Name)
	}
	e, err := harbor.Open(context.Background(), tk.Harbor, harbor.Options{})
	if err != nil {
		return nil, err
	}
	return e, nil
}

// TaskRoom is the agent's room a task brings (a Harbor task's): the
// container image the agent runs in, where the workspace is inside it,
// whether it may reach the internet, and its limits.
type TaskRoom struct {
	Image         string
	Workdir       string
	AllowInternet bool
	CPUs          float64
	Memory        int64
	// RootFS unpacks the image for a room in bwrap (harbor.Env.RootFS).
	RootFS func(ctx context.Context) (string, error)
}

// TaskRoomOf is env's room, nil for an environment without one (the C
// compiler's agent runs in traj's own sandbox image).
func TaskRoomOf(env environment.Environment) *TaskRoom {
	e, ok := env.(*harbor.Env)
	if !ok {
		return nil
	}
	s := e.Task.Environment
	return &TaskRoom{Image: e.Image.ID, Workdir: e.Workdir, AllowInternet: s.AllowInternet, CPUs: s.CPUs, Memory: s.Memory,
		RootFS: func(ctx context.Context) (string, error) { return e.RootFS(ctx, sandbox.CacheDir()) }}
}

// apply is o with the room's image, workdir, network and limits: the
// container provider (the image is the task's), or bwrap over the
// image's root file system when asked (--sandbox bwrap), no network
// beyond traj's gateways unless the task allows the internet, the task's
// CPUs and memory unless the user set them.
func (r *TaskRoom) apply(ctx context.Context, o SandboxOptions) (SandboxOptions, error) {
	switch o.Provider {
	case "", sandbox.ProviderContainer:
		o.Provider = sandbox.ProviderContainer
	case sandbox.ProviderBwrap:
		if r.RootFS == nil {
			return o, fmt.Errorf("--sandbox bwrap: the task's image has no root file system to show")
		}
		root, err := r.RootFS(ctx)
		if err != nil {
			return o, fmt.Errorf("--sandbox bwrap: %w", err)
		}
		o.RootFS = root
	default:
		return o, fmt.Errorf("--sandbox %s: a Harbor task's agent runs in its image: a container (--sandbox container) or bwrap over its root file system (--sandbox bwrap)", o.Provider)
	}
	o.Image, o.WorkspaceInside = r.Image, r.Workdir
	if !r.AllowInternet {
		if o.Network == sandbox.NetworkFull {
			return o, fmt.Errorf("--network full: the task sets allow_internet = false")
		}
		if o.Network == "" {
			o.Network = sandbox.NetworkGateways
		}
	}
	if o.Limits.CPUs == 0 {
		o.Limits.CPUs = r.CPUs
	}
	if o.Limits.Memory == 0 && r.Memory > 0 {
		o.Limits.Memory = r.Memory
	}
	return o, nil
}
