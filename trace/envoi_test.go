package trace

import (
	"encoding/json"
	"testing"
)

func TestEnvoiCallCounts(t *testing.T) {
	failed := "build crashed"
	for _, tc := range []struct {
		name                  string
		call                  EnvoiCall
		passed, failed, total int
		ok                    bool
	}{
		{"traj result", EnvoiCall{Result: json.RawMessage(`{"passed":7,"failed":1,"total":8,"cases":[]}`)}, 7, 1, 8, true},
		{"no total", EnvoiCall{Result: json.RawMessage(`{"passed":3,"failed":2}`)}, 3, 2, 5, true},
		{"no failed", EnvoiCall{Result: json.RawMessage(`{"passed":3,"total":9}`)}, 3, 0, 9, true},
		{"passed only", EnvoiCall{Result: json.RawMessage(`{"passed":3}`)}, 0, 0, 0, false},
		{"no passed", EnvoiCall{Result: json.RawMessage(`{"total":3}`)}, 0, 0, 0, false},
		{"null result", EnvoiCall{Result: json.RawMessage(`null`)}, 0, 0, 0, false},
		{"no result", EnvoiCall{}, 0, 0, 0, false},
		{"not JSON", EnvoiCall{Result: json.RawMessage(`{`)}, 0, 0, 0, false},
		{"error", EnvoiCall{Error: &failed, Result: json.RawMessage(`{"passed":1,"total":1}`)}, 0, 0, 0, false},
	} {
		p, f, tot, ok := tc.call.Counts()
		if p != tc.passed || f != tc.failed || tot != tc.total || ok != tc.ok {
			t.Errorf("%s: Counts() = %d, %d, %d, %v; want %d, %d, %d, %v", tc.name, p, f, tot, ok, tc.passed, tc.failed, tc.total, tc.ok)
		}
	}
}
