// Package synth writes a synthetic trajectory (`traj trace synth`) for
// benchmarks, tests and users who want to try traj at sizes a demo run
// never reaches (10,000 to 1,000,000 parts).
//
// It records through the real parts, so every reader sees what a run
// leaves: the trace through trace.Writer (with its part index), a
// checkpoint after every tool part through gitstate on a real workspace
// that grows (new sources, headers and tests; edits of existing files),
// one history bundle per committed checkpoint and repo.bundle through
// orchestrator/folder, ground truth on every fifth checkpoint with a score
// that rises along the run, and both call records: model_calls.jsonl (one
// model.Call an assistant message, tokens equal to the parts') and
// tool_calls.jsonl (one tool.Call a run_tests call, beside the part's
// envoi_calls).
//
// The parts are OpenCode-shaped (the harness's reader turns them into
// actions): reasoning, text and tools in the mix of an agent writing a
// compiler (bash 34 %, read 20 %, edit 20 %, write 8 %, grep 8 %,
// run_tests 8 %, a sub-agent task 2 %), one to four parts a message, 20 to
// 300 parts a turn. About one part in five commits.
//
// BenchmarkScale (make bench-scale; 1,000,000 parts in make stress) runs
// the traj binary on these trajectories, each path side by side with its
// yardstick, and logs the issue-40 table. Measured 2026-11-27 (2 cores
// shared with six other engineers' tests, load average 6-12; medians of 3
// interleaved rounds; the store holds an evaluation report, so the export
// writes its evaluations too):
//
//	path                          10,000 parts              100,000 parts
//	append, N vs 100 parts        25.3 vs 24.2 µs 1.05x     24.0 vs 24.1 µs 1.00x
//	checkout-part vs git          341 vs 574 ms 0.59x       5,053 vs 4,802 ms 1.05x
//	                              (CPU 1.21x)               (CPU 0.99x)
//	cached evaluate               729 ms (CPU 498)          5,654 ms (CPU 4,737)
//	show / verify peak RSS        31 / 38 MB                32 / 71 MB
//	viewer first rows cold, jump  264 ms, 8.6 ms            1,860 ms, 8.5 ms
//	Parquet export vs show        1,264 vs 657 ms 1.92x     12.3 vs 5.4 s 2.28x
//	                              (CPU 1.81x), 115 MB       (CPU 2.69x), 259 MB
//	upload per turn end           28,660 of 2,931,697 B     293,244 of 29,349,441 B
//
// An earlier run the same day, before the export read the evaluation
// report lean: 2.62x and 511 MB at 100,000 parts. Without a report the
// 100,000-part export took 10.4-10.7 CPU-s against show's 4.7 (2.2x) at
// 210 MB. A cached evaluate spends about 60 % of its CPU relabelling (a
// full trace.Scan for the failure labels, even when the report is
// unchanged). The report over 10,000 trajectories is replay/report's
// BenchmarkReport10000 (2.85 s).
//
// It lives here, not under trace/, because it writes the gateways' record
// types and uses the trajectory folder's publisher (trace imports nothing
// of ours). The same Options give the same bytes in every file (the clock
// is synthetic; the trace's artifact URLs name the store folder).
package synth
