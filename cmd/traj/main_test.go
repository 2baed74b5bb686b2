package main

import (
	"os"
	"testing"

	"github.com/trajlab/traj/sandbox/relay"
	"github.com/trajlab/traj/sandbox/xec"
)

// The tests that record real trajectories (the adversarial
// agent and compilers, harness conformance, the disk cap, fork, Slurm)
// and those that evaluate many trees (TestReplayCommands,
// TestSampleReport) run in parallel with each other, each in its own
// temporary store and never through the process's environment or working
// folder, which only the sequential tests change (go test runs every
// parallel top-level test after the last sequential one). They mostly
// wait on their harnesses and sandboxes; -parallel (2 on 2 cores) still
// bounds how many run at once, so this only packs them: no test waits at
// another's tail with a slot free.

// TestMain lets this test binary stand in for traj where a command runs
// traj's own executable inside a sandbox (replay evaluate's evaluation
// sandbox runs its services behind the relay).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case relay.Command:
			os.Exit(relay.Main(os.Args[2:]))
		case xec.GuardCommand:
			os.Exit(xec.GuardMain(os.Args[2:]))
		}
	}
	os.Exit(m.Run())
}
