package main

import (
	"context"
	"errors"
	"time"

	"github.com/trajlab/traj/orchestrator/handler/record"
	"github.com/trajlab/traj/orchestrator/progress"
)

// ReplayRerunCmd re-executes a recorded trajectory: a new trajectory with
// the same harness (name and version), task, environment and sandbox,
// whose model calls are answered from the source's recorded responses,
// never by a provider; then compares it with its source. Exit status: 0
// when every part was reproduced, 3 when the rerun differs, 2 for bad
// flags, 1 when it could not run.
type ReplayRerunCmd struct {
	Ref               string        `arg:"" name:"ref" help:"The trajectory to rerun: an id in the store, a trajectory folder, an agent_trace.json path or an s3://…/trajectories/<id> URL."`
	UntilPart         int           `name:"until-part" help:"Rerun the source's parts 1..P only (default: all)." placeholder:"P"`
	Store             string        `help:"Store of the source (for a bare id) and of the rerun: a folder, file:///path or s3://bucket/prefix (default ./runs)." env:"TRAJ_STORE"`
	WorkDir           string        `name:"work-dir" help:"Local folder for the rerun's trajectory folder and sandbox (default: the store folder if local, else ./runs)." env:"TRAJ_WORK_DIR" type:"path"`
	TrajectoryID      string        `name:"trajectory-id" help:"The rerun's id (default: <source>-rerun-<time>)." placeholder:"NEW"`
	AllowOtherVersion bool          `name:"allow-other-version" help:"Rerun with the installed harness even when its version is not the one the source recorded."`
	AgentBin          string        `name:"agent-bin" help:"The harness's executable (default: as for traj run)."`
	TestsDir          string        `name:"tests-dir" help:"Fixtures root (default: $TRAJ_TESTS_DIR, else the source's)." env:"TRAJ_TESTS_DIR" type:"path"`
	Timeout           time.Duration `help:"Time the agent may work (default: the source's)."`
	Sandbox           string        `help:"Where the rerun's agent runs: bwrap, container or local (NO isolation). Default: the source's provider unless it was local, else bwrap where it works, else container; local only when named here." enum:"bwrap,container,local," default:""`
	Quiet             bool          `help:"Print only the summary and warnings."`
	Output            string        `type:"path" help:"Also write the comparison (rerun.json) to this file."`
}

func (c *ReplayRerunCmd) Run(ctx context.Context, g *Globals) error {
	req := record.RerunRequest{Ref: c.Ref, UntilPart: c.UntilPart, Store: c.Store, WorkDir: c.WorkDir, TrajectoryID: c.TrajectoryID,
		AllowOtherVersion: c.AllowOtherVersion, AgentBin: c.AgentBin, TestsDir: c.TestsDir, Timeout: c.Timeout, Sandbox: c.Sandbox,
		Output: c.Output, Notes: g.Stdout}
	req.Reporter, req.Logger, _ = progress.View{Quiet: c.Quiet, Stderr: g.Stderr, Level: g.LogLevel, Logger: g.Logger}.Open()
	res, err := record.Rerun(ctx, req)
	if res == nil {
		if bad := (*record.BadRequest)(nil); errors.As(err, &bad) {
			return &exitError{2, err}
		}
		return err
	}
	record.PrintSummary(g.Stdout, res.Result)
	if err != nil {
		return err
	}
	res.Report.Print(g.Stdout)
	if res.Report.Reproduced != res.Report.SourceParts {
		return &exitError{3, nil}
	}
	return nil
}
