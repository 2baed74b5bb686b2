// Package sweepvalue is the result of a fork sweep (`traj sweep`, run by
// orchestrator/sweep): at each swept part p of a source trajectory, K
// forks continue from the source's state at p, and the value of that
// state is what its forks reached.
//
// A fork's value is the best ground truth (pass rate) it reached from its
// fork point on: the score standing at the fork point, or any later
// result (replay/report's Series, the one owner of a trajectory's score).
// A fork is solved when a result from its fork point on passed every
// case. A fork whose inherited parts were not reproduced (replay/rerun:
// parts, checkpoints and trees of parts 1..fork point against the
// source's) does not count: its state is not the source's.
//
// A swept part's value is over its counted forks: mean, spread (standard
// deviation, minimum, maximum) and share solved. The decisive part is the
// swept part where the mean value drops most from the swept part before
// it: the run lost its chance between the two. No drop, no decisive part.
//
// The result is stored beside the source in the store of the sweep
// (store.SweepKey: trajectories/<source>/sweeps/<name>.json) and read by
// the report, the Parquet export (table sweeps) and the viewer (a band
// under the source's curve).
package sweepvalue
