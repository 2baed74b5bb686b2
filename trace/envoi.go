package trace

import "encoding/json"

// Counts reads the pass/fail counts of a run_tests result, the fields both
// traj's environment results and the original recorder's envoi results
// carry. ok is false for a call that failed or a result without them;
// total falls back to passed+failed when the result has no "total".
func (c EnvoiCall) Counts() (passed, failed, total int, ok bool) {
	if c.Error != nil && *c.Error != "" || len(c.Result) == 0 {
		return 0, 0, 0, false
	}
	var r struct {
		Passed *int `json:"passed"`
		Failed *int `json:"failed"`
		Total  *int `json:"total"`
	}
	if json.Unmarshal(c.Result, &r) != nil || r.Passed == nil || r.Failed == nil && r.Total == nil {
		return 0, 0, 0, false
	}
	passed = *r.Passed
	if r.Failed != nil {
		failed = *r.Failed
	}
	if r.Total != nil {
		total = *r.Total
	} else {
		total = passed + failed
	}
	return passed, failed, total, true
}
