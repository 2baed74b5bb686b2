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
// It lives here, not under trace/, because it writes the gateways' record
// types and uses the trajectory folder's publisher (trace imports nothing
// of ours). The same Options give the same bytes in every file (the clock
// is synthetic; the trace's artifact URLs name the store folder).
package synth
