// Package replay reads a recorded trajectory back: it rebuilds the
// repository at any part (checkout-part), evaluates every distinct
// repository state once against the test suites (evaluate), attributes each
// test's progress to the parts that caused it, and checks a trajectory's
// integrity (verify).
//
// The package depends on small interfaces declared here (History for the
// git history in a bundle, Evaluator for a test environment, Cache for the
// content-addressed evaluation cache) so that the git, store and environment
// packages plug in through thin adapters and tests can count what happens.
package replay
