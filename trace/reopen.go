package trace

import "fmt"

// Reopen makes a finished trace writable again, for a run that resumes a
// trajectory which ended early (interrupted, timeout, …): session_end
// goes back to null and the artifacts map to {}, rewriting only the tail,
// and the next BeginTurn follows the last turn. On a trace that is not
// finished it does nothing.
func (w *Writer) Reopen() error {
	w.written = Chunk{}
	if w.err != nil {
		return fmt.Errorf("reopen: %w", w.err)
	}
	if !w.finished {
		return nil
	}
	prevEnd, prevArt := w.sessionEnd, w.artifacts
	w.sessionEnd, w.artifacts, w.finished = nil, map[string]string{}, false
	w.buf = w.buf[:0]
	if err := w.commit(ChunkTail, 0); err != nil {
		w.sessionEnd, w.artifacts, w.finished = prevEnd, prevArt, true
		return fmt.Errorf("reopen: %w", err)
	}
	return nil
}
