// Package folder is a trajectory's local folder and everything named in
// it: run.json (RunState; ReadRunState is its one reader, with one error
// policy), locating a trajectory recorded earlier (Locate), the history
// bundles (written, listed, downloaded, cloned),
// closing the trace (repo.bundle, session_end, artifacts), and the objects
// the folder holds for the store, uploaded trace last. Store keys and
// object names come from trace/store's layout.
//
// Under the work folder (the store's folder for a local store, default
// ./runs; else ./runs or --work-dir):
//
//	trajectories/<id>/agent_trace.json   the trace, complete and valid after every part
//	trajectories/<id>/repo.bundle        git bundle of all refs (at the end)
//	trajectories/<id>/history/<part>.bundle  incremental bundle per committed checkpoint
//	trajectories/<id>/run.json           run state (RunState): options, paths, status
//	trajectories/<id>/upload_pending.json  objects not uploaded yet (traj sync)
//	trajectories/<id>/logs/              service logs, secrets redacted (at the end)
//	sandboxes/<id>/workspace/            the agent's workspace (a git repository)
//	sandboxes/<id>/…                     the harness's config, data and raw logs
//
// The trajectory folder holds exactly what the store holds for the
// trajectory, so with the default local store it is the store (InPlace):
// nothing is copied. The sandbox stays local.
package folder
