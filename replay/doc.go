// Package replay reads a recorded trajectory back: it rebuilds the
// repository at any part (checkout-part), evaluates every distinct
// repository state once against the test suites (evaluate), attributes each
// test's progress to the parts that caused it, and checks a trajectory's
// integrity (verify).
//
// checkout-part and verify read the trace as it streams by
// (CommitForPartIn, VerifyTrace), never holding its parts: their memory
// does not grow with the trace. BenchmarkVerify (replay/githistory, a ~4
// KB part per commit): 22/38/120 MB at 1k/10k/50k parts, where reading
// the whole trace took 743 MB at 50k; the traj binary at 50,000 parts
// (206 MB trace) peaks at 87 MB for checkout-part and 135 MB for verify,
// 33 MB of it the binary (686 and 724 MB before; 5.2 vs 7.7 s and 10.4 vs
// 12.2 s). Verify and CheckoutPart take an in-memory trace for callers
// that have one.
//
// The package depends on small interfaces (History for the git history
// in a bundle, declared here; Evaluator for a test environment and Cache
// for the content-addressed evaluation cache, the evaluation wing's,
// environment/evaluation, named here by alias) so that the git, store and
// environment packages plug in through thin adapters (githistory over
// trace/gitstate, evaluation.EnvironmentEvaluator over
// environment.Environment, BlobCache over a store) and tests can count
// what happens. Each tree the cache lacks takes the wing's one per-tree
// protocol (evaluation.Tree); `traj replay evaluate` itself, flags aside,
// is replay/evaluate.
//
// # Evaluate
//
// Every part maps to its effective commit (git_commit, or
// repo_checkpoint.commit_after when empty). Commits are deduplicated, then
// commits with the same tree: a tree is evaluated once, from the cache when
// it can, otherwise in a fresh temporary folder holding the commit's files
// (no .git), with --workers trees at once. The output (Output) keeps the
// original replayer's keys and adds traj's:
//
//	commits_evaluated   distinct commits the trajectory reached
//	commit_evaluations  commit → tree, counts, pass_rate, parts, suites
//	                    (per test path: counts, cases, build error), source
//	                    (evaluated | cache | same_tree | failed)
//	part_to_commit      part → commit, every part
//	part_evaluations    part → commit, counts, pass_rate, per-suite counts
//	test_attribution    test id → first_pass_part, broken_at, fixed_at,
//	                    passing_at_end
//	environment, test_paths, stats (parts, unique commits and trees, trees
//	evaluated, cache hits, failures, workers, duration_ms)
//
// FreshGap (freshgap.go) is the one rule for the public − fresh gap of a
// result (public suites' pass rate minus the generated fresh suite's):
// the report, the viewer and the export all call it.
//
// A test id is "<suite path>/<case>" unless the case name is already
// qualified (the C-compiler environment names cases
// "basics/smoke/hello.c"). Attribution walks parts in order: a test absent
// at a part (for example the build failed) counts as failing there; part 1
// is compared with "not passing".
//
// A commit whose tree cannot be resolved (the bundle lacks it) or a tree
// whose evaluation fails is recorded with source "failed" and its error on
// the commit and its parts; every other commit is still evaluated, and
// Evaluate returns the output with an error wrapping ErrIncomplete (the CLI
// writes it and exits 1).
//
// # Cache
//
// An entry's key is sha256 over the tree hash, the environment's Version
// digest and the sorted test paths (CacheKey); the store keeps it at
// evalcache/<key>.json with those inputs beside the result, its own key
// and a SHA-256 digest of the rest (EntryDigest). Every read is checked
// (CheckEntry): an entry that does not parse, lacks its digest, was
// written under another key (foreign) or was changed after it was written
// wraps ErrBadEntry; Evaluate then warns ("evaluation cache entry
// ignored") and evaluates the tree again, overwriting the entry. An entry
// whose inputs are not the tree's, environment's and paths' is ignored the
// same way. The digest catches damage and edits; it is not a signature:
// what keeps an agent from forging entries is that no sandbox ever mounts
// the store. Results that could not be computed are never cached.
//
// # An unchanged report
//
// A cached evaluate whose report is unchanged reads two small things: the
// part index, streamed and hashed (trace.PartIndexDigest), and the
// trajectory's cache set, streamed and hashed (SetCache.SetSum). A report
// the cache served entirely carries a digest of those two (quickDigest:
// the parts fix their commits, a commit's id fixes its tree, the set
// holds every tree's entry), which Unchanged compares before anything is
// planned (ErrUnchanged); the report's own sum is checked on the file
// mapped, not read (ReadReportDigest; mapped_linux.go populates the
// mapping in one call). Without a part index the report carries the long
// digest (inputsDigest: every part, commit, tree and entry) and the
// evaluate plans as before.
//
// BenchmarkCLICachedEvaluate (replay/githistory; TRAJ_BASELINE_BIN runs
// an older binary beside it), quiet machine: 24 ms at 10,000 parts and 39
// ms at 50,000, 19-22 ms of it process start (on an earlier machine whose
// process start took ~66 ms, 78 and 88 ms; the binary before, 228 and 694
// ms). Process start is package init (`traj --version`,
// GODEBUG=inittrace=1; the jsonschema library's init is the largest left;
// chroma's lexers are built only when the viewer highlights,
// replay/view/lexers). The environment's version hashes every suite file
// (ccompiler.New, the three fixture suites at once): ~40 µs a file, so it
// grows with the full suites.
//
// # Default test paths
//
// Without --tests, evaluate runs the test paths the trace recorded for its
// environment (environment.test_paths), else every top-level suite the
// environment has except the heavy ones (evaluation.HeavySuites: torture,
// torture_std) and the "all" alias.
package replay
