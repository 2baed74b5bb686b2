package view

import (
	"context"
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"github.com/trajlab/traj/replay/linediff"

	"github.com/trajlab/traj/environment"
	"github.com/trajlab/traj/sandbox/agent"
	"github.com/trajlab/traj/trace"
)

// A part is shown as what its tool did, read from the harness-neutral
// record (agent.Action, filled by each harness's reader): an edit as a
// diff, a write as the file, a command then its output, a sub-agent as a
// link to its session; run_tests results (the trace's own envoi_calls) as
// a table of cases. Nothing here knows a harness's tool names.

// ActionView is a tool call's action, ready to draw.
type ActionView struct {
	Kind string `json:"kind"` // edit | write | command | task | read | search | run_tests | todo
	// ToolKind is the harness-neutral kind (agent.Action.ToolKind).
	ToolKind string `json:"tool_kind"`
	// ExitCode is a command's exit status when the harness reports it.
	ExitCode    *int   `json:"exit_code,omitempty"`
	Path        string `json:"path,omitempty"`
	Command     string `json:"command,omitempty"`
	Description string `json:"description,omitempty"`
	Prompt      string `json:"prompt,omitempty"`
	// Diff is an edit's replacements as lines (edit).
	Diff []DiffLine `json:"diff,omitempty"`
	// Lines is a written file, highlighted when a lexer knows it; Text
	// when not (write).
	Lines     [][]Token `json:"lines,omitempty"`
	Text      string    `json:"text,omitempty"`
	Truncated bool      `json:"truncated,omitempty"`
	// TooLarge: an edit too large to diff within the budget, shown as
	// its old lines removed and new lines added whole.
	TooLarge bool `json:"too_large,omitempty"`
}

// DiffLine is one line of an edit's diff: op is "+", "-", " " or "@" (the
// start of a replacement).
type DiffLine struct {
	Op   string `json:"op"`
	Text string `json:"text"`
}

// maxActionLines bounds the lines of one edit's diff or written file.
const maxActionLines = 5000

func actionView(a *agent.Action) *ActionView {
	if a == nil {
		return nil
	}
	v := &ActionView{Kind: string(a.Kind), ToolKind: a.ToolKind(), ExitCode: a.ExitCode, Path: a.Path, Command: clipBytes(a.Command, maxTextBytes),
		Description: a.Description, Prompt: clipBytes(a.Prompt, maxTextBytes)}
	switch a.Kind {
	case agent.ActionEdit:
		for i, e := range a.Edits {
			head := "replacement"
			if len(a.Edits) > 1 {
				head += " " + strconv.Itoa(i+1) + " of " + strconv.Itoa(len(a.Edits))
			}
			if e.All {
				head += " (every occurrence)"
			}
			v.Diff = append(v.Diff, DiffLine{Op: "@", Text: head})
			lines, tooLarge := lineDiff(e.Old, e.New)
			v.Diff = append(v.Diff, lines...)
			v.TooLarge = v.TooLarge || tooLarge
			if len(v.Diff) > maxActionLines {
				v.Diff, v.Truncated = v.Diff[:maxActionLines], true
				break
			}
		}
	case agent.ActionWrite:
		text := a.Content
		if len(text) > maxTextBytes {
			text, v.Truncated = clipBytes(text, maxTextBytes), true
		}
		if lines, ok := highlight(a.Path, text); ok {
			v.Lines = lines
		} else {
			v.Text = text
		}
	}
	return v
}

// lineDiff is old → new line by line (linediff, within a fifth of its
// default budget: a part's view has no request to cancel it); tooLarge
// when the budget ran out and the rest is shown removed and added whole.
func lineDiff(old, new string) ([]DiffLine, bool) {
	var out []DiffLine
	res := linediff.Lines(context.Background(), old, new, linediff.DefaultBudget/5)
	for _, d := range res.Chunks {
		op := " "
		switch d.Op {
		case linediff.Insert:
			op = "+"
		case linediff.Delete:
			op = "-"
		}
		text := strings.TrimSuffix(d.Text, "\n")
		for _, l := range strings.Split(text, "\n") {
			out = append(out, DiffLine{Op: op, Text: l})
			if len(out) > maxActionLines {
				return out, res.TooLarge
			}
		}
	}
	return out, res.TooLarge
}

// maxCases bounds the cases listed for one run_tests call.
const maxCases = 1000

// casesOf reads a run_tests call's result (environment.Result, the
// contract of run_tests) for its build and cases, failing cases first.
func casesOf(call trace.EnvoiCall, cv *CallView) {
	if len(call.Result) == 0 {
		return
	}
	var r environment.Result
	if json.Unmarshal(call.Result, &r) != nil {
		return
	}
	if !r.Build.OK && (r.Build.Error != "" || r.Build.StderrTail != "" || r.Build.ExitCode != 0) {
		b := r.Build
		cv.Build = &b
	}
	cv.Voided = r.Voided
	sort.SliceStable(r.Cases, func(i, j int) bool { return !r.Cases[i].Passed && r.Cases[j].Passed })
	if len(r.Cases) > maxCases {
		cv.MoreCases = len(r.Cases) - maxCases
		r.Cases = r.Cases[:maxCases]
	}
	for _, c := range r.Cases {
		c.StderrTail = clipBytes(c.StderrTail, 2048)
		c.ActualStdout = clipBytes(c.ActualStdout, 4096)
		if c.ExpectedStdout != nil {
			s := clipBytes(*c.ExpectedStdout, 4096)
			c.ExpectedStdout = &s
		}
		cv.Cases = append(cv.Cases, c)
	}
}
