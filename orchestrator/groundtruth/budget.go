package groundtruth

import (
	"context"
	"fmt"
	"time"

	"github.com/trajlab/traj/replay/evalbox"
	"github.com/trajlab/traj/sandbox"
)

// DefaultSlots is how many evaluations of one run go on at once (ground
// truth and the agent's run_tests together), at most.
const DefaultSlots = 2

// Budget is a run's one evaluation budget, shared by ground truth and the
// agent's run_tests: at most Slots evaluations at once, the others wait
// for a slot (ground truth and run_tests alike). Each evaluation runs in
// evalbox.StandardRoom, the one context every tree is scored in (its
// memory, CPUs, processes and scratch disk never depend on the run), and
// Slots is how many such rooms fit in the agent's share: its sandbox's
// memory and CPUs and its --disk cap. So whatever the agent asks for (many
// run_tests calls at once, a build that writes or allocates without end),
// a run's evaluations hold at most Slots rooms of the host, at most the
// agent's own room again (one room when the agent's is smaller): the
// run's total is its agent's room plus Slots × StandardRoom.
type Budget struct {
	slots chan struct{}
}

// NewBudget makes the budget of a run whose agent sandbox has limits agent
// and a disk cap of agentDisk bytes (0: none): slots evaluations at once
// (0: DefaultSlots), fewer when the agent's share holds fewer rooms, at
// least one. Zero memory is sandbox.DefaultMemory; zero CPUs or disk do
// not lower the count.
func NewBudget(slots int, agent sandbox.Limits, agentDisk int64) *Budget {
	if slots <= 0 {
		slots = DefaultSlots
	}
	room := evalbox.StandardRoom()
	mem := agent.Memory
	if mem <= 0 {
		mem = sandbox.DefaultMemory
	}
	fit := min(slots, int(mem/room.Limits.Memory))
	if agent.CPUs > 0 {
		fit = min(fit, int(agent.CPUs/room.Limits.CPUs))
	}
	if agentDisk > 0 {
		fit = min(fit, int(agentDisk/room.Disk))
	}
	return &Budget{slots: make(chan struct{}, max(1, fit))}
}

// Slots is how many evaluations run at once.
func (b *Budget) Slots() int { return cap(b.slots) }

// Held is the most the run's evaluations hold of the host together, for
// the log: Slots × the room's memory, CPUs and disk.
func (b *Budget) Held() string {
	r := evalbox.StandardRoom()
	n := int64(b.Slots())
	return fmt.Sprintf("%d × (memory %d MiB, %g CPUs, disk %d MiB)", n, r.Limits.Memory>>20, r.Limits.CPUs, r.Disk>>20)
}

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
