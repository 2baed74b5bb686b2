// Command traj runs coding-agent trajectories, records every agent part into
// one trace, checkpoints the workspace in git, and replays trajectories
// offline. This package maps each command's flags to a library handler's
// request (orchestrator/handler/..., replay/evaluate, replay/report, ...)
// and the handler's outcome to an exit status; the logic lives in
// orchestrator, replay, sandbox, environment and trace.
//
// # What the test suite costs
//
// `make test` (CI: `.ci/run`, `make lint` + `make test` on a fresh clone)
// should stay under 20 minutes on 2 cores; on the project's CI runner it
// does not yet: the landings of 2026-11-25 passed CI in 1,681 and 1,745 s
// (this package about 1,310 s, orchestrator 860 s, orchestrator/experiment
// 276 s). The same suite on the 2026-11-26 session's machine, a
// fresh-clone `.ci/run` with the Debian packages already installed: 10.5
// minutes (this package 395 s, orchestrator 211 s, orchestrator/experiment
// 105 s, every other package under 30 s), so the runner is about 2.7x
// slower. go test runs two packages at a time, this one on one side the
// whole run, the others one after another beside it. Its leaf tests on the
// fast machine: 823 s in 448 s of wall time (TestAdversarialCompilers 255
// s, TestAdversarialAgent 209, TestHarnessConformance 151, TestDiskCap
// 77).
//
// The cost is real runs: three harnesses × two providers in the
// adversarial agent (each resumed once), the adversarial compilers (a
// container evaluation starts one container per action, about 1 s each),
// harness conformance (record, evaluate, rerun twice per harness). That is
// CPU, not waiting: this package and orchestrator side by side, alone on
// the machine, keep both cores 100 % busy (OpenCode's server, harness
// start-ups, compiles; /proc/stat), so a larger -parallel does not help
// (at 3, under load, two ground-truth runs ran out of time); less work
// does. Measured beside each other as in CI, `go test -count=1
// ./orchestrator`: 1,094 s before its tests ran in parallel (other work
// loading the machine, load 10-13), 610 s after (load falling from 20 to
// 3), 673 s beside this package and nothing else; this package 1,782 s
// before (load 10-17), 1,051 s beside the orchestrator and nothing else
// (most of that difference is the load). A whole fresh-clone CI run with
// process accounting (accton, then sa -a -c): 45.7 CPU-minutes in about
// 30 minutes (76 % of 2 cores); OpenCode alone 20.6 CPU-minutes (45 %)
// over 67 servers, about 18 s each, of which ~4 s is its own start
// (`opencode serve`, whatever the OPENCODE_DISABLE_* switches); then gcc
// and ld ~10 %, podman ~4 %, traj ~4 %. So the lever is fewer OpenCode
// recordings (the e2e script is recorded by both TestEndToEndRealOpenCode
// and TestEndToEndPartBudget; the adversarial compilers record seven).
// Per-test times: GOFLAGS=-v on `.ci/run`.
package main
