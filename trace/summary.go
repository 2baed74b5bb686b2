package trace

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// Summary is what `traj trace show` prints: the facts of a trajectory a
// researcher looks at first.
type Summary struct {
	TrajectoryID  string `json:"trajectory_id"`
	SchemaVersion string `json:"schema_version"` // "0" for original-recorder traces
	Agent         string `json:"agent"`
	AgentModel    string `json:"agent_model"`
	Task          string `json:"task,omitempty"`
	// RerunOf and ForkedFrom are the trajectory's lineage (nil: none).
	RerunOf    *Lineage `json:"rerun_of,omitempty"`
	ForkedFrom *Lineage `json:"forked_from,omitempty"`
	StartedAt  string   `json:"started_at"`
	Parts      int      `json:"parts"`
	Turns      int      `json:"turns"`
	// EndReason is session_end.reason; empty while the run is unfinished.
	EndReason   string `json:"end_reason"`
	EndDetail   string `json:"end_detail,omitempty"`
	FinalCommit string `json:"final_commit"`
	// Tests holds the best run_tests result per test path, by path.
	Tests []TestResult `json:"tests"`
	// GroundTruth is the latest ground-truth result (the newest checkpoint
	// evaluated); nil when the trace has none.
	GroundTruth *GroundTruth `json:"ground_truth,omitempty"`
	// GroundTruthTrees counts the ground-truth results; SolvedAt is the
	// part whose checkpoint first passed every required path (0: none).
	GroundTruthTrees int      `json:"ground_truth_trees,omitempty"`
	SolvedAt         int      `json:"solved_at,omitempty"`
	Tokens           *Tokens  `json:"tokens,omitempty"`
	Cost             *float64 `json:"cost,omitempty"`
	// TokensSource says whose totals Tokens and Cost are: "model_gateway"
	// (the record's sums), absent for older traces (the harness's).
	TokensSource  string            `json:"tokens_source,omitempty"`
	ModelCalls    int               `json:"model_calls,omitempty"`
	HarnessTokens *Tokens           `json:"harness_tokens,omitempty"`
	HarnessCost   *float64          `json:"harness_cost,omitempty"`
	Unattributed  *Unattributed     `json:"unattributed,omitempty"`
	Artifacts     map[string]string `json:"artifacts,omitempty"`
}

// TestResult is the best result seen for one test path: the most passed
// tests, first reached at Part.
type TestResult struct {
	Path   string `json:"path"`
	Passed int64  `json:"passed"`
	Failed int64  `json:"failed"`
	Total  int64  `json:"total"`
	Part   int    `json:"part"`
	Calls  int    `json:"calls"` // run_tests calls on this path
}

// Summarize reads a trace once, streaming, and summarizes it. Tokens and
// cost are session_end's when present, else the sum over parts.
func Summarize(r io.Reader) (*Summary, error) {
	var s Summary
	best := map[string]*TestResult{}
	var usage Usage
	lastCommit := ""
	ground := func(list []GroundTruth) {
		for i := range list {
			g := list[i]
			s.GroundTruthTrees++
			if s.GroundTruth == nil || g.Part >= s.GroundTruth.Part {
				s.GroundTruth = &g
			}
			if g.Solved && (s.SolvedAt == 0 || g.Part < s.SolvedAt) {
				s.SolvedAt = g.Part
			}
		}
	}
	// Strings beyond MaxReadString are cut while reading: a summary never
	// needs them, and a 200 MB one must not be held.
	err := Scan(newStringCapper(r, MaxReadString), Visitor{
		OnPart: func(_ int, p *Part) error {
			s.Parts++
			if p.GitCommit != "" {
				lastCommit = p.GitCommit
			}
			usage.AddPart(p)
			ground(p.GroundTruth)
			for _, c := range p.EnvoiCalls {
				passed, failed, total, ok := c.Counts()
				if c.Path == "" || !ok {
					continue
				}
				b := best[c.Path]
				if b == nil {
					b = &TestResult{Path: c.Path, Passed: -1}
					best[c.Path] = b
				}
				b.Calls++
				if int64(passed) > b.Passed {
					b.Passed, b.Failed, b.Total, b.Part = int64(passed), int64(failed), int64(total), p.Part
				}
			}
			return nil
		},
		OnTurn: func(int, *Turn) error { s.Turns++; return nil },
		OnEnd: func(t *Trace) error {
			s.TrajectoryID, s.SchemaVersion = t.TrajectoryID, t.SchemaVersion
			s.Agent, s.AgentModel, s.Task, s.StartedAt = t.Agent, t.AgentModel, t.Task, t.StartedAt
			s.RerunOf, s.ForkedFrom = t.RerunOf, t.ForkedFrom
			s.Artifacts = t.Artifacts
			if e := t.SessionEnd; e != nil {
				s.EndReason, s.EndDetail, s.FinalCommit = e.Reason, e.Detail, e.FinalGitCommit
				ground(e.GroundTruth)
			}
			usage.End(t.SessionEnd)
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	if s.SchemaVersion == "" {
		s.SchemaVersion = "0"
	}
	if s.FinalCommit == "" {
		s.FinalCommit = lastCommit
	}
	s.Tokens, s.Cost = usage.Tokens(), usage.Cost()
	if usage.FromGateway() {
		s.TokensSource = "model_gateway"
		s.ModelCalls, s.Unattributed = usage.ModelCalls(), usage.Unattributed()
		s.HarnessTokens, s.HarnessCost = usage.HarnessTokens(), usage.HarnessCost()
	}
	s.Tests = []TestResult{}
	for _, b := range best {
		s.Tests = append(s.Tests, *b)
	}
	sort.Slice(s.Tests, func(i, j int) bool { return s.Tests[i].Path < s.Tests[j].Path })
	return &s, nil
}

// WriteText prints s for people.
func (s *Summary) WriteText(out io.Writer) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	// Every value may come from the agent: Printable keeps terminal
	// escape sequences in it from acting on the terminal.
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s\t%s\n", Printable(k), Printable(v))
		}
	}
	version := s.SchemaVersion
	if version == "0" {
		version = "0 (original recorder)"
	}
	row("trajectory", s.TrajectoryID)
	row("schema", version)
	row("agent", s.Agent)
	row("model", s.AgentModel)
	row("task", s.Task)
	if l := s.RerunOf; l != nil {
		row("lineage", "rerun of "+l.String())
	}
	if l := s.ForkedFrom; l != nil {
		row("lineage", fmt.Sprintf("forked from %s at part %d (parts 1..%d inherited)", l.String(), l.Part, l.Part))
	}
	row("started", s.StartedAt)
	row("parts", fmt.Sprint(s.Parts))
	row("turns", fmt.Sprint(s.Turns))
	end := s.EndReason
	if end == "" {
		end = "(unfinished: no session_end)"
	}
	if s.EndDetail != "" {
		end += ": " + s.EndDetail
	}
	row("end", end)
	final := s.FinalCommit
	if final == "" {
		final = "(none)"
	}
	row("final commit", final)
	if t := s.Tokens; t != nil {
		row("tokens", fmt.Sprintf("%d (input %d, output %d, reasoning %d, cache read %d, cache write %d)",
			t.Total(), t.Input, t.Output, t.Reasoning, t.CacheRead, t.CacheWrite))
	}
	if s.Cost != nil {
		row("cost", fmt.Sprintf("$%.4f", *s.Cost))
	}
	if s.TokensSource == "model_gateway" {
		row("usage from", fmt.Sprintf("the model gateway's record (%d calls)", s.ModelCalls))
		if u := s.Unattributed; u != nil {
			row("unattributed", fmt.Sprintf("%d tokens, $%.4f (%d calls no part claims in full)", u.Tokens.Total(), u.Cost, len(u.Calls)))
		}
		if t := s.HarnessTokens; t != nil {
			hc := 0.0
			if s.HarnessCost != nil {
				hc = *s.HarnessCost
			}
			row("harness usage", fmt.Sprintf("%d tokens, $%.4f (what the harness reported)", t.Total(), hc))
		}
	}
	if len(s.Artifacts) > 0 {
		keys := make([]string, 0, len(s.Artifacts))
		for k := range s.Artifacts {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			row("artifact "+k, s.Artifacts[k])
		}
	}
	if g := s.GroundTruth; g != nil {
		row("ground truth", g.Line()+fmt.Sprintf(" (%d %s evaluated)", s.GroundTruthTrees, plural(s.GroundTruthTrees, "tree")))
		if s.SolvedAt > 0 {
			row("solved at", fmt.Sprintf("part %d (ground truth)", s.SolvedAt))
		}
	}
	if len(s.Tests) == 0 {
		row("tests", "(no run_tests results)")
	} else {
		row("tests", "best run_tests result per path:")
		for _, t := range s.Tests {
			fmt.Fprintf(tw, "  %s\t%d/%d passed (part %d, %d %s)\n", Printable(t.Path), t.Passed, t.Total, t.Part, t.Calls, plural(t.Calls, "call"))
		}
	}
	return tw.Flush()
}

// Line is g in one line: counts, the part and whether it is solved.
func (g GroundTruth) Line() string {
	if g.Error != "" {
		return fmt.Sprintf("part %d: not evaluated: %s", g.Part, g.Error)
	}
	var suites []string
	for _, c := range g.Suites {
		suites = append(suites, fmt.Sprintf("%s %d/%d", c.Path, c.Passed, c.Total))
	}
	line := fmt.Sprintf("%d/%d passed at part %d", g.Passed, g.Total, g.Part)
	if len(suites) > 0 {
		line += " [" + strings.Join(suites, ", ") + "]"
	}
	if g.Sampled {
		line += ", sampled"
	}
	if g.Solved {
		line += ", solved"
	}
	return line
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// String is WriteText into a string.
func (s *Summary) String() string {
	var b strings.Builder
	s.WriteText(&b) //nolint:errcheck // strings.Builder does not fail
	return b.String()
}
