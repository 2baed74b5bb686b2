// Package wire is what Codex's `codex exec --json` lines mean to the
// agent port, with nothing that starts a process: the translator the
// adapter (package codex) runs live on each turn's stdout (translate.go:
// items → parts in the turn's one message, usage from the thread's
// cumulative totals, kept in State), the Reader that replays a recorded
// part's lines through that same translator (reader.go), and what varies
// in its model requests run to run (varying.go). Readers of a trace
// import it through sandbox/harness/recorded and so link no sandbox
// runtime.
package wire
