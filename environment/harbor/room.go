package harbor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/trajlab/traj/sandbox/xec"
)

// Seed copies the image's workdir (what the Dockerfile put there) into
// workspace, the agent's working tree on the host: the trajectory starts
// from the task's files. An image without the folder seeds nothing.
func (e *Env) Seed(ctx context.Context, workspace string) error {
	name := "traj-seed-" + e.Task.Name + "-" + randomSuffix()
	if _, err := e.Engine.Run(ctx, time.Minute, nil, "create", "--name", name, e.Image.ID, "true"); err != nil {
		return fmt.Errorf("seed workspace from %s: %w", e.Image.Name, err)
	}
	defer e.Engine.Run(context.WithoutCancel(ctx), time.Minute, nil, "rm", "-f", "--ignore", name) //nolint:errcheck
	if err := os.MkdirAll(workspace, 0o755); err != nil {
		return fmt.Errorf("seed workspace: %w", err)
	}
	out, err := e.Engine.Run(ctx, 10*time.Minute, nil, "cp", name+":"+e.Workdir+"/.", workspace)
	if err != nil && !strings.Contains(strings.ToLower(out), "no such file") {
		return fmt.Errorf("seed workspace from %s:%s: %w", e.Image.Name, e.Workdir, err)
	}
	return nil
}

// Room is an agent's room of the task: a container from the task's image
// with the workspace bound at the workdir, the task's network policy
// (none unless allow_internet), CPUs and memory, running until Close,
// so what a script leaves running there (a daemon) lives on while the
// verifier scores the tree elsewhere. The oracle, the no-op agent and
// the attack tests run their scripts in one; a harness's run uses the
// container sandbox with the same image and workdir.
type Room struct {
	env  *Env
	name string
}

// OpenRoom starts a room on workspace (a host folder).
func (e *Env) OpenRoom(ctx context.Context, workspace string) (*Room, error) {
	abs, err := filepath.Abs(workspace)
	if err != nil {
		return nil, fmt.Errorf("open room: %w", err)
	}
	r := &Room{env: e, name: "traj-room-" + e.Task.Name + "-" + randomSuffix()}
	args := e.runArgs(r.name, []string{abs + ":" + e.Workdir + ":rw"}, "-d")
	args = append(args, "-w", e.Workdir, "--entrypoint", "sleep", e.Image.ID, "infinity")
	if _, err := e.Engine.Run(ctx, 5*time.Minute, nil, args[len(e.Engine.Args):]...); err != nil {
		return nil, fmt.Errorf("open room: %w", err)
	}
	return r, nil
}

// Upload copies a host folder into the room at inside.
func (r *Room) Upload(ctx context.Context, from, inside string) error {
	if _, err := r.env.Engine.Run(ctx, 10*time.Minute, nil, "cp", from+"/.", r.name+":"+inside); err != nil {
		return fmt.Errorf("upload %s to the room: %w", from, err)
	}
	return nil
}

// Exec runs `bash -c script` in the room, in the workdir, within timeout
// (0: the task's agent timeout); what it starts in the background stays.
func (r *Room) Exec(ctx context.Context, script string, timeout time.Duration) (xec.Result, error) {
	if timeout <= 0 {
		timeout = r.env.Task.AgentTimeout
	}
	args := append(append([]string(nil), r.env.Engine.Args...), "exec", "-w", r.env.Workdir, r.name, "bash", "-c", script)
	res, err := xec.Run(ctx, xec.Command{Path: r.env.Engine.Bin, Args: args, Env: append(os.Environ(), r.env.Engine.Env...),
		Timeout: timeout, OutputLimit: 64 << 10, CombineOutput: true})
	if err != nil {
		return res, fmt.Errorf("exec in the room: %w", err)
	}
	return res, nil
}

// Close removes the room and everything running in it.
func (r *Room) Close() error {
	if _, err := r.env.Engine.Run(context.Background(), time.Minute, nil, "rm", "-f", "-t", "0", "--ignore", r.name); err != nil {
		return fmt.Errorf("close room: %w", err)
	}
	return nil
}

// SolutionInside is where the oracle's room shows solution/.
const SolutionInside = "/solution"

// Oracle runs the task's solution/solve.sh in a room on workspace
// (Harbor's oracle agent): solution/ is uploaded to /solution, the script
// runs in the workdir within the agent timeout. A failing script is an
// error carrying its output's tail.
func (e *Env) Oracle(ctx context.Context, workspace string) error {
	if !e.Task.HasSolution {
		return fmt.Errorf("oracle of %s: no %s", e.Task.Name, SolutionScript)
	}
	r, err := e.OpenRoom(ctx, workspace)
	if err != nil {
		return fmt.Errorf("oracle of %s: %w", e.Task.Name, err)
	}
	defer r.Close() //nolint:errcheck
	if err := r.Upload(ctx, filepath.Join(e.Task.Dir, "solution"), SolutionInside); err != nil {
		return fmt.Errorf("oracle of %s: %w", e.Task.Name, err)
	}
	res, err := r.Exec(ctx, "bash "+SolutionInside+"/solve.sh", 0)
	switch {
	case err != nil:
		return fmt.Errorf("oracle of %s: %w", e.Task.Name, err)
	case res.TimedOut:
		return fmt.Errorf("oracle of %s: solve.sh did not finish within the agent timeout (%s)", e.Task.Name, e.Task.AgentTimeout)
	case res.ExitCode != 0:
		return fmt.Errorf("oracle of %s: solve.sh exit status %d: %s", e.Task.Name, res.ExitCode, tailString(res.Stdout, 1500))
	}
	return nil
}
