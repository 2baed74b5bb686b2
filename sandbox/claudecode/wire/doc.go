// Package wire is what Claude Code's stream-json lines mean to the agent
// port, with nothing that starts a process: the translator the adapter
// (package claudecode) runs live on each turn's stdout (translate.go:
// lines → sessions, messages, parts, usage reconciled by Accounting,
// each tool's action), the Reader that replays a recorded part's lines
// through that same translator (reader.go), and what varies in its model
// requests run to run (varying.go). Readers of a trace import it through
// sandbox/harness/recorded and so link no sandbox runtime.
package wire
