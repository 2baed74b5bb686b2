// Package experiment is the handler between the experiment commands and
// the experiment's domain (orchestrator/experiment): `traj experiment
// run|status|check|manifest|task` and `traj gc` as library calls. Each
// takes a request struct (Request: the spec, a store override, where the
// output goes; RunRequest, TaskRequest, ManifestRequest, GCRequest) and
// does what the command does: load and check the spec against the flags
// the traj executable accepts, run the slots here or submit them as one
// Slurm array (orchestrator/batch through the domain), write the
// summaries. A finished trajectory's evaluation (the spec's `evaluate:`)
// is the evaluate handler's request (replay/evaluate), its trees sent to
// an array of their own by orchestrator/evalarray, detached: no command
// is built or called. Find names an experiment for readers (the report's
// slots, the export's trajectory ids) by its spec or its stored record.
//
// Errors a request causes match replay.ErrUsage; ErrNotDone and
// ErrInterrupted say how a run ended (the command exits 3 and 130).
package experiment
