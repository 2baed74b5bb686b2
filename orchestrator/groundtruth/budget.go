package groundtruth

import (
	"context"
	"fmt"
	"time"

	"github.com/trajlab/traj/sandbox"
)

// DefaultSlots is how many evaluations of one run go on at once (ground
// truth and the agent's run_tests together).
const DefaultSlots = 2

// minEvalMemory is the least memory an evaluation gets when the run's
// share is divided among the slots.
const minEvalMemory = 512 << 20

// Budget is a run's one evaluation budget, shared by ground truth and the
// agent's run_tests: at most Slots evaluations at once, the others wait
// for a slot (ground truth and run_tests alike), and each evaluation's
// sandboxes get Limits. Whatever the agent asks for (many run_tests calls
// at once, a build that allocates without end), the run's evaluations
// hold at most Slots × Limits of the host.
type Budget struct {
	slots  chan struct{}
	limits sandbox.Limits
}

// NewBudget divides total (the run's share of the host: the agent
// sandbox's limits) among slots evaluations: each gets total's memory and
// CPUs divided by slots (at least 512 MiB), and total's process limit.
// Zero memory is sandbox.DefaultMemory; zero CPUs is no CPU limit.
func NewBudget(slots int, total sandbox.Limits) *Budget {
	if slots <= 0 {
		slots = DefaultSlots
	}
	if total.Memory <= 0 {
		total.Memory = sandbox.DefaultMemory
	}
	if total.Processes <= 0 {
		total.Processes = sandbox.DefaultProcesses
	}
	each := total
	each.Memory = max(total.Memory/int64(slots), minEvalMemory)
	if total.CPUs > 0 {
		each.CPUs = total.CPUs / float64(slots)
	}
	return &Budget{slots: make(chan struct{}, slots), limits: each}
}

// Slots is how many evaluations run at once.
func (b *Budget) Slots() int { return cap(b.slots) }

// Limits are what each evaluation's sandboxes get.
func (b *Budget) Limits() sandbox.Limits { return b.limits }

// Acquire waits for a slot (or ctx) and returns how long it waited and
// the function that gives the slot back.
func (b *Budget) Acquire(ctx context.Context) (time.Duration, func(), error) {
	start := time.Now()
	select {
	case b.slots <- struct{}{}:
	case <-ctx.Done():
		return time.Since(start), func() {}, fmt.Errorf("wait for an evaluation slot: %w", ctx.Err())
	}
	return time.Since(start), func() { <-b.slots }, nil
}
