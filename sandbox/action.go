package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/trajlab/traj/sandbox/image"
	"github.com/trajlab/traj/sandbox/xec"
	"github.com/trajlab/traj/trace"
)

// Action is one short command run in a sandbox of its own: an
// evaluation's build, one compile, one program (replay/evalbox). It sees
// the host's toolchain read-only (bwrap: /usr; container: the image),
// a private /tmp and HOME, no network, and only its Mounts of the host.
type Action struct {
	// Path and Args name the program as the action sees it.
	Path string
	Args []string
	// Dir is the working directory inside.
	Dir string
	// Mounts are the host paths this action sees.
	Mounts []Mount
	// Timeout ends the action (every process of it); it must be positive.
	Timeout time.Duration
	// OutputLimit caps stdout and stderr, each.
	OutputLimit int
	// CombineOutput sends stderr into stdout.
	CombineOutput bool
}

// Actions runs Actions, each in a fresh sandbox: its own PID namespace
// (bwrap) or container, so no process it starts outlives it, and no
// action sees another's files unless both are given the same Mount. All
// actions of one Actions share its limits (one cgroup, bwrap) and, with
// DenyCCompiler, its compilers shown empty (deny.go).
type Actions struct {
	provider string
	opts     ActionOptions
	dir      string
	// bwrap
	bin   string
	etc   string
	cg    *cgroup
	cgErr error
	// container
	engine image.Engine
	image  string
	// deny: DenyCCompiler's additions, nil without it.
	deny *actionDeny
}

// ActionOptions configure Actions.
type ActionOptions struct {
	// Dir is traj's folder for the actions' own files (passwd, group);
	// created if missing, never shown whole.
	Dir string
	// Limits bound all actions together (bwrap: one cgroup where traj may
	// make one) or each (container).
	Limits Limits
	// DenyCCompiler takes the C compiler out of every action (deny.go):
	// the compilers shown empty, every writable place noexec, memfd_create
	// refused. bwrap needs root for it (a noexec tmpfs).
	DenyCCompiler bool
	// Nice lowers the actions' CPU priority (0..19).
	Nice int
	// Image and Engine: as Options' (container only).
	Image  string
	Engine string
}

// NewActions prepares Actions for provider "bwrap" or "container".
func NewActions(ctx context.Context, provider string, o ActionOptions) (*Actions, error) {
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("actions folder: %w", err)
	}
	a := &Actions{provider: provider, opts: o, dir: o.Dir}
	inheritedCloseOnExec()
	switch provider {
	case ProviderBwrap:
		bin, err := exec.LookPath("bwrap")
		if err != nil {
			return nil, fmt.Errorf("bwrap actions: %w (%s)", err, installAdvice)
		}
		a.bin, a.etc = bin, filepath.Join(o.Dir, "etc")
		if err := writeEtc(a.etc); err != nil {
			return nil, fmt.Errorf("bwrap actions: %w", err)
		}
		if o.Limits != (Limits{}) {
			a.cg, a.cgErr = newCgroup("traj-actions-"+randomSuffix(), o.Limits)
		}
	case ProviderContainer:
		e, _, err := FindEngine(ctx, o.Engine)
		if err != nil {
			return nil, fmt.Errorf("container actions: %w", err)
		}
		img := o.Image
		if img == "" {
			img = image.Name()
		}
		if !image.Exists(ctx, e, img) {
			return nil, fmt.Errorf("container actions: image %s is missing: run `make image`", img)
		}
		a.engine, a.image = e, img
	default:
		return nil, fmt.Errorf("actions: provider %q runs no sandbox (use the host for trusted trees)", provider)
	}
	if o.DenyCCompiler {
		d, err := newActionDeny(ctx, a)
		if err != nil {
			if a.cg != nil {
				_ = a.cg.kill()
			}
			return nil, err
		}
		a.deny = d
	}
	return a, nil
}

// Enforced says what isolation and limits are in force, for logs.
func (a *Actions) Enforced() string {
	switch {
	case a.provider == ProviderContainer:
		return "a container per action, network none, runtime limits"
	case a.cg != nil:
		return "a bwrap per action (own pid namespace), network none; cgroup limits: " + fmt.Sprint(a.cg.enforced)
	case a.opts.Limits != (Limits{}):
		return "a bwrap per action (own pid namespace), network none; limits NOT enforced (no cgroup: " + a.cgErr.Error() + ")"
	}
	return "a bwrap per action (own pid namespace), network none"
}

// Run runs one action and waits until it and every process it started
// are gone. The error is for an action that could not start; how it ended
// is in the result.
func (a *Actions) Run(ctx context.Context, act Action) (xec.Result, error) {
	if a.provider == ProviderContainer {
		return a.runContainer(ctx, act)
	}
	args := bwrapBase(a.etc, NetworkNone, "")
	args = append(args, "--new-session")
	if a.deny != nil {
		extra, viewed, done, err := a.deny.bwrap(act.Mounts)
		if err != nil {
			return xec.Result{}, err
		}
		defer done()
		args = append(args, bwrapMounts(viewed)...)
		args = append(args, extra...)
	} else {
		args = append(args, bwrapMounts(act.Mounts)...)
	}
	args = append(args, "--remount-ro", "/", "--chdir", act.Dir)
	// The options reach bwrap through a pipe (--args 3), not its command
	// line: bwrap's init is the namespace's pid 1, and its command line
	// (/proc/1/cmdline, readable by the action) would show the mounts'
	// host paths, which differ from one evaluation context to another.
	// The command stays there (bwrap wants it): paths inside only.
	argsR, argsW, err := os.Pipe()
	if err != nil {
		return xec.Result{ExitCode: -1}, fmt.Errorf("bwrap action: %w", err)
	}
	defer argsR.Close()
	go func() {
		_, _ = argsW.Write([]byte(strings.Join(args, "\x00") + "\x00"))
		argsW.Close()
	}()
	// Join the cgroup (and set the priority) before bwrap starts, so
	// nothing it forks escapes; the soft limits an action can read
	// (ulimit) are set to fixed values, not inherited from whatever
	// started traj (a hard limit below them leaves them lower).
	var procs []string
	if a.cg != nil {
		procs = a.cg.procsFiles()
	}
	pre := []string{"sh", a.bin}
	if a.opts.Nice > 0 {
		pre = append(append([]string{"sh"}, niceArgs(a.opts.Nice)...), a.bin)
	}
	script := actionRlimits + joinScript(procs)
	if a.deny != nil {
		script += " 9<" + trace.ShellWord(a.deny.filter) // bwrap --seccomp 9
	}
	cmd := append(append([]string{"-c", script}, pre...), "--args", "3", "--", act.Path)
	cmd = append(cmd, act.Args...)
	// bwrap's own init is the namespace's pid 1: when the action's
	// program exits, it exits, and the kernel kills every process left in
	// the namespace (a setsid daemon too).
	return xec.Run(ctx, xec.Command{Path: "/bin/sh", Args: cmd, Dir: a.dir, Env: actionEnv(), ExtraFiles: []*os.File{argsR},
		Timeout: act.Timeout, OutputLimit: act.OutputLimit, CombineOutput: act.CombineOutput})
}

// inheritedCloseOnExec marks close-on-exec every descriptor above 2 that
// traj's process holds: Go opens its own so, but those traj inherited
// (a shell's, a batch system's) would pass on to every action, through
// bwrap and into the room, where they differ from one place to another
// and may reach a host process. A child that needs one is given it
// (exec.Cmd.ExtraFiles), which clears the mark on its copy.
func inheritedCloseOnExec() {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}

// actionRlimits sets an action's soft limits (sh's ulimit): no core
// files, an 8 MiB stack, 1024 open files.
const actionRlimits = "ulimit -S -c 0 2>/dev/null; ulimit -S -s 8192 2>/dev/null; ulimit -S -n 1024 2>/dev/null; "

// niceArgs is the nice command line that runs its command at priority n
// (0..19) whatever traj's own: nice's -n is relative to the caller's, and
// traj may itself run niced (a Slurm job, `nice traj …`). Only root may
// raise a priority: elsewhere a traj niced above n leaves its actions at
// its own.
func niceArgs(n int) []string {
	n = min(max(n, 0), 19)
	cur := 0
	// The raw getpriority returns 20 - nice.
	if p, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0); err == nil {
		cur = 20 - p
	}
	delta := n - cur
	if delta < 0 && os.Geteuid() != 0 {
		delta = 0
	}
	return []string{"nice", "-n", strconv.Itoa(delta)}
}

// actionEnv is every action's environment: the sandbox's fixed
// variables and none of the host's (not even the locale), so an action
// sees the same environment wherever traj runs.
func actionEnv() []string { return insideEnv(Options{Environ: []string{}}, ServiceSpec{}) }

func (a *Actions) runContainer(ctx context.Context, act Action) (xec.Result, error) {
	name := "traj-action-" + randomSuffix()
	env := actionEnv()
	args := containerRunArgs(a.engine.Args, name, "none", a.opts.Limits, act.Mounts, "-i=false")
	if a.deny != nil {
		args = a.deny.container(args)
	}
	for _, k := range envNames(env) {
		args = append(args, "-e", k)
	}
	// The same soft limits as a bwrap action's, set by the image's shell,
	// which then becomes the action's program (pid 1's command line is
	// the program's): the engine passes on the limits of whatever started
	// traj, and setting them with --ulimit fails with EPERM on some hosts.
	args = append(args, "-w", act.Dir, a.image, "/bin/sh", "-c", actionRlimits+`exec "$@"`, "sh", act.Path)
	args = append(args, act.Args...)
	path := a.engine.Bin
	if a.opts.Nice > 0 {
		// The container's processes inherit the engine's priority.
		nice := niceArgs(a.opts.Nice)
		path, args = nice[0], append(append(nice[1:], a.engine.Bin), args...)
	}
	res, err := xec.Run(ctx, xec.Command{Path: path, Args: args, Dir: a.dir, Env: engineEnv(a.engine, env),
		Timeout: act.Timeout, OutputLimit: act.OutputLimit, CombineOutput: act.CombineOutput})
	if err != nil || res.TimedOut || ctx.Err() != nil {
		// The engine's client died before its container (a timeout):
		// remove the container.
		_, _ = a.engine.Run(context.WithoutCancel(ctx), 30*time.Second, nil, "rm", "-f", "-t", "0", name)
	}
	return res, err
}

// Close kills whatever is left in the actions' cgroup and removes it.
func (a *Actions) Close() error {
	a.deny.close()
	if a.cg != nil {
		return a.cg.kill()
	}
	return nil
}
