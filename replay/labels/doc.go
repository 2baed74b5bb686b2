// Package labels names how a trajectory went wrong, from what traj
// recorded: the trace (parts, turns, session_end, the ground truth that
// landed with each part) and, when there is one, the evaluation report
// `traj replay evaluate` wrote (replay.Output), whose per-part results
// are then the score instead of the ground truth. Nothing is run again.
//
// Each Label names its kind, the part where it shows (0: the whole
// trajectory) and the evidence that triggered it, in words a reader can
// check against the curve. The kinds and their rules:
//
//   - premature_stop: a turn ended (another followed, so budget was left)
//     while the score at its end was not solved. A turn traj aborted as
//     stalled and sent again counts too: the trace does not tell them
//     apart.
//   - declared_infeasible: a text part says the agent cannot finish: it
//     holds one of Options.Phrases (case-insensitive; DefaultPhrases).
//   - regression_loop: one test path's passing count fell and came back
//     at least Options.RegressionRounds times.
//   - plateau: no new best score for Options.PlateauParts parts or
//     Options.PlateauHours hours while not solved.
//   - stall: no part for Options.StallMinutes within a turn (the wait
//     between turns is traj's), or the run ended because a turn stalled
//     (session_end detail "stalled: …").
//   - passing_then_lost: the best score is above the final one by more
//     than Options.LostMargin (the work that passed was later broken).
//   - budget_exhausted_improving: the run ended at a budget (parts, time,
//     tokens, cost) not solved, with a new best in its last
//     Options.ImprovingParts parts.
//   - suspect: a result had fixed_like cases (programs that did what a
//     program ignoring its input does), or the public suites' pass rate
//     was above the fresh suite's by more than Options.GapThreshold.
//
// The score is the evaluation's when given, else the ground truth's;
// a sampled ground truth is used only when no full one exists. The
// thresholds are Options, with documented defaults (Defaults); `traj
// report` and `traj replay evaluate` set them by flags, and evaluate
// writes the labels and the options it used into evaluation.json.
//
// Measured (BenchmarkLabels, 5,000 parts of about 4 KB, 2 shared cores):
// labelling a trace costs 307 ms against 294 ms for the trace.Scan that
// decodes its parts, side by side: the rules add about 4 %, the reading
// is the rest. The export feeds the observer from its own pass.
package labels
