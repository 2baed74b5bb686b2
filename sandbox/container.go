package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/trajlab/traj/sandbox/image"
	"github.com/trajlab/traj/sandbox/xec"
	"github.com/trajlab/traj/trace/atomicfile"
)

// Container runs each service in an OCI container (podman, or docker):
// the image from sandbox/image, the root file system read-only, the
// workspace at /workspace, the Mounts, a private /tmp and HOME, all
// capabilities dropped, no new privileges, network none (gateways, via
// the relay) or the host's (full); memory, CPU and process limits by the
// runtime.
type Container struct {
	*core
	engine image.Engine
	kind   string // "podman" or "docker"
	image  string
	bridge *bridge
	// hide: the image's files shown empty (DenyCCompiler).
	hide []string
}

var _ Sandbox = (*Container)(nil)

// FindEngine finds the container engine (bin, or podman then docker on
// PATH) and checks that it answers. Podman gets the settings measured to
// work on these machines: runc when installed (crun fails on cgroup
// hybrid mode), the cgroupfs manager, and a containers.conf without
// default ulimits (raising them fails with EPERM in some hosts).
func FindEngine(ctx context.Context, bin string) (image.Engine, string, error) {
	var err error
	if bin == "" {
		for _, b := range []string{"podman", "docker"} {
			if p, lerr := exec.LookPath(b); lerr == nil {
				bin = p
				break
			}
		}
		if bin == "" {
			return image.Engine{}, "", errors.New("no container engine (podman or docker) on PATH")
		}
	} else if bin, err = exec.LookPath(bin); err != nil {
		return image.Engine{}, "", fmt.Errorf("container engine: %w", err)
	}
	kind := "docker"
	e := image.Engine{Bin: bin}
	if strings.Contains(filepath.Base(bin), "podman") {
		kind = "podman"
		if _, err := exec.LookPath("runc"); err == nil {
			e.Args = append(e.Args, "--runtime", "runc")
		}
		e.Args = append(e.Args, "--cgroup-manager", "cgroupfs")
		conf, err := podmanConf()
		if err != nil {
			return image.Engine{}, "", err
		}
		e.Env = append(e.Env, "CONTAINERS_CONF="+conf)
	}
	if _, err := e.Run(ctx, 30*time.Second, nil, "info", "--format", "{{.Host.OS}}"); err != nil && kind == "podman" {
		return image.Engine{}, "", err
	} else if kind == "docker" {
		if _, err := e.Run(ctx, 30*time.Second, nil, "info", "--format", "{{.OSType}}"); err != nil {
			return image.Engine{}, "", err
		}
	}
	return e, kind, nil
}

// CacheDir is traj's folder for machine-wide state (the image build's
// lock, podman's containers.conf).
func CacheDir() string {
	d, err := os.UserCacheDir()
	if err != nil {
		d = os.TempDir()
	}
	return filepath.Join(d, "traj")
}

func podmanConf() (string, error) {
	p := filepath.Join(CacheDir(), "containers.conf")
	body := "# written by traj: podman's default ulimits fail with EPERM on some hosts\n[containers]\ndefault_ulimits = []\n"
	if b, err := os.ReadFile(p); err == nil && string(b) == body {
		return p, nil
	}
	if err := atomicfile.WriteBytes(p, []byte(body)); err != nil {
		return "", fmt.Errorf("podman config: %w", err)
	}
	return p, nil
}

// ContainerWorks finds the engine and checks it has the image (img, or
// image.Name() when empty).
func ContainerWorks(ctx context.Context, engine, img string) (image.Engine, error) {
	e, _, err := FindEngine(ctx, engine)
	if err != nil {
		return e, err
	}
	if img == "" {
		img = image.Name()
	}
	if !image.Exists(ctx, e, img) {
		return e, fmt.Errorf("container image %s is missing: run `make image` (builds it offline from Debian, about a minute)", img)
	}
	return e, nil
}

// NewContainer prepares a container sandbox; the engine must work and
// have the image.
func NewContainer(ctx context.Context, opts Options) (*Container, error) {
	if opts.Helper == "" {
		return nil, errors.New("container sandbox: no helper binary (traj-sandbox)")
	}
	e, kind, err := FindEngine(ctx, opts.Engine)
	if err != nil {
		return nil, fmt.Errorf("container sandbox: %w", err)
	}
	img := opts.Image
	if img == "" {
		img = image.Name()
	}
	if !image.Exists(ctx, e, img) {
		return nil, fmt.Errorf("container sandbox: image %s is missing: run `make image`", img)
	}
	c, err := newCore(ctx, "container", opts)
	if err != nil {
		return nil, err
	}
	c.table = append([]Mount{{Host: opts.Helper, Inside: HelperPath}}, c.table...)
	ct := &Container{core: c, engine: e, kind: kind, image: img}
	if opts.DenyCCompiler {
		if ct.hide, err = imageCompilers(ctx, e, img); err != nil {
			return nil, fmt.Errorf("container sandbox: %w", err)
		}
	}
	if ct.bridge, err = newBridge(c.dir, c.opts.Network, c.opts.Gateways); err != nil {
		return nil, fmt.Errorf("container sandbox: %w", err)
	}
	c.onStop(ct.bridge.close)
	return ct, nil
}

// Enforced says what isolation and limits are in force.
func (ct *Container) Enforced() string {
	var lim []string
	if ct.opts.Limits.Memory > 0 {
		lim = append(lim, "memory")
	}
	if ct.opts.Limits.CPUs > 0 {
		lim = append(lim, "cpu")
	}
	if ct.opts.Limits.Processes > 0 {
		lim = append(lim, "pids")
	}
	return fmt.Sprintf("container (%s, image %s): own namespaces, read-only root, no capabilities; network %s; runtime limits: %s",
		ct.kind, ct.image, ct.opts.Network, strings.Join(lim, ", "))
}

// DialContext reaches 127.0.0.1:PORT inside the sandbox through a
// service's relay.
func (ct *Container) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var names []string
	for _, p := range ct.running() {
		names = append(names, p.Name())
	}
	return ct.bridge.dial(ctx, names, network, addr)
}

// StartService runs spec in a new container (removed when it ends),
// behind the relay. Variables are passed by name (-e NAME) with their
// values in the engine's environment, never on its command line.
func (ct *Container) StartService(ctx context.Context, spec ServiceSpec) (Service, error) {
	spec = ct.insideSpec(spec)
	name := "traj-" + sanitize(filepath.Base(ct.dir)) + "-" + sanitize(spec.Name) + "-" + randomSuffix()
	env := insideEnv(ct.opts, spec)
	network := "none"
	if ct.opts.Network == NetworkFull {
		network = "host"
	}
	args := containerRunArgs(ct.engine.Args, name, network, ct.opts.Limits, ct.table)
	args = append(args, "-v", ct.bridge.in+":"+bridgeIn+":rw", "-v", ct.bridge.out+":"+bridgeOut+":ro")
	for _, h := range ct.hide {
		args = append(args, "-v", os.DevNull+":"+h+":ro")
	}
	for _, k := range envNames(env) {
		args = append(args, "-e", k)
	}
	args = append(args, "-w", spec.Dir, ct.image)
	args = append(args, ct.bridge.relayArgs(spec.Name, ct.opts.Network, ct.opts.Gateways, append([]string{spec.Path}, spec.Args...))...)
	svc, err := ct.start(ctx, spec.Name, xec.Spec{Path: ct.engine.Bin, Args: args, Dir: ct.dir,
		Env: engineEnv(ct.engine, env), Grace: spec.Grace})
	if err != nil {
		return nil, err
	}
	// The engine's client may die before its container (SIGKILL after the
	// grace period): remove the container whatever happened.
	ct.onStop(func() error {
		_, _ = ct.engine.Run(context.Background(), 30*time.Second, nil, "rm", "-f", "-t", "0", name)
		return nil
	})
	return svc, nil
}

// engineEnv is the engine client's environment: traj's (the client needs
// its PATH, XDG and HOME), its settings, then the sandbox's variables,
// which `-e NAME` hands to the container (later values win).
func engineEnv(e image.Engine, env []string) []string {
	return append(append(os.Environ(), e.Env...), env...)
}

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return b.String()
}

// containerRunArgs is the engine's `run` command line up to the mounts,
// the same for a service's container and an action's: a read-only root,
// no capabilities, a private /tmp and HOME, the network given, the limits
// and the mounts (read-only unless writable). extra flags go after --rm.
func containerRunArgs(engineArgs []string, name, network string, l Limits, mounts []Mount, extra ...string) []string {
	args := append([]string(nil), engineArgs...)
	args = append(args, "run", "--rm")
	args = append(args, extra...)
	args = append(args, "--name", name, "--hostname", "traj-sandbox",
		"--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--read-only",
		"--tmpfs", "/tmp:rw,exec,mode=1777", "--tmpfs", InsideHome+":rw,exec,mode=0755", "--init=false",
		"--network", network)
	if l.Memory > 0 {
		m := strconv.FormatInt(l.Memory, 10)
		args = append(args, "--memory", m, "--memory-swap", m)
	}
	if l.CPUs > 0 {
		args = append(args, "--cpus", strconv.FormatFloat(l.CPUs, 'f', -1, 64))
	}
	if l.Processes > 0 {
		args = append(args, "--pids-limit", strconv.Itoa(l.Processes))
	}
	for _, m := range mounts {
		mode := "ro"
		if m.Writable {
			mode = "rw"
		}
		args = append(args, "-v", m.Host+":"+m.Inside+":"+mode)
	}
	return args
}
