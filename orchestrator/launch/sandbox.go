package launch

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/sandbox/disk"
	"github.com/trajlab/traj/sandbox/harness"
)

// SandboxOptions say where the agent runs. The zero value is the default
// provider (bwrap where it works, else container; never local unless
// asked), the default limits and the network policy that fits the model
// endpoint.
type SandboxOptions struct {
	// Provider is "bwrap", "container", "local", or "" for the default.
	Provider string `json:"provider,omitempty"`
	// Limits; zero Memory and Processes take sandbox.DefaultMemory and
	// DefaultProcesses, zero CPUs is no CPU limit. Memory < 0: no limit.
	Limits sandbox.Limits `json:"limits"`
	// Network is none, gateways or full; "" is gateways when every model
	// endpoint is on this machine (the scripted model, a loopback
	// --base-url), else full.
	Network sandbox.Network `json:"network,omitempty"`
	// Env names variables of traj's environment the agent gets besides
	// the allowlist (LANG, LC_*, TERM, TZ) and the API-key variables.
	Env []string `json:"env,omitempty"`
	// Disk caps in bytes what the agent's sandbox can write on the host
	// (the workspace, the harness's writable state): a filesystem image
	// holding them (orchestrator.MountWorkspace, package sandbox/disk),
	// so the agent's writes beyond it fail with ENOSPC inside the sandbox. 0 is unset (a resume keeps the recorded
	// one), < 0 no cap.
	Disk int64 `json:"disk,omitempty"`
	// DiskOptional: Disk is the default, not asked for; where no image can
	// be mounted (not root) the run goes on without a cap.
	DiskOptional bool `json:"disk_optional,omitempty"`
	// Image and Engine select the container image and engine.
	Image  string `json:"image,omitempty"`
	Engine string `json:"engine,omitempty"`
	// WorkspaceInside is where the sandbox shows the workspace
	// (sandbox.InsideWorkspace when empty; a Harbor task's workdir).
	WorkspaceInside string `json:"workspace_inside,omitempty"`
	// RootFS is the root file system bwrap shows (sandbox.Options.RootFS;
	// a Harbor task's image unpacked, derived again on resume).
	RootFS string `json:"-"`
}

// Check says whether the sandbox can be made here: the provider works
// (the default: one of bwrap and container does) and the network policy
// is known. Every harness reaches its model through traj's model gateway
// on loopback, so each policy leaves the model reachable.
func (o SandboxOptions) Check() error {
	ctx := context.Background()
	switch o.Provider {
	case "":
		if _, err := sandbox.Default(ctx); err != nil {
			return err
		}
	case sandbox.ProviderBwrap:
		if err := sandbox.BwrapWorks(ctx); err != nil {
			return fmt.Errorf("--sandbox bwrap: %w", err)
		}
	case sandbox.ProviderContainer:
		if _, err := sandbox.ContainerWorks(ctx, o.Engine, o.Image); err != nil {
			return fmt.Errorf("--sandbox container: %w", err)
		}
	case sandbox.ProviderLocal:
	default:
		return fmt.Errorf("--sandbox %q: want bwrap, container or local", o.Provider)
	}
	if o.Disk > 0 && !o.DiskOptional {
		if err := disk.Available(); err != nil {
			return fmt.Errorf("--disk: %w (--disk off runs without a cap)", err)
		}
		if o.Disk < disk.MinSize {
			return fmt.Errorf("--disk %d: the smallest cap is %d MiB", o.Disk, disk.MinSize>>20)
		}
	}
	switch o.Network {
	case "", sandbox.NetworkFull, sandbox.NetworkNone, sandbox.NetworkGateways:
	default:
		return fmt.Errorf("--network %q: want none, gateways or full", o.Network)
	}
	return nil
}

// Or is o with each unset setting taken from rec (a resume keeps the
// sandbox the run had, except what the user sets again).
func (o SandboxOptions) Or(rec SandboxOptions) SandboxOptions {
	if o.Provider == "" {
		o.Provider = rec.Provider
	}
	if o.Limits.CPUs == 0 {
		o.Limits.CPUs = rec.Limits.CPUs
	}
	if o.Limits.Memory == 0 {
		o.Limits.Memory = rec.Limits.Memory
	}
	if o.Limits.Processes == 0 {
		o.Limits.Processes = rec.Limits.Processes
	}
	if o.Disk == 0 {
		o.Disk, o.DiskOptional = rec.Disk, rec.DiskOptional
	}
	if o.Network == "" {
		o.Network = rec.Network
	}
	if o.Env == nil {
		o.Env = rec.Env
	}
	if o.Image == "" {
		o.Image = rec.Image
	}
	if o.Engine == "" {
		o.Engine = rec.Engine
	}
	return o
}

// openSandbox makes the run's sandbox: the workspace, the harness's binary
// and state folders, the sandbox helper (the relay and the tool stub), nothing
// else; gateways are the host endpoints the
// agent may reach under the gateways policy.
func openSandbox(ctx context.Context, spec Spec, h harness.Harness, bin, helper string, gateways []string) (sandbox.Sandbox, error) {
	o := spec.Sandbox
	if spec.Room != nil {
		var err error
		if o, err = spec.Room.apply(ctx, o); err != nil {
			return nil, err
		}
	}
	provider := o.Provider
	if provider == "" {
		p, err := sandbox.Default(ctx)
		if err != nil {
			return nil, err
		}
		provider = p
	}
	mounts, err := h.Mounts(spec.SandboxDir, bin)
	if err != nil {
		return nil, err
	}
	// The test suites never enter the agent's sandbox: run_tests runs
	// outside, behind the tool gateway, in an evaluation sandbox.
	lim := o.Limits
	switch {
	case lim.Memory == 0:
		lim.Memory = sandbox.DefaultMemory
	case lim.Memory < 0:
		lim.Memory = 0
	}
	if lim.Processes == 0 {
		lim.Processes = sandbox.DefaultProcesses
	}
	network := o.Network
	if network == "" {
		network = sandbox.NetworkGateways
		if len(gateways) == 0 {
			network = sandbox.NetworkFull
			if provider != sandbox.ProviderLocal {
				spec.Logger.Warn("network full: the model endpoint is not on this machine, so the agent gets the host's network (--network gateways needs a local endpoint)")
			}
		}
	}
	// No API key enters the sandbox: the harness presents a token to the
	// model gateway, which alone holds the key.
	env := append([]string(nil), o.Env...)
	sb, err := sandbox.New(ctx, provider, sandbox.Options{TrajectoryDir: spec.SandboxDir, Workspace: spec.Workspace,
		Mounts: mounts, Limits: lim, Network: network, Gateways: gateways, Env: env, Helper: helper, DenyCCompiler: spec.DenyCCompiler,
		Image: o.Image, Engine: o.Engine, WorkspaceInside: o.WorkspaceInside, RootFS: o.RootFS})
	if err != nil {
		return nil, err
	}
	if provider == sandbox.ProviderLocal {
		spec.Logger.Warn("--sandbox local: the agent is NOT contained: it can read and change everything your user can (trajectory folder, store, test fixtures, credentials)")
	}
	if e := sb.Enforced(); strings.Contains(e, "NOT") {
		spec.Logger.Warn("sandbox", "enforced", e)
	} else {
		spec.Logger.Info("sandbox", "enforced", e)
	}
	return sb, nil
}

// insidePath is p as the sandbox shows it; a path the sandbox does not
// show is an error (it would silently not exist inside).
func insidePath(sb sandbox.Sandbox, p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	in, ok := sb.Path(abs)
	if !ok {
		return "", fmt.Errorf("%s is not shown in the %s sandbox", abs, sb.Provider())
	}
	return in, nil
}
