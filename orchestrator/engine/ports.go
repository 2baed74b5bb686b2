package engine

import (
	"context"
	"encoding/json"
	"time"

	"github.com/trajlab/traj/orchestrator/progress"
	"github.com/trajlab/traj/orchestrator/task"
	"github.com/trajlab/traj/trace"
)

// Checkpointer commits the workspace when files changed.
type Checkpointer interface {
	// Checkpoint commits the workspace if it changed since the last
	// checkpoint, labelled with the part index.
	Checkpoint(ctx context.Context, part int) (trace.RepoCheckpoint, error)
}

// TraceWriter persists the trace durably, part by part: after AppendPart
// returns, the local agent_trace.json holds the part. Written returns
// what the last call made durable, which the loop hands to the Publisher.
// *trace.Writer implements it.
type TraceWriter interface {
	BeginTurn(t trace.TurnStart) error
	AppendPart(p *trace.Part) error
	// EndTurn closes the open turn with what the server returned after its
	// last counted part (end.TrailingParts).
	EndTurn(end trace.TurnEnd) error
	// Written is the chunk the last call fixed (valid until the next
	// call; the zero Chunk when it wrote nothing).
	Written() trace.Chunk
}

// Publisher hands what the loop made durable to the store
// (asynchronously): each trace chunk the writer fixed, and, when a part
// made a commit, the incremental history bundle. It must not block on
// the network. The loop calls it after every write; nothing reaches the
// store behind its back (*folder.HistoryPublisher).
type Publisher interface {
	// TraceWritten takes the chunk of one trace mutation (a turn's start,
	// a part, a turn's end); c's buffers are valid only during the call.
	TraceWritten(c trace.Chunk)
	// PartRecorded takes a part once its chunk is handed on.
	PartRecorded(ctx context.Context, p *trace.Part) error
}

// Redactor clears secret values from what the loop records (a part, a
// prompt, a turn's trailing parts) before the writer sees them. Each
// method returns a copy: the caller's values are never written
// (*secret.Redactor).
type Redactor interface {
	Part(p trace.Part) trace.Part
	Text(s string) string
	Raws(list []json.RawMessage) []json.RawMessage
}

// GroundTruth scores checkpoints outside the agent's reach, in the
// background (*groundtruth.Background); with it, "solved" and the
// continuation prompt come from its results, not from the agent's
// run_tests calls.
type GroundTruth interface {
	// Submit queues the checkpoint commit part made; it never blocks.
	Submit(part int, commit string)
	// Take returns the results landed since the last Take (they ride on
	// the next part written).
	Take() []trace.GroundTruth
	// SolvedAt is the part whose checkpoint first passed every required
	// path (0: none yet).
	SolvedAt() int
	// AtTurnEnd waits for commit's result (unless the task says not to
	// wait: then the standing is the latest result landed and names its
	// part) and returns the standing for the continuation prompt and
	// whether it is solved (only ever by a full, not a sampled, result).
	AtTurnEnd(ctx context.Context, part int, commit string) (task.Standing, bool, error)
}

// GatewayCalls is the tool gateway's ledger as the loop needs it: a
// run_tests result a harness part carries claims its call; the calls no
// part claims (the agent called the gateway itself) ride on the next part.
type GatewayCalls interface {
	// Claim marks the call toolCallID as carried by a harness part.
	Claim(toolCallID string)
	// Unclaimed returns, once each, the unclaimed calls completed before t.
	Unclaimed(t time.Time) []trace.GatewayCall
}

// GatewayGrace is how long a completed gateway call waits for the harness
// part that carries it before a part takes it as a call outside the
// harness (it must also have waited one whole part).
const GatewayGrace = 2 * time.Second

// Reporter receives progress events.
type Reporter interface {
	Report(ev progress.Event)
}
