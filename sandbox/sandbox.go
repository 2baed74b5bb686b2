package sandbox

import (
	"context"
	"net"
	"time"
)

// Sandbox is what the orchestrator needs from a place to run an agent.
type Sandbox interface {
	// Provider is the provider's name: "local", "bwrap" or "container".
	Provider() string
	// Enforced says, for logs, what isolation and limits are in force.
	Enforced() string
	// Workspace is the agent's working tree on the host.
	Workspace() string
	// TrajectoryDir is the sandbox's folder on the host, owned by traj
	// (harness state, service logs); it is never mounted whole into the
	// sandbox.
	TrajectoryDir() string
	// Path is where the processes of the sandbox see host path p: the
	// workspace, a Mount, or a folder below one of them. ok is false for
	// a path the sandbox does not show.
	Path(p string) (inside string, ok bool)
	// HostPath is the inverse of Path: the host path of a path seen
	// inside the sandbox.
	HostPath(inside string) (host string, ok bool)
	// DialContext connects to a TCP address as seen from inside the
	// sandbox (a service's 127.0.0.1:PORT), whatever its network policy.
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
	// StartService starts a supervised service; its stdout and stderr go
	// to LogPath(name). It is stopped by Stop or when ctx is cancelled.
	StartService(ctx context.Context, spec ServiceSpec) (Service, error)
	// LogPath is the log file of the service called name.
	LogPath(name string) string
	// Stop stops every service (newest first) and waits until each
	// service and every process it started is gone.
	Stop(ctx context.Context) error
}

// ServiceSpec describes a service process.
type ServiceSpec struct {
	// Name is unique within the sandbox; it names the log file.
	Name string
	// Path and Args name the program as the sandbox sees it (use
	// Sandbox.Path for a host file that a Mount shows).
	Path string
	Args []string
	// Dir is the working directory inside the sandbox; the workspace
	// when empty.
	Dir string
	// Env is the service's own KEY=VALUE variables, added to the
	// sandbox's environment (Options.Env and the allowlist); they win
	// over it.
	Env []string
	// Grace between SIGTERM and SIGKILL on stop.
	Grace time.Duration
}

// Service is a running supervised process group.
type Service interface {
	Name() string
	PID() int
	// Done is closed when the service's main process has exited.
	Done() <-chan struct{}
	// Err is the exit error once Done is closed.
	Err() error
	// Stop ends the process group and reaps it.
	Stop() error
}

// Mount shows a host file or folder inside the sandbox.
type Mount struct {
	// Host is the file or folder on the host.
	Host string
	// Inside is the absolute path the sandbox shows it at (ignored by
	// the local provider, where every path is the host's).
	Inside string
	// Writable mounts read-write; read-only otherwise.
	Writable bool
}

// Network is a sandbox's network policy.
type Network string

// Network policies.
const (
	// NetworkNone: loopback only, inside the sandbox.
	NetworkNone Network = "none"
	// NetworkGateways: loopback inside the sandbox, plus the host
	// endpoints listed in Options.Gateways (what traj serves to the
	// agent: the model endpoint, later the tool gateway), reached at
	// the same address inside.
	NetworkGateways Network = "gateways"
	// NetworkFull: the host's network, loopback included.
	NetworkFull Network = "full"
)

// Limits bound a sandbox's resources. Zero means no limit.
type Limits struct {
	// CPUs is the CPU time available, in CPUs (1.5 = one and a half).
	CPUs float64 `json:"cpus,omitempty"`
	// Memory is the memory limit in bytes for all processes together.
	Memory int64 `json:"memory,omitempty"`
	// Processes is the most processes (and threads) at once.
	Processes int `json:"processes,omitempty"`
}

// Default limits: generous for an agent that builds a compiler and runs
// test suites, small enough that many trajectories share a machine.
const (
	DefaultMemory    = 4 << 30
	DefaultProcesses = 4096
)

// Options configure a sandbox; every provider takes the same.
type Options struct {
	// TrajectoryDir is traj's folder for this sandbox (created if
	// missing): harness state, service logs, the bridge sockets.
	TrajectoryDir string
	// Workspace is the agent's working tree; <TrajectoryDir>/workspace
	// when empty. A missing or empty folder becomes a git repository with
	// an initial empty commit, for the agent (OpenCode keys its project and
	// its patch parts on it); an existing one is reused (resume). That
	// repository is the agent's to change or delete: traj's record of the
	// workspace is the orchestrator's checkpoint history, outside it.
	Workspace string
	// Mounts are the other host paths the sandbox shows (the harness
	// binary, its config read-only, its state folders); the sandbox
	// helper (Helper) is shown by the provider itself.
	// Nothing else of the host is visible in bwrap and container.
	Mounts []Mount
	// Limits for all processes of the sandbox together.
	Limits Limits
	// Network policy; NetworkGateways when empty.
	Network Network
	// Gateways are the host TCP endpoints ("127.0.0.1:PORT") the sandbox
	// reaches under NetworkGateways.
	Gateways []string
	// Env lists extra variable names passed from traj's environment (the
	// allowlist: see AllowedEnv), e.g. an API key's variable.
	Env []string
	// Environ is the environment the allowlist picks from; os.Environ()
	// when nil.
	Environ []string
	// Helper is the sandbox helper (FindHelper, cmd/traj-sandbox), never
	// traj's own binary, which holds the suites: bwrap and container run
	// it inside the sandbox as the relay that connects the sandbox's
	// loopback to traj (see sandbox/relay), bwrap on the host as each
	// service's guard. Unused by local.
	Helper string
	// DenyCCompiler shows every C compiler of the room empty (see
	// deny.go): the host's in bwrap, the image's in a container. Unused
	// by local.
	DenyCCompiler bool
	// Image is the container image (container provider only); the
	// image `make image` builds when empty.
	Image string
	// Engine is the container engine binary ("podman" or "docker");
	// found on PATH when empty (container provider only).
	Engine string
	// WorkspaceInside is where bwrap and container show the workspace
	// (InsideWorkspace when empty): a Harbor task's workdir.
	WorkspaceInside string
	// RootFS, bwrap only, is a root file system on the host (a container
	// image's, unpacked) shown read-only instead of the host's: its /usr,
	// /bin, /lib… and /etc files (the places the host's are shown).
	// Empty: the host's.
	RootFS string
}
