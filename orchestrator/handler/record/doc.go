// Package record is the handler between the commands that record one
// trajectory and the orchestrator: `traj run` (a new run, --resume,
// --fork: RunRequest, Run), `traj replay rerun` (rerun.go), `traj sync`
// and `traj trace finalize` (Located, Sync, Finalize in recovery.go, on
// orchestrator/recovery), and what they print (PrintSummary, PrintNext,
// PrintSync). A request the handler cannot run as given is a BadRequest
// (the commands exit 2).
package record
