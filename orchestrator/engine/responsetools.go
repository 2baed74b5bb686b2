package engine

import "sync"

// ResponseTools knows, from the model gateway, which tool calls each
// model response asked for, before the harness runs them. The capture
// sees a response's other tool calls only once the harness reports them,
// which can be after one of them completed (a fast rerun; Codex always),
// so the loop asks here too: a tool part's checkpoint is deferred while
// calls of its response are not recorded yet.
type ResponseTools struct {
	mu sync.Mutex
	// open maps each announced call id not yet recorded to its
	// response's count of such calls.
	open map[string]*int
	// pending counts the latest response's calls not yet recorded, for a
	// harness whose parts do not carry the model's call ids (Codex).
	pending int
}

// Announce is told a response's tool call ids (none: a response without
// tool calls).
func (r *ResponseTools) Announce(toolCallIDs []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending = len(toolCallIDs)
	if len(toolCallIDs) == 0 {
		return
	}
	if r.open == nil {
		r.open = map[string]*int{}
	}
	left := len(toolCallIDs)
	for _, id := range toolCallIDs {
		r.open[id] = &left
	}
}

// take counts one tool part recorded and says whether more tool calls of
// its response are still to come: by the part's call id, or, byCount,
// by the number of calls of the latest response (the harness's new
// request means the previous response's calls were all answered).
func (r *ResponseTools) take(callID string, byCount bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if byCount {
		if r.pending > 0 {
			r.pending--
		}
		return r.pending > 0
	}
	left, ok := r.open[callID]
	if !ok {
		return false
	}
	delete(r.open, callID)
	*left--
	return *left > 0
}
