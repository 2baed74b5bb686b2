// Package harbor is traj's second environment: a Harbor task folder
// (the format of Terminal-Bench 2.x and many datasets), scored at every
// checkpoint in a fresh verifier room.
//
// A task folder holds task.toml ([agent] and [verifier] timeout_sec,
// [verifier] env, [environment] build_timeout_sec, cpus, memory or
// memory_mb, storage or storage_mb, allow_internet, workdir,
// docker_image; [metadata] free), instruction.md (the agent's prompt),
// environment/Dockerfile (unless docker_image names an image),
// tests/test.sh (writes /logs/verifier/reward.txt or reward.json, and
// optionally a CTRF report /logs/verifier/ctrf.json) and optionally
// solution/solve.sh (the oracle). Load reads and checks one and says
// what is wrong with a bad one; compose environments, GPUs and MCP
// servers are refused, not ignored.
//
// # The image (Open)
//
// Built offline with the container engine (sandbox/image.BuildContext):
// a FROM image of Debian (debian:bookworm, trixie, bullseye, 11–13,
// -slim) is made locally by mmdebstrap (minbase) and the engine's import
// when the engine lacks it, as the sandbox's own image is; any other FROM
// image must already be on the machine (nothing is pulled: a FROM that
// needs a registry fails naming its line). RUN lines get the host's
// network (Debian's mirror); one that needs what the machine cannot reach
// (PyPI here) fails the build naming the instruction. The image is
// tagged by the digest of its context and FROM images, so an unchanged
// task is built once. The workdir is task.toml's, else the image's
// WORKDIR, else /app.
//
// # Ground truth: the verifier's room (Verify)
//
// Harbor's "separate" verifier mode, always: each tree is scored in a new
// container from the task's image, with a copy of the tree at the workdir,
// a copy of tests/ read-only at /tests (no other room ever shows the
// tests), an empty /logs/verifier, the task's CPUs and memory, and no
// network unless allow_internet. `bash /tests/test.sh` runs within the
// verifier timeout. When it ends the container is removed (whatever the
// tree's code left running dies with its PID namespace), and only then
// does traj read the reward and the CTRF report on the host, through an
// os.Root. Nothing of the agent's room is there: not its processes, not
// its files outside the tree, not what it wrote to /logs or /tests.
// What test.sh itself runs of the tree runs in the verifier's room with
// test.sh's rights; a task's test.sh should run it as another user where
// it can (testdata/c-fizzbuzz does, with setpriv).
//
// As an environment.Environment (Env) the task has one test path, its
// name, and no build; Run's Result has a case per CTRF test (skipped and
// pending ones left out) and the case "reward", passed when the reward is
// 1 (its actual_stdout is the reward file's text): the task is solved
// when every case passes. The version is a digest of the image's ID, the
// tests' files and the verifier's settings, so replay's cache keys a
// result by tree and image. It is the registry's entry "harbor" (Name,
// environment/evaluation/registry): OpenFolder on the task's folder
// (registry.Config.TaskDir; `traj replay evaluate` takes --task, else the
// folder run.json names), scored through evalbox.New and the one
// per-tree protocol like the C compiler's trees; nothing above
// environment/ opens it by name. Check is `traj env check`.
//
// # The agent's room (Seed, Room, Oracle)
//
// A trajectory's agent runs in traj's container sandbox over the same
// image, learnt from AgentRoom (environment.Roomed;
// orchestrator/launch.TaskRoom: the workspace at the workdir, the
// task's CPUs and memory, its storage as the disk cap, no network beyond
// traj's gateways unless allow_internet, a read-only root as in every
// container sandbox), for at most [agent] timeout_sec; with --sandbox
// bwrap, in bwrap over the image's root file system (RootFS: unpacked
// once per image into traj's cache folder, shown read-only where bwrap
// shows the host's /usr, /bin, /lib… and /etc files; measured: OpenCode
// ready in 20 s against 33 s in a container, the image unpacked in about
// 10 s, 318 MB for python-stats). A dataset folder (Dataset) is an
// experiment's task axis.
//
// Seed copies the image's workdir into a new workspace. A Room is a
// container from the same image with the workspace bound at the workdir
// and the task's network and limits, kept running until Close (so what a
// script leaves running lives on while the verifier scores). Oracle runs
// solution/solve.sh in one, with solution/ uploaded to /solution: Harbor's
// oracle agent, which `traj env check` runs with a no-op agent to show the
// task scores 1 and 0.
package harbor
