package environment

import (
	"context"
	"time"

	"github.com/trajlab/traj/sandbox/xec/exit"
)

// Executor runs the untrusted actions of an evaluation, one at a time or
// several at once, and reports only what it observed: exit status,
// output up to a cap, how long it took. It judges nothing: the
// environment holds the cases and their expectations, on the host, and
// compares what comes back (version 3: the verifier stands outside every
// room of untrusted code). Paths are the host's; an executor that runs
// an action in a sandbox shows it only what the action needs (see
// replay/evalbox). The error is for an action that could not be started;
// how the untrusted code ended is in the exit.Result.
type Executor interface {
	// Build runs `bash build.sh` in tree (writable), stdout and stderr
	// combined.
	Build(ctx context.Context, tree string, lim Limits) (exit.Result, error)
	// Compile runs tree's ./cc (tree read-only) with args from dir, the
	// case's private folder (writable; it holds the case's sources and
	// nothing else). Args name files in dir by absolute host path.
	Compile(ctx context.Context, tree, dir string, args []string, lim Limits) (exit.Result, error)
	// Run runs program, a file the compile produced, alone.
	Run(ctx context.Context, program string, lim Limits) (exit.Result, error)
}

// Limits bound one action.
type Limits struct {
	Timeout     time.Duration
	OutputLimit int
	// CombineOutput sends stderr into stdout (interleaved).
	CombineOutput bool
}
