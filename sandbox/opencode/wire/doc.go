// Package wire is what OpenCode's objects (sessions, message infos,
// parts) mean to the agent port, with nothing that starts a server: their
// types (types.go; package opencode aliases them), the Normalize methods
// the adapter uses live and the Reader uses on recorded objects
// (normalize.go), a part decoded at memory speed with trace/jsondec,
// encoding/json for any other shape (partdecode.go, FuzzDecodePart), the
// Reader (reader.go) and what varies in OpenCode's model requests run to
// run (varying.go). Readers of a trace import it through
// sandbox/harness/recorded and so link no sandbox runtime.
package wire
