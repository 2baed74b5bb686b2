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
// shared with six other engineers' tests, load average 8-13; medians of 3
// interleaved rounds; the store held an evaluation report, so the export
// wrote its evaluations too):
//
//	path                          10,000 parts              100,000 parts
//	append, N vs 100 parts        25.7 vs 25.0 µs 1.03x     25.7 vs 24.4 µs 1.06x
//	checkout-part vs git          452 vs 386 ms 1.17x       5,890 vs 7,454 ms 0.79x
//	                              (CPU 1.26x)               (CPU 1.02x)
//	cached evaluate               577 ms (CPU 561)          6,934 ms (CPU 4,972)
//	show / verify peak RSS        34 / 39 MB                36 / 89 MB
//	viewer first rows cold, jump  240 ms, 9.3 ms            5,333 ms, 11.4 ms
//	Parquet export vs show        918 vs 489 ms 1.88x       17.3 vs 6.6 s 2.62x
//	                              (CPU 1.94x), 134 MB       (CPU 3.02x), 511 MB
//	upload per turn end           28,660 of 2,931,697 B     293,244 of 29,349,441 B
//
// Without an evaluation report the 100,000-part export took 10.4-10.7
// CPU-s against show's 4.7 (2.2x) at 210 MB: the report (46 MB of JSON,
// 100,000 part evaluations) is decoded whole, which is the rest of its
// memory. A cached evaluate spends about 60 % of its CPU relabelling
// (a full trace.Scan for the failure labels, even when the report is
// unchanged). The report over 10,000 trajectories is replay/report's
// BenchmarkReport10000 (2.85 s).
//
// It lives here, not under trace/, because it writes the gateways' record
// types and uses the trajectory folder's publisher (trace imports nothing
// of ours). The same Options give the same bytes in every file (the clock
// is synthetic; the trace's artifact URLs name the store folder).
package synth
