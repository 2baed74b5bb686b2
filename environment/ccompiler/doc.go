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
// and judges nothing: environment/host for trusted trees, replay/evalbox's
// sandboxes (a fresh one for the build, each compile and each program)
// for untrusted ones. Whether a compile left a program, or left .s/.o
// files after rejecting one, is read on the host from the case's folder
// after the compile is over (a symlink is not a program, and counts as
// output left without being followed). The built tree's build.sh and ./cc
// are looked up through an os.Root: traj may run as root, and a link that
// leaves the tree gets one answer ("a link to nothing inside the tree")
// whether its target exists on the host or not.
//
// # Evidence: a pass shows that this case was compiled
//
// Several pass rules can be met without compiling: torture passes on
// "exit 0", most c-testsuite and some wacct and basics cases expect exit 0
// and empty output, and wacct's invalid programs pass on any refusal. So
// every runnable case runs rewritten with a nonce K (nonce.go): inside
// main, `return X;` becomes `return (X) + K;` (a plain literal is folded,
// so chapter 1's compilers need nothing new), every `exit (X)` call
// likewise, and `return K;` closes a main that can fall off its end;
// comments, strings and preprocessor lines are untouched. A correct
// compilation exits with (E+K) mod 256, never 0 and never E: a program
// that ignores its input and exits 0 meets no case, one that exits with
// another fixed code only the cases whose nonce is that code (chance,
// about 1 in 254). K is
// HMAC-SHA256 of RunOptions.Secret (the store's evaluation secret, kept
// outside every sandbox) and the case's name: one artifact gets one
// score, case by case, wherever it is evaluated. Answers are told in the
// original case's terms (expected E, actual exit code less K).
//
// A wacct invalid program's refusal counts only beside its neighbour, the
// valid program of its chapter most like it, which must pass too (run
// hidden when the test path lacks it). A runnable case the rewrite cannot
// handle, or listed in untransformable.go (gcc passes it but not its
// rewrite), runs unguarded by its original rule and counts only when the
// same run passes a guarded case of its suite and none of its suite's
// cases is fixed-like. Nothing voids a suite
// (Result.Voided is read in old results only). A case whose program did
// what the case without its nonce wants (exit 0 where K says otherwise)
// is marked FixedLike and counted in Result.FixedLike: a suspicion
// reported beside the score. (guard.go)
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
//   - fresh (generated, environment/ccompiler/fresh): 32 programs, 8 at
//     each of four levels (fresh/level_<n>/prog_<k>.c), written for each
//     evaluation once ./cc is built, from HMAC(RunOptions.Secret,
//     RunOptions.Digest) (the artifacts' digest; without one, SHA-256 of
//     ./cc's bytes); gcc on the host is the oracle. The program must exit
//     with gcc's program's code and print what it printed (nothing). It
//     needs gcc on PATH (else it is missing); it has no controls (no
//     program of it exits 0 silently, and each is new per artifact). A
//     high public score beside a low fresh one says the compiler fits the
//     public tests rather than the language (see the fresh package).
//
// # Test paths
//
// all, basics, basics/<category>, wacct, wacct/chapter_<n>, c_testsuite,
// c_testsuite/part_<n>, torture, torture/part_<n>, torture_std,
// torture_std/part_<n>, fresh, fresh/level_<n>. Parts are fixed shards
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
