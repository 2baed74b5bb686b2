package trace

// Usage totals a trajectory's tokens and cost: the sum over its parts,
// unless session_end carries totals, which then win (they include what no
// counted part carried). Nil results mean the trace reports none.
type Usage struct {
	tokens, endTokens *Tokens
	cost, endCost     *float64
}

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
}

// End records session_end's totals; e may be nil.
func (u *Usage) End(e *SessionEnd) {
	if e != nil {
		u.endTokens, u.endCost = e.Tokens, e.Cost
	}
}

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
