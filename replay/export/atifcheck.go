package export

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// atifEntries is the name ATIF gives its list of entries, kept verbatim.
const atifEntries = "steps"

// CheckATIF checks a document against the rules of ATIF v1.7 (Harbor's RFC
// 0001 and its reference validator) and returns every violation, each
// with a JSON path; none means the document follows them:
//
//   - schema_version is "ATIF-v1.7"; agent.name and agent.version are set;
//     "steps" is not empty;
//   - "step_id" runs 1, 2, 3, … in order; source is system, user or agent;
//     message is present; timestamps are ISO 8601;
//   - model_name, reasoning_effort, reasoning_content, tool_calls and
//     metrics appear only on agent entries; llm_call_count 0 has no
//     metrics or reasoning_content;
//   - tool_call_ids are unique within an entry, and every observation
//     result's source_call_id names a tool call of its own entry;
//   - every embedded sub-agent trajectory has a trajectory_id, unique among
//     its siblings, and is itself valid; every subagent_trajectory_ref sets
//     trajectory_id or trajectory_path, and one without a path names an
//     embedded trajectory;
//   - final_metrics.total_steps equals the number of entries.
func CheckATIF(r io.Reader) ([]string, error) {
	var doc atifDoc
	dec := json.NewDecoder(r)
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("read ATIF document: %w", err)
	}
	var probs []string
	checkDoc(&doc, "$", false, &probs)
	return probs, nil
}

type atifDoc struct {
	SchemaVersion string  `json:"schema_version"`
	TrajectoryID  *string `json:"trajectory_id"`
	Agent         *struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"agent"`
	Entries []map[string]json.RawMessage `json:"steps"`
	Final   *struct {
		TotalEntries *int `json:"total_steps"`
	} `json:"final_metrics"`
	Notes                string    `json:"notes"`
	SubagentTrajectories []atifDoc `json:"subagent_trajectories"`
}

func checkDoc(d *atifDoc, path string, embedded bool, probs *[]string) {
	bad := func(p, format string, args ...any) { *probs = append(*probs, p+": "+fmt.Sprintf(format, args...)) }
	if d.SchemaVersion != ATIFVersion {
		bad(path+".schema_version", "%q, want %q", d.SchemaVersion, ATIFVersion)
	}
	if d.Agent == nil || d.Agent.Name == "" || d.Agent.Version == "" {
		bad(path+".agent", "name and version are required")
	}
	if embedded && (d.TrajectoryID == nil || *d.TrajectoryID == "") {
		bad(path+".trajectory_id", "required on an embedded sub-agent trajectory")
	}
	if len(d.Entries) == 0 {
		bad(path+"."+atifEntries, "empty; at least one entry is required")
	}
	agentOnly := []string{"model_name", "reasoning_effort", "reasoning_content", "tool_calls", "metrics"}
	embeddedIDs := map[string]bool{}
	for i := range d.SubagentTrajectories {
		sub := &d.SubagentTrajectories[i]
		sp := fmt.Sprintf("%s.subagent_trajectories[%d]", path, i)
		if sub.TrajectoryID != nil && *sub.TrajectoryID != "" {
			if embeddedIDs[*sub.TrajectoryID] {
				bad(sp+".trajectory_id", "%q is not unique among the sub-agent trajectories", *sub.TrajectoryID)
			}
			embeddedIDs[*sub.TrajectoryID] = true
		}
		checkDoc(sub, sp, true, probs)
	}
	for i, st := range d.Entries {
		p := fmt.Sprintf("%s.%s[%d]", path, atifEntries, i)
		var id int
		if json.Unmarshal(st["step_id"], &id) != nil || id != i+1 {
			bad(p+".step_id", "%s, want %d (sequential from 1)", st["step_id"], i+1)
		}
		var source string
		_ = json.Unmarshal(st["source"], &source)
		if source != "system" && source != "user" && source != "agent" {
			bad(p+".source", "%s, want system, user or agent", st["source"])
		}
		if _, ok := st["message"]; !ok {
			bad(p+".message", "required")
		}
		if raw, ok := st["timestamp"]; ok && string(raw) != "null" {
			var ts string
			if json.Unmarshal(raw, &ts) != nil {
				bad(p+".timestamp", "not a string")
			} else if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
				bad(p+".timestamp", "%q is not an ISO 8601 time", ts)
			}
		}
		if source != "agent" {
			for _, f := range agentOnly {
				if raw, ok := st[f]; ok && string(raw) != "null" {
					bad(p+"."+f, "only allowed on agent entries (source is %q)", source)
				}
			}
		}
		if raw, ok := st["llm_call_count"]; ok && string(raw) == "0" {
			for _, f := range []string{"metrics", "reasoning_content"} {
				if r, ok := st[f]; ok && string(r) != "null" {
					bad(p+"."+f, "must be absent when llm_call_count is 0")
				}
			}
		}
		var calls []struct {
			ID   string          `json:"tool_call_id"`
			Name string          `json:"function_name"`
			Args json.RawMessage `json:"arguments"`
		}
		if raw, ok := st["tool_calls"]; ok && string(raw) != "null" {
			if err := json.Unmarshal(raw, &calls); err != nil {
				bad(p+".tool_calls", "%v", err)
			}
		}
		callIDs := map[string]bool{}
		for j, c := range calls {
			cp := fmt.Sprintf("%s.tool_calls[%d]", p, j)
			if c.ID == "" || c.Name == "" {
				bad(cp, "tool_call_id and function_name are required")
			}
			if callIDs[c.ID] {
				bad(cp+".tool_call_id", "%q repeated within the entry", c.ID)
			}
			callIDs[c.ID] = true
			if len(c.Args) == 0 || c.Args[0] != '{' {
				bad(cp+".arguments", "want a JSON object")
			}
		}
		var obs *struct {
			Results []struct {
				SourceCallID *string `json:"source_call_id"`
				Refs         []struct {
					TrajectoryID   string `json:"trajectory_id"`
					TrajectoryPath string `json:"trajectory_path"`
				} `json:"subagent_trajectory_ref"`
			} `json:"results"`
		}
		if raw, ok := st["observation"]; ok && string(raw) != "null" {
			if err := json.Unmarshal(raw, &obs); err != nil {
				bad(p+".observation", "%v", err)
			}
		}
		if obs == nil {
			continue
		}
		for j, r := range obs.Results {
			rp := fmt.Sprintf("%s.observation.results[%d]", p, j)
			if r.SourceCallID != nil && !callIDs[*r.SourceCallID] {
				bad(rp+".source_call_id", "%q is not a tool call of this entry", *r.SourceCallID)
			}
			for k, ref := range r.Refs {
				fp := fmt.Sprintf("%s.subagent_trajectory_ref[%d]", rp, k)
				switch {
				case ref.TrajectoryID == "" && ref.TrajectoryPath == "":
					bad(fp, "sets neither trajectory_id nor trajectory_path")
				case ref.TrajectoryPath == "" && !embeddedIDs[ref.TrajectoryID]:
					bad(fp, "trajectory_id %q names no embedded sub-agent trajectory", ref.TrajectoryID)
				}
			}
		}
	}
	if d.Final != nil && d.Final.TotalEntries != nil && *d.Final.TotalEntries != len(d.Entries) && d.Notes == "" {
		bad(path+".final_metrics.total_steps", "%d, but the document has %d entries and no notes say why", *d.Final.TotalEntries, len(d.Entries))
	}
}
