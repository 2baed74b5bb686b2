// Package calls is the model gateway's record of model calls
// (model_calls.jsonl) as readers need it, with nothing that serves HTTP:
// a call's fields (Call, its request Digest), Totals, the one reader of a
// record (ReadRecord, ScanRecord: lines over MaxLineBytes streamed with
// their strings cut, never held) and a recorded reply put back together
// (Assemble, over SSEData). The gateway (package model) writes the same
// types and aliases them; export, the viewer and a rerun's comparison read
// through this package and so do not link the gateway.
//
// Placement (Place, from a trace) is the one owner of where the calls sit
// among a trace's parts: which calls a fork at part P plays, its fork
// point, and the response ends a rerun's comparison checks trees at. It
// follows the trace's part → call attribution (each part's
// model_call.seq), because a call's parts_before lags when the harness
// asks for its next answer before traj recorded the part that ended
// (Codex, under load); parts_before places calls only in traces without
// the attribution and, bounded by the attributed calls around it, a call
// no part names (TestPlacementRaceLagged).
package calls
