package trace

// Usage totals a trajectory's tokens and cost: the sum over its parts,
// unless session_end carries totals, which then win (they include what no
// counted part carried: since the model gateway's attribution, they are
// the sums of its record, model_calls.jsonl). Nil results mean the trace
// reports none. Every reader's totals come from here.
type Usage struct {
	tokens, endTokens *Tokens
	cost, endCost     *float64
	// harness*: the harness's own counts, beside.
	harnessTokens, endHarnessTokens *Tokens
	harnessCost, endHarnessCost     *float64
	unattributed                    *Unattributed
	gateway                         bool
	claims                          map[int]Claim
	calls                           int
}

// ModelCalls is how many calls the model gateway's record held (0: the
// trace does not say).
func (u *Usage) ModelCalls() int { return u.calls }

// AddPart adds p's tokens and cost.
func (u *Usage) AddPart(p *Part) {
	if p.Tokens != nil {
		if u.tokens == nil {
			u.tokens = &Tokens{}
		}
		u.tokens.Add(*p.Tokens)
	}
	if p.Cost != nil {
		if u.cost == nil {
			u.cost = new(float64)
		}
		*u.cost += *p.Cost
	}
	if p.ModelCall != nil {
		if u.claims == nil {
			u.claims = map[int]Claim{}
		}
		c := u.claims[p.ModelCall.Seq]
		c.Parts++
		if p.ModelCall.Outputs > 0 {
			c.Shares++
		}
		if p.Tokens != nil {
			c.Tokens.Add(*p.Tokens)
		}
		if p.Cost != nil {
			c.Cost += *p.Cost
		}
		u.claims[p.ModelCall.Seq] = c
	}
	if p.HarnessTokens != nil {
		if u.harnessTokens == nil {
			u.harnessTokens = &Tokens{}
		}
		u.harnessTokens.Add(*p.HarnessTokens)
	}
	if p.HarnessCost != nil {
		if u.harnessCost == nil {
			u.harnessCost = new(float64)
		}
		*u.harnessCost += *p.HarnessCost
	}
}

// End records session_end's totals; e may be nil.
func (u *Usage) End(e *SessionEnd) {
	if e != nil {
		u.endTokens, u.endCost = e.Tokens, e.Cost
		u.endHarnessTokens, u.endHarnessCost = e.HarnessTokens, e.HarnessCost
		u.unattributed, u.gateway, u.calls = e.Unattributed, e.ModelCalls > 0, e.ModelCalls
	}
}

// FromGateway says whether the totals are the model gateway's record's
// sums (a trace closed since the gateway's attribution), not the
// harness's own counts.
func (u *Usage) FromGateway() bool { return u.gateway }

// HarnessTokens returns what the harness itself reported: session_end's
// harness_tokens, else the parts' (nil when the trace keeps none beside
// the gateway's, as older traces, whose tokens are the harness's).
func (u *Usage) HarnessTokens() *Tokens {
	if u.endHarnessTokens != nil {
		t := *u.endHarnessTokens
		return &t
	}
	return u.harnessTokens
}

// HarnessCost is HarnessTokens' cost.
func (u *Usage) HarnessCost() *float64 {
	if u.endHarnessCost != nil {
		c := *u.endHarnessCost
		return &c
	}
	return u.harnessCost
}

// Unattributed is the gateway's usage no part claims (nil: the trace
// says nothing of it).
func (u *Usage) Unattributed() *Unattributed { return u.unattributed }

// PartTokens and PartCost are the sums over the parts alone.
func (u *Usage) PartTokens() *Tokens { return u.tokens }

// PartCost is the parts' cost.
func (u *Usage) PartCost() *float64 { return u.cost }

// Tokens returns the total tokens, nil when the trace reports none.
func (u *Usage) Tokens() *Tokens {
	if u.endTokens != nil {
		t := *u.endTokens
		return &t
	}
	return u.tokens
}

// Cost returns the total cost, nil when the trace reports none.
func (u *Usage) Cost() *float64 {
	if u.endCost != nil {
		c := *u.endCost
		return &c
	}
	return u.cost
}

// Usage totals a whole trace read into memory.
func (t *Trace) Usage() *Usage {
	u := &Usage{}
	for _, turn := range t.Turns {
		for i := range turn.Parts {
			u.AddPart(&turn.Parts[i])
		}
	}
	u.End(t.SessionEnd)
	return u
}
