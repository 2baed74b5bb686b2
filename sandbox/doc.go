// Package sandbox is where an agent runs: a workspace (a git repository
// with an initial empty commit) and the supervised services a trajectory
// needs (the harness: OpenCode's server with the tools it starts, or a
// CLI harness's process per turn). Three providers implement one
// interface, Sandbox; New picks one by name and Default picks bwrap where
// it works, else container, and never local. Evaluations run in Actions
// instead: a fresh sandbox per action (action.go). `traj sandbox
// check|image` are WriteCheck and MakeImage (check.go).
//
// # What each provider enforces
//
//	                       bwrap                        container (podman/docker)     local
//	host files             /usr (+/bin,/lib… links) and  the image (Debian bookworm:   everything
//	                       a few /etc files, read-only    gcc, make, git, certs)
//	workspace              /workspace, read-write       /workspace, read-write        its host path
//	Mounts                 read-only or read-write      read-only or read-write       (host paths)
//	/tmp, HOME             private tmpfs each start     private tmpfs each start      host /tmp; HOME <sandbox>/home
//	root file system       read-only                    read-only, no capabilities    —
//	user                   uid 1000 in a user namespace root of the container, no     the user running traj
//	                                                    capabilities, no-new-privileges
//	processes              PID namespace: every process PID namespace                 a process group (setsid
//	                       dies with the sandbox                                       escapes it)
//	network none/gateways  own namespace (loopback),    --network none (loopback),    not enforced
//	                       gateways via the relay       gateways via the relay
//	network full           the host's                   --network host                the host's
//	memory, processes, CPU a cgroup (v1 as root, v2     the runtime (--memory,        not enforced
//	                       where delegated); without    --pids-limit, --cpus)
//	                       one: NOT enforced (Enforced
//	                       says so)
//	environment            the allowlist (AllowedEnv)   the allowlist                 the allowlist
//
// Limits apply to the sandbox as a whole in bwrap (one cgroup for every
// service) and to each service's container in container.
//
// # Reaching services
//
// Isolated sandboxes share no network with traj (unless NetworkFull), so
// the sandbox helper (cmd/traj-sandbox) runs inside as a relay in front
// of each service (see sandbox/relay): DialContext reaches a port on the sandbox's loopback
// through a Unix socket in the sandbox folder, and Expose turns that into
// a host loopback address for HTTP clients. Under NetworkGateways the
// relay also listens inside on each gateway address and forwards to traj,
// which connects only to the listed host endpoints.
//
// # When traj dies
//
// Every service ends with traj, also on SIGKILL. The relay inside ends
// its service when traj's lifeline socket closes (a container engine
// keeps a container running without its client). Each bwrap runs behind
// a guard, the sandbox helper outside the sandbox (sandbox/xec/guard.go): bubblewrap arms --die-with-parent in
// the namespace's init only after its setup, and a traj killed before
// that left the init blocked for good in half of the measured kills; the
// guard, a subreaper holding traj's lifeline pipe, kills the whole tree
// on EOF.
//
// # What is never shown
//
// Only the workspace, the Mounts the caller lists, the sandbox helper
// (HelperPath: cmd/traj-sandbox, never traj's own binary, which embeds
// the basics suite with its expectations; FindHelper) and the bridge
// sockets are visible: never the trajectory
// folder, the store, the evaluation cache, the checkpoint history, other
// sandboxes or the operator's home. The caller decides Mounts; the
// orchestrator lists the harness's binary and state folders for the
// agent's sandbox (never the test suites: run_tests runs behind the tool
// gateway). Evaluations use Actions (action.go): a fresh sandbox per
// build, compile or program, showing only the mounts given for it
// (replay/evalbox decides them; never a fixture) and, for a task that
// denies the C compiler, what deny.go changes (next section), with an environment of
// fixed variables only (none of the host's: an action sees the same
// wherever traj runs), at an absolute priority (nice's -n is relative:
// Actions computes it from traj's own), with fixed soft limits (ulimit:
// no core, 8 MiB stack, 1024 files; hard limits stay the host's), none
// of the descriptors traj inherited (marked close-on-exec), and
// under bwrap its options
// passed through a pipe (--args) so that pid 1's command line, which the
// action can read, holds no host path.
//
// # A task that denies the C compiler
//
// Options.DenyCCompiler (the agent's sandbox) and
// ActionOptions.DenyCCompiler (each evaluation action) show every C
// compiler of the room empty; actions also get every writable place
// noexec and memfd_create refused by seccomp. What and why: deny.go.
//
// # Measured here (2 cores, Debian 12, root, cgroup v1 hybrid)
//
// bwrap 0.8 starts a service in about 10 ms; a podman 4.3 container (runc,
// cgroupfs) in about 0.4 s. The image builds in 1–2.5 min (mmdebstrap
// about 60 s, import about 8 s) and is reused by tag. `make bench` has the
// numbers of this machine.
package sandbox
