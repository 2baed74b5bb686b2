// Package record holds the handlers of the commands that record a
// trajectory: `traj run` (a new run, --resume, --fork: Run with a
// RunRequest), `traj replay rerun` (Rerun with a RerunRequest), `traj
// sync` and `traj trace finalize` (Located, Sync, Finalize in
// recovery.go, on orchestrator/recovery), and what they print
// (PrintSummary, PrintNext, PrintSync). A command maps its flags to a request and prints the result; everything
// between is here, so a library caller (an experiment, a sweep, a test)
// runs the same workflow without the CLI.
//
// A resume, a fork and a rerun take the options not given from the
// recorded run: run.json read by folder.ReadRunState, mapped by
// orchestrator.OptionsOf and merged by orchestrator.Inherit, the one
// merge; a flag is given when it is on the command line, whatever its
// value (RunRequest.Given), so --cpus 0 on a fork is no CPU limit, never
// the source's. Defaults apply after the merge (Options.Defaults). A
// fork's or rerun's source may come from another machine or an edited
// store (Inheritance.Untrusted): its local sandbox and its harness
// binary elsewhere are not taken.
//
// A fork or a rerun is compared with its source (Compare, package
// replay/rerun): a fork's inherited parts must be reproduced
// (ForkCheck), a rerun's comparison is saved as its rerun.json. Requests
// that cannot run as given are a *BadRequest (traj exits 2).
package record
