package calls

import (
	"fmt"
	"os"
	"sort"

	"github.com/trajlab/traj/trace"
)

// Placement is where a trace's model calls sit among its parts: the one
// owner of "which call started before part P" and "at which parts a
// response ended", which a fork, a fork's script and the rerun
// comparison read.
//
// It comes from the trace's part → call attribution (each part's
// model_call.seq, which the recorder wrote): a call started after the
// parts before its first part. A call's parts_before (the gateway's count
// when it started) can lag: a harness asks for its next answer the
// instant a command ends, before traj records that part (Codex), so
// parts_before falls back in only for traces without the attribution
// (older ones), and bounded by the attributed calls around it for a call
// no part names (a side request, a failed call).
type Placement struct {
	// first and last are each attributed call's first and last part
	// (1-based), by seq; nil: the trace attributes none.
	first, last map[int]int
	seqs        []int // attributed seqs, ascending
}

// PlaceParts makes the placement of a trace whose part i+1 came from the
// call of seq partCalls[i] (0: none).
func PlaceParts(partCalls []int) Placement {
	var pl Placement
	for i, seq := range partCalls {
		if seq <= 0 {
			continue
		}
		if pl.first == nil {
			pl.first, pl.last = map[int]int{}, map[int]int{}
		}
		if _, ok := pl.first[seq]; !ok {
			pl.first[seq] = i + 1
			pl.seqs = append(pl.seqs, seq)
		}
		pl.last[seq] = i + 1
	}
	sort.Ints(pl.seqs)
	return pl
}

// Place reads the part → call attribution of the trace at path ("": none,
// the calls' parts_before alone).
func Place(path string) (Placement, error) {
	if path == "" {
		return Placement{}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return Placement{}, fmt.Errorf("place model calls: %w", err)
	}
	defer f.Close()
	var seqs []int
	err = trace.Scan(f, trace.Visitor{OnPart: func(_ int, p *trace.Part) error {
		seq := 0
		if p.ModelCall != nil {
			seq = p.ModelCall.Seq
		}
		seqs = append(seqs, seq)
		return nil
	}})
	if err != nil {
		return Placement{}, fmt.Errorf("place model calls: read trace %s: %w", path, err)
	}
	return PlaceParts(seqs), nil
}

// Attributed says whether the trace names its parts' calls.
func (pl Placement) Attributed() bool { return len(pl.first) > 0 }

// Before is how many parts the trace held when c started, as far as
// its parts go (see Placement); false: unknown (no attribution and no
// parts_before).
func (pl Placement) Before(c Call) (int, bool) {
	if !pl.Attributed() {
		if c.PartsBefore == nil {
			return 0, false
		}
		return *c.PartsBefore, true
	}
	if f, ok := pl.first[c.Seq]; ok {
		return f - 1, true
	}
	// No part names c (a side request, a failed call): its parts_before,
	// no earlier than the calls recorded before it (lower seqs) started,
	// no later than those recorded after it.
	lo, hi := 0, -1
	for _, s := range pl.seqs {
		if s < c.Seq {
			lo = max(lo, pl.first[s]-1)
		} else if hi < 0 || pl.first[s]-1 < hi {
			hi = pl.first[s] - 1
		}
	}
	n := lo
	if c.PartsBefore != nil && *c.PartsBefore > n {
		n = *c.PartsBefore
	}
	if hi >= lo && n > hi {
		n = hi
	}
	return n, true
}

// StartedBefore says whether c started while the trace held fewer than
// part parts: a fork at part plays it.
func (pl Placement) StartedBefore(c Call, part int) bool {
	n, ok := pl.Before(c)
	return ok && n < part
}

// ForkPoint is where a fork at part p branches: p itself when a call
// started right after it, else the last part of the response that
// produced p (a response is not split); past the last call, parts (the
// trace's last part).
func (pl Placement) ForkPoint(cs []Call, p, parts int) int {
	at := parts
	for _, c := range cs {
		if n, ok := pl.Before(c); ok && n >= p && n < at {
			at = n
		}
	}
	return at
}

// Ends are the parts at which responses ended: where each call but the
// first began.
func (pl Placement) Ends(cs []Call) map[int]bool {
	out := map[int]bool{}
	for _, c := range cs {
		if n, ok := pl.Before(c); ok && n > 0 {
			out[n] = true
		}
	}
	return out
}
