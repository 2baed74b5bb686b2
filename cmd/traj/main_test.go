package main

import (
	"os"
	"testing"

	"github.com/trajlab/traj/sandbox/relay"
	"github.com/trajlab/traj/sandbox/xec"
)

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
