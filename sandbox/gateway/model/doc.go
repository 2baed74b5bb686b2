// Package model is the model gateway: the only model endpoint a harness
// is given. It runs in traj, outside the sandbox, on loopback, and
// forwards the harness's model calls to the upstream (a real provider or
// the scripted model) for the three wire APIs the harnesses speak:
//
//	POST /v1/chat/completions   OpenAI chat completions (OpenCode)
//	POST /v1/messages           Anthropic Messages (Claude Code; "?beta=true" kept)
//	POST /v1/responses          OpenAI Responses (Codex)
//	GET  /v1/models             passed through
//
// A request path /v1/X goes to Upstream + "/X", so Upstream is the base
// URL the provider documents with its version ("https://api.anthropic.com/v1",
// "https://api.openai.com/v1", "http://127.0.0.1:PORT/v1" for the scripted
// model).
//
// # Keys
//
// The real API key lives only in the gateway (Options.APIKey). The
// harness gets a per-trajectory token (Options.Token) as its "API key"; a
// request must present it (Anthropic's x-api-key or an Authorization
// bearer) or is refused with 401 before anything is forwarded. The
// gateway then replaces it with the real key in the header style the
// request used. The token is worthless outside this gateway and this
// trajectory.
//
// # The record
//
// Every call is appended, as one JSON line, to Options.Record
// (model_calls.jsonl beside the trace): sequence number, start time,
// latency, API, path, status, model, stream flag, the request by SHA-256
// digest and size (requests repeat the whole conversation, so storing them
// whole would make the record quadratic), the response verbatim (the SSE
// text or JSON body as received), its id and tool call ids, the usage
// normalized as trace.Tokens (input excludes cache reads, output excludes
// reasoning, as OpenCode counts them), the cost from Options.Price, and
// parts_before: how many parts the trace held when the call started
// (Options.Parts; it can lag when a harness asks before traj recorded the
// part that ended, so a fork and a rerun's comparison place calls by the
// trace's attribution, calls.Placement, and use it only without one);
// outputs, the response's output items by kind in order (reasoning,
// text, tool: one part each of a harness that records it), and tools, how
// many tools the request offered (0: a side request, such as a title).
// OnCallStart and OnCall tell the recorder of each call (seq set, body
// left out), which it attributes to the parts it produced
// (orchestrator/engine ModelCalls); the record's sums are every total of
// the trajectory. A resumed trajectory's gateway goes on from the record's
// last seq, its budgets counting the calls before (Options.Prior). Call Record.Totals (or ReadRecord) to add a record up. ScanRecord
// (package calls, which the readers import without the gateway; model
// aliases it) is the one reader of a record (playback, rerun's comparison, the export's
// model_calls table, the viewer): a line longer than MaxLineBytes (32 MiB)
// is streamed with every string cut to MaxCutString and its call marked
// ResponseTruncated and Cut, so no reader holds it (TestRerunHugeRecordLine:
// a 300 MB line, rerun under 300 MB). Options.Parts is the recorder's part
// counter (an atomic the recording loop stores each part into), read for
// each call's parts_before.
//
// # Budgets and failures
//
// Options.MaxTokens and Options.MaxCost end the run: once the calls so far
// reach a budget, Done is closed, Reason says which ("token_limit" or
// "cost_limit" with the numbers), and every further call is refused with
// a non-retryable 400 naming the budget, so no harness keeps spending. An
// upstream that cannot be reached (connection refused, DNS, TLS) fails
// the call with 502; before any call got through, it also closes Done with
// "model_unreachable" naming the endpoint, within the dial timeout
// (Options.DialTimeout, 5 s), instead of the harness retrying for a minute
// (later, a failed connection is an outage the harness retries). Check
// dials the upstream before a run starts.
package model
