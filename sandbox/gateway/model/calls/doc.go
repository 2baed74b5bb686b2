// Package calls is the model gateway's record of model calls
// (model_calls.jsonl) as readers need it, with nothing that serves HTTP:
// a call's fields (Call, its request Digest), Totals, the one reader of a
// record (ReadRecord, ScanRecord: lines over MaxLineBytes streamed with
// their strings cut, never held) and a recorded reply put back together
// (Assemble, over SSEData). The gateway (package model) writes the same
// types and aliases them; export, the viewer and a rerun's comparison read
// through this package and so do not link the gateway.
package calls
