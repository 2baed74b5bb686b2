// Package replay reads a recorded trajectory back: it rebuilds the
// repository at any part (checkout-part), evaluates every distinct
// repository state once against the test suites (evaluate), attributes each
// test's progress to the parts that caused it, and checks a trajectory's
// integrity (verify).
//
// checkout-part and verify read the trace as it streams by
// (CommitForPartIn, VerifyTrace), never holding its parts: their memory
// does not grow with the trace (at 50,000 parts and 200 MB, ~90 and ~140
// MB of RSS, the bundle's index included). Verify and CheckoutPart take an
// in-memory trace for callers that have one.
//
// The package depends on small interfaces declared here (History for the
// git history in a bundle, Evaluator for a test environment, Cache for the
// content-addressed evaluation cache) so that the git, store and environment
// packages plug in through thin adapters (githistory over trace/gitstate,
// EnvironmentEvaluator over environment.Environment, BlobCache over a store)
// and tests can count what happens.
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
// # Default test paths
//
// Without --tests, evaluate runs the test paths the trace recorded for its
// environment (environment.test_paths), else every top-level suite the
// environment has except the heavy ones (HeavySuites: torture, torture_std) and the
// "all" alias.
package replay
