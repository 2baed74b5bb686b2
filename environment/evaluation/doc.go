// Package evaluation is the evaluation wing's base: what every
// evaluation of a tree shares, below orchestrator and replay, so changing
// how a tree is evaluated starts here.
//
//   - The registry of environments (registry, a package of its own so
//     that what only reads results links no environment): Builtin is the
//     one list (c-compiler and harbor; registering one is one Entry), an
//     Environments value built there and passed down (cmd's Globals, the
//     run's Options, the evaluate handler's Request). A task's
//     `environment` and a trace's `environment.name` pick the entry,
//     opened on the task's folder (Config.TaskDir: a Harbor task's
//     environment is its folder); nothing above environment/ opens an
//     environment or compares its name.
//   - The task's settings (settings.go): artifacts and deny_c_compiler,
//     recorded as fields of the trace's environment (Settings.Record) and
//     read back as fields (Recorded); a trace recorded before them
//     carries them only as marks on its environment version
//     ("+artifacts=cc+deny-c-compiler"), which Recorded parses. The
//     version a run records is still the cache key's version,
//     Version(environment's, settings), so old and new traces key their
//     results alike and an older traj reads a new trace's settings.
//     CheckArtifacts is the artifacts' rule (evalbox.CheckProvider the
//     sandbox's).
//   - The results and the cache entries (result.go, entry.go): Result,
//     CacheEntry, CacheKey, ArtifactCacheKey and the entry digest
//     (replay names them as before, by alias; replay keeps the stores'
//     caches and the per-trajectory sets).
//   - The per-tree protocol (tree.go): Tree.Get reads the cache, Evaluate
//     exports the tree into a fresh folder, evaluates it and keeps the
//     result, Score does both. Ground truth (orchestrator/groundtruth),
//     `traj replay evaluate` (replay.EvaluateParts) and a cluster's share
//     (replay.Share, orchestrator/evalarray's tasks) all take it; Keep is
//     the one writer of cache entries (replay/evalbox keeps its
//     artifacts' entries through it too).
//   - EnvironmentEvaluator (evaluator.go): an environment as an
//     Evaluator, one build and every test path against it.
//
// The evaluator of untrusted trees is replay/evalbox's, built by
// evalbox.New (the one constructor: ground truth, run_tests, replay
// evaluate and the cluster's tasks differ only in its Config); the
// evaluate handler is replay/evaluate.
package evaluation
