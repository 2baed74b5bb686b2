package trace

// CallUsage is one model call's usage as the model gateway recorded it
// (a line of model_calls.jsonl), what Unclaimed needs of it.
type CallUsage struct {
	Seq     int
	Tokens  Tokens
	Cost    float64
	Outputs int
}

// Claim is what the parts of a trace claimed of one model call.
type Claim struct {
	Parts  int
	Shares int // parts with a share (model_call.outputs > 0)
	Tokens Tokens
	Cost   float64
}

// Unclaimed is the usage of calls no part claims in full: each call's
// tokens and cost minus its parts' shares, in the calls' order. The
// parts' tokens plus its Tokens equal the calls' sums.
func Unclaimed(calls []CallUsage, claims map[int]Claim) *Unattributed {
	u := &Unattributed{Calls: []UnattributedCall{}}
	for _, c := range calls {
		cl := claims[c.Seq]
		left := Tokens{Input: c.Tokens.Input - cl.Tokens.Input, Output: c.Tokens.Output - cl.Tokens.Output,
			Reasoning: c.Tokens.Reasoning - cl.Tokens.Reasoning, CacheRead: c.Tokens.CacheRead - cl.Tokens.CacheRead,
			CacheWrite: c.Tokens.CacheWrite - cl.Tokens.CacheWrite}
		cost := c.Cost - cl.Cost
		if left == (Tokens{}) && cl.Parts > 0 && cl.Shares >= c.Outputs {
			continue // claimed in full (a cost's rounding left aside)
		}
		u.Tokens.Add(left)
		u.Cost += cost
		u.Calls = append(u.Calls, UnattributedCall{Seq: c.Seq, Tokens: left, Cost: cost, Outputs: c.Outputs, Claimed: cl.Shares})
	}
	return u
}

// Claims returns what the parts added so far claimed of each model call
// (parts with model_call), by seq.
func (u *Usage) Claims() map[int]Claim { return u.claims }
