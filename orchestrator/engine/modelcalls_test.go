package engine

import (
	"context"
	"testing"
	"time"

	"github.com/trajlab/traj/sandbox/agent"
	"github.com/trajlab/traj/trace"
)

func tok(in, out int64) *trace.Tokens { return &trace.Tokens{Input: in, Output: out} }
func usd(c float64) *float64          { return &c }

func textPart(msg string) agent.Part {
	return agent.Part{Kind: agent.KindText, MessageID: msg}
}
func reasoningPart(msg string) agent.Part {
	return agent.Part{Kind: agent.KindReasoning, MessageID: msg}
}
func toolPart(msg, id string) agent.Part {
	return agent.Part{Kind: agent.KindTool, MessageID: msg, Tool: &agent.ToolCall{Name: "bash", CallID: id}}
}

// TestModelCallsAttribution attacks the matching of parts to the model
// gateway's calls with what harnesses do: a side request answered before
// the main one, a failed call the harness retried, a harness without
// model ids (Codex), tool results recorded after the next call, a cut
// mid-response. Each part must name its call; the parts' shares plus
// what trace.Unclaimed leaves must equal the calls' sums.
func TestModelCallsAttribution(t *testing.T) {
	main := func(seq int, outputs []string, ids ...string) ModelCall {
		return ModelCall{Seq: seq, Model: "demo", Outputs: outputs, ToolCallIDs: ids, Tools: 3,
			Tokens: tok(1000*int64(seq)+7, 10*int64(seq)+1), Cost: usd(0.01 * float64(seq))}
	}
	cases := []struct {
		name        string
		turnMessage bool
		calls       []ModelCall
		parts       []agent.Part
		want        []int // each part's seq (0: none)
		unclaimed   []int // seqs left in Unclaimed
	}{
		{
			name: "side request answered first",
			calls: []ModelCall{
				{Seq: 1, Model: "small", Outputs: []string{"text"}, Tokens: tok(50, 5), Cost: usd(0.001)},
				main(2, []string{"reasoning", "text", "tool"}, "c2"),
			},
			parts:     []agent.Part{reasoningPart("m1"), textPart("m1"), toolPart("m1", "c2")},
			want:      []int{2, 2, 2},
			unclaimed: []int{1},
		},
		{
			name: "failed call retried",
			calls: []ModelCall{
				{Seq: 1, Model: "demo", Tools: 3, Failed: true},
				main(2, []string{"text", "tool"}, "c2"),
			},
			parts:     []agent.Part{textPart("m1"), toolPart("m1", "c2")},
			want:      []int{2, 2},
			unclaimed: []int{1},
		},
		{
			name:        "no model ids, one message per turn (Codex)",
			turnMessage: true,
			calls: []ModelCall{
				main(1, []string{"reasoning", "text", "tool"}, "x1"),
				main(2, []string{"tool", "tool"}, "x2", "x3"),
				main(3, []string{"reasoning", "tool"}, "x4"),
			},
			parts: []agent.Part{reasoningPart("turn-1"), textPart("turn-1"), toolPart("turn-1", "item_3"),
				toolPart("turn-1", "item_4"), toolPart("turn-1", "item_5"), reasoningPart("turn-1")},
			want:      []int{1, 1, 1, 2, 2, 3},
			unclaimed: []int{3}, // cut: its tool never recorded
		},
		{
			name: "a file change after its tool, by message",
			calls: []ModelCall{
				main(1, []string{"tool"}, "c1"),
				main(2, []string{"text"}),
			},
			parts:     []agent.Part{toolPart("m1", "c1"), {Kind: agent.KindPatch, MessageID: "m1"}, textPart("m2")},
			want:      []int{1, 1, 2},
			unclaimed: []int{},
		},
		{
			name: "response id is the message id (Claude Code), out of order",
			calls: []ModelCall{
				{Seq: 1, Model: "demo", Tools: 2, ResponseID: "msg_a", Outputs: []string{"text", "tool"}, ToolCallIDs: []string{"t1"}, Tokens: tok(100, 3), Cost: usd(0.1)},
				{Seq: 2, Model: "demo", Tools: 2, ResponseID: "msg_b", Outputs: []string{"text"}, Tokens: tok(200, 4), Cost: usd(0.2)},
			},
			parts:     []agent.Part{textPart("msg_b"), textPart("msg_a"), toolPart("msg_a", "t1")},
			want:      []int{2, 1, 1},
			unclaimed: []int{},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := &ModelCalls{MessagePerTurn: tc.turnMessage, Wait: time.Second}
			for _, c := range tc.calls {
				m.Started()
				m.Completed(c)
			}
			var u trace.Usage
			msgs := map[int]string{}
			for i, p := range tc.parts {
				a := m.claim(context.Background(), p)
				got := 0
				rec := &trace.Part{Part: i + 1}
				if a != nil {
					got = a.Call.Seq
					rec.ModelCall, rec.Tokens, rec.Cost = &a.Call, a.Tokens, a.Cost
					if tc.turnMessage {
						if a.MessageID == "" || (msgs[got] != "" && msgs[got] != a.MessageID) {
							t.Errorf("part %d: message %q for call %d (before %q)", i+1, a.MessageID, got, msgs[got])
						}
						msgs[got] = a.MessageID
					}
				}
				if got != tc.want[i] {
					t.Errorf("part %d (%s): call %d, want %d", i+1, p.Kind, got, tc.want[i])
				}
				u.AddPart(rec)
			}
			var calls []trace.CallUsage
			var total trace.Tokens
			var cost float64
			for _, c := range tc.calls {
				cu := trace.CallUsage{Seq: c.Seq, Outputs: len(c.Outputs)}
				if c.Tokens != nil {
					cu.Tokens = *c.Tokens
				}
				if c.Cost != nil {
					cu.Cost = *c.Cost
				}
				total.Add(cu.Tokens)
				cost += cu.Cost
				calls = append(calls, cu)
			}
			un := trace.Unclaimed(calls, u.Claims())
			var seqs []int
			for _, c := range un.Calls {
				seqs = append(seqs, c.Seq)
			}
			if len(seqs) != len(tc.unclaimed) {
				t.Fatalf("unclaimed calls %v, want %v", seqs, tc.unclaimed)
			}
			for i := range seqs {
				if seqs[i] != tc.unclaimed[i] {
					t.Fatalf("unclaimed calls %v, want %v", seqs, tc.unclaimed)
				}
			}
			sum := un.Tokens
			if pt := u.PartTokens(); pt != nil {
				sum.Add(*pt)
			}
			pc := 0.0
			if c := u.PartCost(); c != nil {
				pc = *c
			}
			if sum != total || pc+un.Cost-cost > 1e-9 || cost-pc-un.Cost > 1e-9 {
				t.Errorf("parts + unattributed %+v $%v, calls %+v $%v", sum, pc+un.Cost, total, cost)
			}
		})
	}
}

// TestModelCallsWaitsForItsCall: a part the harness finished before the
// gateway recorded the end of its response waits for the call rather
// than taking an older one.
func TestModelCallsWaitsForItsCall(t *testing.T) {
	m := &ModelCalls{Wait: 30 * time.Second}
	m.Started()
	m.Completed(ModelCall{Seq: 1, Tools: 1, Outputs: []string{"tool"}, ToolCallIDs: []string{"a"}, Tokens: tok(10, 1)})
	if a := m.claim(context.Background(), toolPart("m1", "a")); a == nil || a.Call.Seq != 1 {
		t.Fatalf("first part: %+v", a)
	}
	m.Started() // call 2 in flight
	got := make(chan *Attribution)
	go func() { got <- m.claim(context.Background(), textPart("m2")) }()
	select {
	case a := <-got:
		t.Fatalf("claimed %+v before its call was recorded", a)
	case <-time.After(50 * time.Millisecond):
	}
	m.Completed(ModelCall{Seq: 2, Tools: 1, Outputs: []string{"text"}, Tokens: tok(20, 2)})
	if a := <-got; a == nil || a.Call.Seq != 2 || a.Call.Join != "order" {
		t.Fatalf("second part: %+v, want call 2 by order", a)
	}
}

// TestShareTokens: a call's shares add up to it exactly.
func TestShareTokens(t *testing.T) {
	call := trace.Tokens{Input: 100003, Output: 7, Reasoning: 2, CacheRead: 5, CacheWrite: 1}
	for n := 1; n <= 5; n++ {
		var sum trace.Tokens
		for i := range n {
			sum.Add(shareTokens(call, n, i))
		}
		if sum != call {
			t.Errorf("%d outputs: shares add to %+v, want %+v", n, sum, call)
		}
	}
}
