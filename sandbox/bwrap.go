package sandbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/trajlab/traj/sandbox/xec"
	"github.com/trajlab/traj/trace"
)

// InsideUID and InsideGID are the agent's ids inside bwrap (a user
// namespace maps them to the user running traj).
const (
	InsideUID = "1000"
	InsideGID = "1000"
)

// etcFiles are the host /etc entries bwrap shows (read-only): what
// compilers, git, TLS and name lookups need, and nothing with secrets.
// passwd and group are written by traj (the agent's user only).
var etcFiles = []string{
	"alternatives", "ssl", "ca-certificates", "ca-certificates.conf", "ld.so.cache", "ld.so.conf",
	"ld.so.conf.d", "localtime", "hosts", "resolv.conf", "nsswitch.conf", "host.conf", "gai.conf",
	"protocols", "services", "mime.types", "os-release", "debian_version", "timezone", "perl", "gcc",
}

// Bwrap runs each service in bubblewrap: the host's /usr (and the /bin,
// /lib… links or folders) and a few /etc files read-only, the workspace
// read-write at /workspace, the Mounts, a private /tmp and HOME, new user,
// PID, IPC, UTS and (unless NetworkFull) network namespaces, the root
// read-only. Limits are a cgroup where traj may create one.
type Bwrap struct {
	*core
	bin    string
	cg     *cgroup
	cgErr  error
	bridge *bridge
	etc    string
	// hide: files shown empty (DenyCCompiler).
	hide []string
}

var _ Sandbox = (*Bwrap)(nil)

// NewBwrap prepares a bwrap sandbox. It fails when bwrap is not
// installed or Helper is not set; Available says whether bwrap works
// here at all.
func NewBwrap(ctx context.Context, opts Options) (*Bwrap, error) {
	bin, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, fmt.Errorf("bwrap sandbox: %w (%s)", err, installAdvice)
	}
	if opts.Helper == "" {
		return nil, fmt.Errorf("bwrap sandbox: no helper binary (traj-sandbox)")
	}
	if r := opts.RootFS; r != "" {
		if st, err := os.Stat(filepath.Join(r, "usr")); err != nil || !filepath.IsAbs(r) || !st.IsDir() {
			return nil, fmt.Errorf("bwrap sandbox: root file system %q: want an absolute folder holding usr/", r)
		}
	}
	c, err := newCore(ctx, "bwrap", opts)
	if err != nil {
		return nil, err
	}
	c.table = append([]Mount{{Host: opts.Helper, Inside: HelperPath}}, c.table...)
	b := &Bwrap{core: c, bin: bin, etc: filepath.Join(c.dir, "etc")}
	if opts.DenyCCompiler {
		b.hide = HostCompilers()
	}
	if err := writeEtc(b.etc); err != nil {
		return nil, fmt.Errorf("bwrap sandbox: %w", err)
	}
	if b.bridge, err = newBridge(c.dir, c.opts.Network, c.opts.Gateways); err != nil {
		return nil, fmt.Errorf("bwrap sandbox: %w", err)
	}
	c.onStop(b.bridge.close)
	if lim := c.opts.Limits; lim != (Limits{}) {
		b.cg, b.cgErr = newCgroup("traj-"+filepath.Base(c.dir)+"-"+randomSuffix(), lim)
		if b.cg != nil {
			c.onStop(b.cg.kill)
		}
	}
	return b, nil
}

// writeEtc writes the passwd and group files of the sandbox's user.
func writeEtc(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files := map[string]string{
		"passwd": "root:x:0:0:root:/root:/bin/sh\nagent:x:" + InsideUID + ":" + InsideGID + ":agent:" + InsideHome + ":/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		"group":  "root:x:0:\nagent:x:" + InsideGID + ":\nnogroup:x:65534:\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Enforced says what isolation and limits are in force.
func (b *Bwrap) Enforced() string {
	s := "bwrap: user, pid, ipc, uts"
	if b.opts.Network != NetworkFull {
		s += ", network"
	}
	s += " namespaces; network " + string(b.opts.Network)
	switch {
	case b.cg != nil:
		s += "; cgroup limits: " + strings.Join(b.cg.enforced, ", ")
	case b.opts.Limits != (Limits{}):
		s += "; limits NOT enforced (no cgroup: " + b.cgErr.Error() + ")"
	}
	return s
}

// DialContext reaches 127.0.0.1:PORT inside the sandbox through a
// service's relay.
func (b *Bwrap) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var names []string
	for _, p := range b.running() {
		names = append(names, p.Name())
	}
	return b.bridge.dial(ctx, names, network, addr)
}

// StartService starts spec inside a new bwrap, behind the relay.
func (b *Bwrap) StartService(ctx context.Context, spec ServiceSpec) (Service, error) {
	spec = b.insideSpec(spec)
	return b.launch(ctx, spec, b.args(spec))
}

// launch starts bwrap with args for spec: in the sandbox's cgroup, behind
// a guard.
func (b *Bwrap) launch(ctx context.Context, spec ServiceSpec, args []string) (Service, error) {
	path := b.bin
	if b.cg != nil {
		// Join the cgroup before bwrap starts, so nothing it forks escapes.
		path = "/bin/sh"
		args = append([]string{"-c", joinScript(b.cg.procsFiles()), "sh", b.bin}, args...)
	}
	// The guard (the sandbox helper, outside the sandbox) ends bwrap's whole
	// tree when bwrap or traj dies: bwrap arms --die-with-parent in the
	// namespace's init only after its setup, and until then a dead outer
	// bwrap leaves that init blocked for good (xec/guard.go).
	return b.start(ctx, spec.Name, xec.Spec{Path: path, Args: args, Dir: b.dir, Env: b.env(spec), Grace: spec.Grace, Guard: b.opts.Helper})
}

// joinScript writes the shell's pid into each cgroup.procs file, then
// execs its arguments.
func joinScript(procs []string) string {
	var sb strings.Builder
	for _, p := range procs {
		sb.WriteString("echo $$ > " + trace.ShellWord(p) + " && ")
	}
	sb.WriteString(`exec "$@"`)
	return sb.String()
}

// env is the allowlist, the sandbox's fixed PATH, HOME, USER and TMPDIR,
// then the service's own variables. bwrap passes its environment to the
// command, so values never appear on a command line.
func (b *Bwrap) env(spec ServiceSpec) []string {
	return insideEnv(b.opts, spec)
}

func insideEnv(opts Options, spec ServiceSpec) []string {
	fixed := []string{"PATH=" + InsidePATH, "HOME=" + InsideHome, "USER=agent", "LOGNAME=agent", "TMPDIR=/tmp"}
	return mergeEnv(AllowedEnv(opts.Environ, opts.Env), fixed, spec.Env)
}

// args is bwrap's command line for spec.
func (b *Bwrap) args(spec ServiceSpec) []string {
	a := bwrapBase(b.etc, b.opts.Network, b.opts.RootFS)
	a = append(a, bwrapMounts(b.table)...)
	a = append(a, hideArgs(b.hide)...)
	a = append(a, "--bind", b.bridge.in, bridgeIn, "--ro-bind", b.bridge.out, bridgeOut, "--remount-ro", "/")
	a = append(a, "--chdir", spec.Dir, "--")
	return append(a, b.bridge.relayArgs(spec.Name, b.opts.Network, b.opts.Gateways, append([]string{spec.Path}, spec.Args...))...)
}

// bwrapBase is the start of every bwrap command line: new namespaces, the
// host's /usr (and the /bin, /lib… links or folders) and a few /etc
// files read-only, traj's passwd and group (etc), a private /proc, /dev,
// /tmp and HOME. A root ("" for the host's) is shown instead of the
// host's: its /usr, /bin, /lib… and /etc files (Options.RootFS).
func bwrapBase(etc string, network Network, root string) []string {
	a := []string{"--unshare-all", "--unshare-user", "--uid", InsideUID, "--gid", InsideGID,
		"--hostname", "traj-sandbox", "--die-with-parent", "--cap-drop", "ALL"}
	if network == NetworkFull {
		a = append(a, "--share-net")
	}
	a = append(a, "--ro-bind", root+"/usr", "/usr")
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		fi, err := os.Lstat(root + d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(root + d); err == nil {
				a = append(a, "--symlink", target, d)
			}
		case fi.IsDir():
			a = append(a, "--ro-bind", root+d, d)
		}
	}
	for _, f := range etcFiles {
		a = append(a, "--ro-bind-try", root+"/etc/"+f, "/etc/"+f)
	}
	return append(a, "--ro-bind", filepath.Join(etc, "passwd"), "/etc/passwd",
		"--ro-bind", filepath.Join(etc, "group"), "/etc/group",
		"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", InsideHome)
}

// bwrapMounts binds each mount, parents before children (a mount inside
// the workspace or HOME).
func bwrapMounts(table []Mount) []string {
	mounts := append([]Mount(nil), table...)
	sort.SliceStable(mounts, func(i, j int) bool { return len(mounts[i].Inside) < len(mounts[j].Inside) })
	var a []string
	for _, m := range mounts {
		flag := "--ro-bind"
		if m.Writable {
			flag = "--bind"
		}
		a = append(a, flag, m.Host, m.Inside)
	}
	return a
}
