package groundtruth

import (
	"encoding/json"
	"testing"
)

// TestAnswerVarying: two run_tests answers as a harness sends them back
// (a JSON string in the request; Codex nests it once more) that differ
// only in when, how long and the call's id are equal once blanked; a
// different score is not.
func TestAnswerVarying(t *testing.T) {
	answer := func(ts string, ms, passed int, id string) string {
		a, _ := json.Marshal(map[string]any{"path": "basics/smoke", "timestamp": ts, "duration_ms": ms, "passed": passed,
			"build": map[string]any{"ok": true, "duration_ms": ms / 10}, "tool_call_id": id})
		req, _ := json.Marshal(map[string]any{"messages": []any{map[string]any{"role": "tool", "content": string(a)}}})
		return string(req)
	}
	nested := func(s string) string { b, _ := json.Marshal(map[string]string{"output": s}); return string(b) }
	blank := func(s string) string { return AnswerVarying.ReplaceAllString(s, "…") }
	a := answer("2026-11-25T22:09:11.240429533Z", 5103, 8, "tc_58f0f92a32eca8c50208df01")
	b := answer("2026-11-25T22:10:00.308389246Z", 10444, 8, "tc_3de7ce6cb5970c5303a62bdc")
	c := answer("2026-11-25T22:10:00.308389246Z", 10444, 7, "tc_3de7ce6cb5970c5303a62bdc")
	if a == b || blank(a) != blank(b) {
		t.Errorf("two runs' answers differ once blanked:\n%s\n%s", blank(a), blank(b))
	}
	if blank(nested(a)) != blank(nested(b)) {
		t.Errorf("nested once more, they differ once blanked:\n%s\n%s", blank(nested(a)), blank(nested(b)))
	}
	if blank(b) == blank(c) {
		t.Error("another score is blanked away")
	}
}
