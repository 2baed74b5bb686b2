// Package orchestrator records a trajectory: it runs an agent harness
// (OpenCode, Claude Code or Codex, behind the agent port of package
// sandbox/agent; sandbox/harness lists them) on a task in a sandbox, turn
// after turn, counts every completed agent part against the part budget
// and records each one durably as it completes.
//
// Run resolves the task (package task), checks before anything exists
// that the environment, the harness, the model script and the model
// endpoint are usable (Preflight), makes the trajectory folder, mounts
// the sandbox's disk cap (workspace.go: MountWorkspace) and builds a
// Start; recovery.Resume builds a Start for a trajectory that died or
// ended early. Record takes a Start the same way for both: run.json, the
// services (package launch), the trace (created or continued), the turn
// loop (package engine), then the final checkpoint, the last ground
// truth, session_end with totals, repo.bundle, the artifacts map, final
// uploads. Every end finishes that way. A rerun or a fork is a Run with
// Options.Rerun (the source's model calls played behind the model
// gateway).
//
// Run options and run.json are mapped once each way (options.go:
// RunStateOf, which Record writes, and OptionsOf) and merged once
// (Inherit: an option given is the caller's, one not given the recorded
// run's, defaults last), for resume, rerun and fork alike.
//
// Scoring never happens in the agent's sandbox (scoring.go): the agent's
// run_tests goes through the tool gateway to an evaluation sandbox on a
// snapshot of the workspace, and every checkpoint is scored in the
// background (package groundtruth); ground truth decides "solved".
//
// The packages beneath:
//
//	engine       the recording engine: turn loop, part capture, test status
//	folder       the trajectory folder: run.json, locate, history bundles,
//	             closing the trace, the objects to upload (names: trace/store)
//	recovery     resume, finalize, sync, on top of the folder
//	handler/record  the handlers of traj run (new, resume, fork) and
//	             traj replay rerun: requests in, the workflow, results out
//	launch       the services: scripted model, model and tool gateways,
//	             harness, the run's sandbox; preflight checks
//	groundtruth  scoring checkpoints and run_tests in evaluation sandboxes
//	secret       what is a secret, and redaction of the trace and logs
//	task         tasks: built-in or a task folder
//	progress     status line, log lines, --json events
//	experiment   many trajectories from one spec, locally or on a cluster
//	batch        the one way to submit an array (Slurm, Kubernetes)
//	evalarray    one trajectory's evaluation spread over a cluster array
//	synth        a synthetic trajectory (traj trace synth)
//	agenttest    an in-memory harness behind the agent port (engine tests)
//
// Local layout: see package folder.
package orchestrator
