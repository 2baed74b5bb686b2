package trace

import "testing"

func TestUsage(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	parts := []Part{
		{Tokens: &Tokens{Input: 10, Output: 2}, Cost: f(0.5)},
		{},
		{Tokens: &Tokens{Input: 5, Reasoning: 1}, Cost: f(0.25)},
	}
	for _, tc := range []struct {
		name   string
		parts  []Part
		end    *SessionEnd
		tokens int64 // -1: nil
		cost   float64
		noCost bool
	}{
		{"sum of parts", parts, nil, 18, 0.75, false},
		{"session_end wins", parts, &SessionEnd{Tokens: &Tokens{Input: 100}, Cost: f(2)}, 100, 2, false},
		{"session_end without totals", parts, &SessionEnd{Reason: EndPartLimit}, 18, 0.75, false},
		{"none", []Part{{}, {}}, &SessionEnd{}, -1, 0, true},
	} {
		var u Usage
		for i := range tc.parts {
			u.AddPart(&tc.parts[i])
		}
		u.End(tc.end)
		switch tok := u.Tokens(); {
		case tc.tokens < 0 && tok != nil:
			t.Errorf("%s: tokens = %+v, want nil", tc.name, *tok)
		case tc.tokens >= 0 && (tok == nil || tok.Total() != tc.tokens):
			t.Errorf("%s: tokens = %+v, want total %d", tc.name, tok, tc.tokens)
		}
		switch c := u.Cost(); {
		case tc.noCost && c != nil:
			t.Errorf("%s: cost = %v, want nil", tc.name, *c)
		case !tc.noCost && (c == nil || *c != tc.cost):
			t.Errorf("%s: cost = %v, want %v", tc.name, c, tc.cost)
		}
	}
}

// TestTraceUsage: a trace's Usage is its parts' sum, or session_end's
// totals when it has them.
func TestTraceUsage(t *testing.T) {
	c := 0.5
	tr := &Trace{Turns: []Turn{{Parts: []Part{{Tokens: &Tokens{Input: 3}}, {Tokens: &Tokens{Output: 2}, Cost: &c}}}}}
	u := tr.Usage()
	if got := u.Tokens(); got == nil || *got != (Tokens{Input: 3, Output: 2}) {
		t.Errorf("parts' tokens %+v", got)
	}
	if got := u.Cost(); got == nil || *got != 0.5 {
		t.Errorf("parts' cost %v", got)
	}
	tr.SessionEnd = &SessionEnd{Tokens: &Tokens{Input: 10}}
	if got := tr.Usage().Tokens(); got == nil || *got != (Tokens{Input: 10}) {
		t.Errorf("with session_end totals: %+v", got)
	}
}
