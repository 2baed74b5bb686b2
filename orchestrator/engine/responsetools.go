package engine

import "sync"

// ResponseTools counts the tool calls of the latest model response that
// are not recorded yet, as the model gateway saw the response. For a
// harness whose events may report a response's second tool call only
// after the first completed (harness.Harness.LateToolEvents), the capture
// cannot see that they ran side by side; this count can, so the loop
// defers a tool part's checkpoint while more of its response's calls are
// to come.
type ResponseTools struct {
	mu      sync.Mutex
	pending int
}

// Announce is told a new response's tool call count (the previous
// response's calls were all answered, or the harness would not have asked
// again).
func (r *ResponseTools) Announce(toolCalls int) {
	r.mu.Lock()
	r.pending = toolCalls
	r.mu.Unlock()
}

// take counts one tool part recorded and says whether more tool calls of
// its response are still to come.
func (r *ResponseTools) take() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending > 0 {
		r.pending--
	}
	return r.pending > 0
}
