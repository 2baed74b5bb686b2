package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/trajlab/traj/sandbox/xec"
	"github.com/trajlab/traj/trace/gitstate"
)

// InsideWorkspace is where bwrap and container sandboxes show the
// workspace.
const InsideWorkspace = "/workspace"

// core is what every provider shares: the folders, the mount table, the
// services and their stopping.
type core struct {
	provider string
	dir, ws  string
	opts     Options
	// table maps host paths to inside paths, longest host path first.
	table []Mount

	mu       sync.Mutex
	services []*xec.Process
	names    map[string]bool
	stopped  bool
	// cleanup runs after every service stopped (newest first).
	cleanup []func() error
}

// newCore checks opts, makes the sandbox folder and the workspace
// repository, and builds the mount table (workspace at ws, which is the
// host path for local and InsideWorkspace otherwise).
func newCore(ctx context.Context, provider string, opts Options) (*core, error) {
	if opts.TrajectoryDir == "" {
		return nil, fmt.Errorf("%s sandbox: no trajectory folder", provider)
	}
	dir, err := filepath.Abs(opts.TrajectoryDir)
	if err != nil {
		return nil, fmt.Errorf("%s sandbox: %w", provider, err)
	}
	ws := opts.Workspace
	if ws == "" {
		ws = filepath.Join(dir, "workspace")
	}
	if ws, err = filepath.Abs(ws); err != nil {
		return nil, fmt.Errorf("%s sandbox: %w", provider, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%s sandbox: folder: %w", provider, err)
	}
	if err := initWorkspace(ctx, ws); err != nil {
		return nil, fmt.Errorf("%s sandbox: %w", provider, err)
	}
	if opts.Network == "" {
		opts.Network = NetworkGateways
	}
	switch opts.Network {
	case NetworkNone, NetworkGateways, NetworkFull:
	default:
		return nil, fmt.Errorf("%s sandbox: network policy %q: want none, gateways or full", provider, opts.Network)
	}
	c := &core{provider: provider, dir: dir, ws: ws, opts: opts, names: map[string]bool{}}
	wsInside := InsideWorkspace
	if in := opts.WorkspaceInside; in != "" {
		if !filepath.IsAbs(in) || filepath.Clean(in) != in || in == "/" {
			return nil, fmt.Errorf("%s sandbox: workspace inside %q must be absolute and clean", provider, in)
		}
		wsInside = in
	}
	if provider == "local" {
		wsInside = ws
	}
	c.table = append(c.table, Mount{Host: ws, Inside: wsInside, Writable: true})
	for _, m := range opts.Mounts {
		if !filepath.IsAbs(m.Host) {
			return nil, fmt.Errorf("%s sandbox: mount %q: host path must be absolute", provider, m.Host)
		}
		if _, err := os.Stat(m.Host); err != nil {
			return nil, fmt.Errorf("%s sandbox: mount: %w", provider, err)
		}
		if provider == "local" {
			m.Inside = m.Host
		} else if !filepath.IsAbs(m.Inside) || filepath.Clean(m.Inside) != m.Inside || m.Inside == "/" {
			return nil, fmt.Errorf("%s sandbox: mount %s: inside path %q must be absolute and clean", provider, m.Host, m.Inside)
		}
		m.Host = filepath.Clean(m.Host)
		c.table = append(c.table, m)
	}
	sort.SliceStable(c.table, func(i, j int) bool { return len(c.table[i].Host) > len(c.table[j].Host) })
	return c, nil
}

// initWorkspace makes an empty ws a git repository with an initial empty
// commit, for the agent. A workspace with files but no .git (the agent
// deleted its own repository, or resume restored the files from the
// checkpoint history) is used as it is: the agent's repository is its
// business, the record is the orchestrator's checkpoint history outside
// the workspace.
func initWorkspace(ctx context.Context, ws string) error {
	if _, err := gitstate.OpenClone(ctx, ws, gitstate.Options{}); err == nil {
		return nil
	}
	if ents, err := os.ReadDir(ws); err == nil && len(ents) > 0 {
		return nil
	}
	// A fixed commit time: the harnesses show the agent its repository's
	// latest commit (Claude Code's "Recent commits", Codex's
	// latest_git_commit_hash), so a time-stamped hash made every model
	// request of a rerun differ from its source's.
	epoch := func() time.Time { return time.Unix(0, 0).UTC() }
	if _, err := gitstate.Init(ctx, filepath.Join(ws, ".git"), ws, gitstate.Options{Now: epoch}); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	return nil
}

func (c *core) Provider() string      { return c.provider }
func (c *core) Workspace() string     { return c.ws }
func (c *core) TrajectoryDir() string { return c.dir }

// LogPath is <sandbox folder>/logs/<name>.log, outside every mount.
func (c *core) LogPath(name string) string { return filepath.Join(LogsDir(c.dir), name+".log") }

// LogsDir is the folder of a sandbox folder's process logs (LogPath); traj
// copies them, redacted, into the trajectory's logs/.
func LogsDir(sandboxDir string) string { return filepath.Join(sandboxDir, "logs") }

// Path maps a host path through the mount table (every path is itself
// in the local provider).
func (c *core) Path(p string) (string, bool) {
	p = filepath.Clean(p)
	if c.provider == ProviderLocal {
		return p, true
	}
	for _, m := range c.table {
		if rel, ok := within(m.Host, p); ok {
			return filepath.Join(m.Inside, rel), true
		}
	}
	return "", false
}

// HostPath maps an inside path back through the mount table.
func (c *core) HostPath(p string) (string, bool) {
	p = filepath.Clean(p)
	if c.provider == ProviderLocal {
		return p, true
	}
	best := -1
	var out string
	for _, m := range c.table {
		if rel, ok := within(m.Inside, p); ok && len(m.Inside) > best {
			best, out = len(m.Inside), filepath.Join(m.Host, rel)
		}
	}
	return out, best >= 0
}

// within is p relative to root when p is root or below it.
func within(root, p string) (string, bool) {
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}

var serviceName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// start runs spec (already wrapped by the provider) as a supervised
// process group logging to LogPath(name).
func (c *core) start(ctx context.Context, name string, spec xec.Spec) (Service, error) {
	if !serviceName.MatchString(name) {
		return nil, fmt.Errorf("start service %q: name must be letters, digits, '.', '_' or '-'", name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil, fmt.Errorf("start service %s: sandbox stopped", name)
	}
	if c.names[name] {
		return nil, fmt.Errorf("start service %s: name already used", name)
	}
	spec.Name = name
	spec.LogPath = c.LogPath(name)
	p, err := xec.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	c.names[name] = true
	c.services = append(c.services, p)
	return p, nil
}

// Stop stops every service, newest first, then runs the provider's
// cleanups. Errors of services that had exited on their own are returned
// joined; everything is stopped anyway.
func (c *core) Stop(ctx context.Context) error {
	c.mu.Lock()
	c.stopped = true
	svcs := c.services
	c.services = nil
	cleanup := c.cleanup
	c.cleanup = nil
	c.mu.Unlock()
	var errs []error
	for i := len(svcs) - 1; i >= 0; i-- {
		if err := svcs[i].Stop(); err != nil {
			errs = append(errs, err)
		}
	}
	for i := len(cleanup) - 1; i >= 0; i-- {
		if err := cleanup[i](); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// onStop registers a cleanup for Stop.
func (c *core) onStop(f func() error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cleanup = append(c.cleanup, f)
}

// running lists the services still running, newest first.
func (c *core) running() []*xec.Process {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*xec.Process
	for i := len(c.services) - 1; i >= 0; i-- {
		select {
		case <-c.services[i].Done():
		default:
			out = append(out, c.services[i])
		}
	}
	return out
}

// insideSpec maps spec's program and working folder to the sandbox's
// paths when they are host paths the sandbox shows (a caller may pass
// sb.Workspace() or a mounted binary as it knows it); an inside path is
// kept. The working folder defaults to the workspace.
func (c *core) insideSpec(spec ServiceSpec) ServiceSpec {
	if spec.Dir == "" {
		spec.Dir = c.ws
	}
	if in, ok := c.Path(spec.Dir); ok {
		spec.Dir = in
	}
	if filepath.IsAbs(spec.Path) {
		if in, ok := c.Path(spec.Path); ok {
			spec.Path = in
		}
	}
	return spec
}
