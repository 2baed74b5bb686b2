// Package host runs an evaluation's actions on the host, for trusted
// trees only (`traj env test`, `--sandbox local`). It is apart from
// package environment so that readers of results (replay's report,
// export, view) link no process runner.
package host

import (
	"context"
	"path/filepath"

	"github.com/trajlab/traj/environment"
	"github.com/trajlab/traj/sandbox/xec"
)

// Executor is the environment.Executor for trusted trees (`traj env test`, `--sandbox
// local`): every action runs on the host as the invoking user, with
// xec.Run's process-group handling and nothing else.
type Executor struct{}

var _ environment.Executor = Executor{}

// Build implements Executor.
func (Executor) Build(ctx context.Context, tree string, lim environment.Limits) (xec.Result, error) {
	return xec.Run(ctx, xec.Command{Path: "bash", Args: []string{"build.sh"}, Dir: tree,
		Timeout: lim.Timeout, OutputLimit: lim.OutputLimit, CombineOutput: lim.CombineOutput})
}

// Compile implements Executor.
func (Executor) Compile(ctx context.Context, tree, dir string, args []string, lim environment.Limits) (xec.Result, error) {
	return xec.Run(ctx, xec.Command{Path: filepath.Join(tree, "cc"), Args: args, Dir: dir,
		Timeout: lim.Timeout, OutputLimit: lim.OutputLimit, CombineOutput: lim.CombineOutput})
}

// Run implements Executor.
func (Executor) Run(ctx context.Context, program string, lim environment.Limits) (xec.Result, error) {
	return xec.Run(ctx, xec.Command{Path: program, Dir: filepath.Dir(program),
		Timeout: lim.Timeout, OutputLimit: lim.OutputLimit, CombineOutput: lim.CombineOutput})
}
