// Package tool is the tool gateway: tools whose work must happen outside
// the agent's sandbox (run_tests: the tests and their expected outputs
// never enter it) are served to the harness by a stub and executed by
// traj.
//
// The stub (Stub, `traj tool-stub`) is an MCP stdio server every harness
// can load. It runs inside the sandbox, asks the gateway which tools
// exist (GET /v1/tools) and answers each MCP tool call with one blocking
// call to the gateway:
//
//	POST /v1/tools/{name}
//	Authorization: Bearer <per-trajectory token>
//	{"tool_call_id": "tc_…", "arguments": {…}}
//	→ 200 {"tool_call_id": "tc_…", "text": "…", "is_error": false}
//
// The tool_call_id is made once per logical call (by the stub, when the
// harness calls the tool). A connection that fails or drops before an
// answer (refused, reset, EOF, a relay restarting) is retried with
// exponential backoff (Stub.Backoff: 500 ms doubling to 8 s, 8 attempts)
// and the same id.
//
// The gateway (Gateway) runs in traj, on loopback, outside the sandbox.
// It refuses a request without the trajectory's token (401), and
// deduplicates by tool_call_id: a retry of a call in flight waits for
// that call, a retry of a completed call gets the completed answer, and
// the tool runs once. Completed answers are kept for the gateway's life
// (one run). A tool runs under the gateway's context, not the request's,
// so a dropped connection never cancels a test run half way. The same id
// with other arguments or another tool is refused (409). Every completed
// call is listed once by Calls and, when Options.Record is set, appended
// as one JSON line (tool_calls.jsonl beside the trace).
//
// The token is within the agent's reach: the harness that starts the stub
// (and holds the token in the stub's environment and its own MCP
// configuration) runs as the agent's user in the agent's sandbox, so the
// agent can read /proc/<stub>/environ and call the gateway itself.
// Nothing keeps it from doing so; what keeps the record true is that the
// recorder claims each call a harness part carries (Claim) and writes the
// others into the trace (Unclaimed: the trace's gateway_calls), so every
// call the gateway answered is in the trace once.
package tool
