// Package sweep runs a fork sweep (`traj sweep`): K forks of a recorded
// trajectory at each of a set of its parts, as one experiment (the
// experiment spec's fork axis, orchestrator/experiment), on this machine
// or as a Slurm job array, then the value of the source's state at each
// part and the decisive part (replay/sweepvalue), stored beside the source
// (store.SweepKey).
//
// Each fork is `traj run --fork SOURCE --at-part P` (the model after the
// fork point: --model/--script, default the source's; --prompt opens the
// next turn), so it reruns the source's parts 1..P from the recorded
// model calls in the source's harness, version, task and sandbox, then
// goes on for at most --max-parts parts in all; traj run scores its
// checkpoints by ground truth as it records. The sweep then compares each
// fork's parts 1..P with the source's (replay/rerun: parts, each part's
// checkpoint, trees at every response end): a fork whose prefix was not
// reproduced is reported and left out of the value.
//
// The sweep is an experiment named Request.Name whose spec is written to
// <work>/experiments/<name>/sweep.yaml: running the same sweep again
// starts only the forks that are missing (an interrupted fork is resumed),
// and `traj experiment status` shows it. A fork ends as any trajectory
// does; the sweep never relaunches one (relaunch.max_attempts 1). On
// Slurm the sweep submits the array and waits for it, polling squeue.
//
// A part inside a model response forks at the response's end (traj run
// --fork); the row keeps the part asked for and the fork point recorded.
// Response ends are where the source's model calls sit among its parts by
// the trace's part → call attribution (calls.Placement), not by a call's
// parts_before, which lags when Codex asks for its next answer before
// traj recorded the part that ended (a loaded machine).
package sweep
