// Package ccompiler is the C-compiler test environment. The agent's
// workspace has a build.sh; `bash build.sh` (300 s limit) must produce an
// executable ./cc, which is invoked exactly as
//
//	./cc input.c [more.c …] -o output
//
// with absolute paths, from a private folder per case holding that case's
// sources only (copied there first, so a compiler that writes next to its
// input never touches the fixtures; basics' `// expect:` lines blanked).
// No other flags are ever passed: not -w, not a torture test's
// dg-options.
//
// # Who runs what
//
// The environment is the evaluator: it enumerates the cases, holds their
// expectations, compares and scores, in the process that asked (traj, on
// the host). The tree's code runs only through an environment.Executor,
// which returns raw observations (exit status, output up to a cap, time)
// and judges nothing: environment.Host for trusted trees, replay/evalbox's
// sandboxes (a fresh one for the build, each compile and each program)
// for untrusted ones. Whether a compile left a program, or left .s/.o
// files after rejecting one, is read on the host from the case's folder
// after the compile is over (a symlink is not a program, and counts as
// output left without being followed). The built tree's build.sh and ./cc
// are looked up through an os.Root: traj may run as root, and a link that
// leaves the tree gets one answer ("a link to nothing inside the tree")
// whether its target exists on the host or not.
//
// # Controls: a score is evidence of compiling
//
// Several pass rules can be met without compiling: torture passes on
// "exit 0", most c-testsuite and some wacct and basics cases expect exit 0
// and empty output, and wacct's invalid programs pass on any refusal. So
// every Run adds, for each suite among its cases, two controls: programs
// generated from a fresh random nonce, shaped like the suite's simplest
// cases and using only their features (torture: a function called from
// main; c-testsuite: 00003.c's local variable; wacct: chapter 1's
// `return N;`; basics: smoke's constant arithmetic), each of which must
// exit with its own nonce-derived code, 1..255, computed rather than
// written where the suite's simplest cases compute, and print nothing. A
// real compiler gets them right; a compiler whose output does not depend
// on its input cannot get both (two different non-zero codes, and the
// cases want 0), and one that always fails gets neither. If any control
// of a suite fails, the suite is voided: each of its cases counts as
// failed with "suite voided: …", and Result.Voided (replay's
// SuiteResult.Void) records the reason. Controls run through the same
// executor as the cases, in folders like theirs, in random order, and
// are not listed as cases. (controls.go)
//
// # Suites and how a case passes
//
//   - basics (shipped here, embedded from basics/): basics/<category>/<name>.c,
//     or basics/multi_file/<case>/*.c compiled together in name order. The
//     first `// expect: exit=N stdout="…"` line (stdout Go-quoted, absent
//     means empty) gives the exit code and the exact stdout.
//   - wacct (writing-a-c-compiler-tests, TESTS/wacct/tests/chapter_<n>/…):
//     valid/ programs must compile, and running them must give
//     expected_results.json's return_code and stdout (empty when absent) and
//     empty stderr. Under valid/libraries/, X_client.c is compiled with X.c.
//     invalid_*/ programs must be rejected: ./cc exits non-zero and leaves
//     no executable and no .s/.o file. extra_credit/ tests are included.
//   - c_testsuite (c-testsuite, TESTS/c-testsuite/tests/single-exec/N.c):
//     the program must exit 0 and its stdout and stderr together must equal
//     N.c.expected exactly.
//   - torture (gcc torture execute, TESTS/torture/SingleSource/Regression/C/
//     gcc-c-torture/execute/*.c, top level only): the program must exit 0
//     (abort() is a failure). Every test that gcc itself passes under the
//     same contract is a case, the set the original's successor scores:
//     1,496 of the 1,514 tests at llvm-test-suite 3c0a28f1; the 18 others
//     are named with their reason in torture_skip.go (tortureExcluded). A
//     test's #include "sibling.c" is copied into the case's folder.
//   - torture_std: torture's standard-C subset (1,153 cases there): tests
//     that need GNU extensions, extra flags or target checks are left out
//     by the rules in torture_skip.go. "all" does not run it (its cases are
//     torture's).
//
// # Test paths
//
// all, basics, basics/<category>, wacct, wacct/chapter_<n>, c_testsuite,
// c_testsuite/part_<n>, torture, torture/part_<n>, torture_std,
// torture_std/part_<n>. Parts are fixed shards
// of ShardSize (50) cases of the suite sorted by name: part_1 is the first
// 50. TestPaths lists only what exists given the fixtures present; "all"
// runs basics plus every suite present. A path of a suite whose folder is
// missing fails with environment.ErrSuiteMissing naming the folder and the
// public repository to copy it from.
//
// <suite>/sample_<size>_<seed> (any suite but "all") runs a fixed, seeded,
// stratified sample of size of the suite's cases (strata: basics
// categories, wacct chapters, the part_<n> shards; proportional
// allocation, one case per stratum where size allows; the rule is in
// sample.go). It is not listed in TestPaths (run_tests refuses it);
// ground truth runs it when the task samples (SamplePath,
// environment.Sampler), and its test path keeps its results apart from
// the full suite's in the evaluation cache.
//
// # Execution
//
// Cases run in parallel (RunOptions.Workers, default the CPU count), each
// compile and run with a timeout (10 s compile, 5 s run by default, a
// sandbox's start included); on the host each is its own process group
// that gets SIGKILL on timeout and once more after the leader exits, in a
// sandbox every process of the action dies with it. Output is
// captured up to 64 KiB per stream. Results are sorted by case name.
//
// Version() is sha256 over RunnerVersion, ShardSize and the content of every
// suite file read (embedded basics, fixtures present); bump RunnerVersion
// whenever pass rules, skip rules or invocation change.
package ccompiler
