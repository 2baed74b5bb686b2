package mcp

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/trajlab/traj/environment"
)

func TestFeedbackLevels(t *testing.T) {
	out, code := "42\n", 0
	full := Response{Path: "basics/smoke", StatusCode: 200, Result: &environment.Result{
		Path: "basics/smoke", Passed: 1, Failed: 1, Total: 2, Build: environment.BuildResult{OK: true},
		Cases: []environment.CaseResult{
			{Name: "basics/smoke/ret", Phase: "run", Passed: true, ExpectedStdout: &out, ActualStdout: "42\n", ExpectedExitCode: &code},
			{Name: "basics/smoke/add", Phase: "run", Passed: false, ExpectedStdout: &out, ActualStdout: "41\n", ExpectedExitCode: &code, StderrTail: "boom"},
		},
	}}
	for _, tc := range []struct {
		level       Feedback
		cases       int
		mustHave    []string
		mustNotHave []string
	}{
		{FeedbackCounts, 0, []string{`"passed":1`, `"total":2`}, []string{"basics/smoke/add", "expected_stdout", "42"}},
		{FeedbackFailures, 1, []string{"basics/smoke/add", `"phase":""`}, []string{"basics/smoke/ret", "expected_stdout", "expected_exit_code", "41", "boom", `"phase":"run"`}},
		{FeedbackFull, 2, []string{"expected_stdout", "basics/smoke/ret", "boom"}, nil},
	} {
		t.Run(string(tc.level), func(t *testing.T) {
			got := full.For(tc.level)
			if len(got.Result.Cases) != tc.cases {
				t.Fatalf("%d cases, want %d", len(got.Result.Cases), tc.cases)
			}
			b, _ := json.Marshal(got)
			for _, s := range tc.mustHave {
				if !strings.Contains(string(b), s) {
					t.Errorf("%s lacks %s", b, s)
				}
			}
			for _, s := range tc.mustNotHave {
				if strings.Contains(string(b), s) {
					t.Errorf("%s tells %s", b, s)
				}
			}
		})
	}
	if len(full.Result.Cases) != 2 || full.Result.Cases[1].ExpectedStdout == nil {
		t.Fatal("For changed the full result")
	}
	// Whatever a build printed and whatever an error says, every level
	// answers at most OutputCap of each.
	long := strings.Repeat("x", 10*OutputCap) + "END"
	big := Response{StatusCode: 500, Error: &long, Result: &environment.Result{Build: environment.BuildResult{StderrTail: long}}}
	for _, level := range Feedbacks {
		got := big.For(level)
		if n := len(got.Result.Build.StderrTail); n > OutputCap || !strings.HasSuffix(got.Result.Build.StderrTail, "END") {
			t.Errorf("%s: build output of %d bytes (want its last %d)", level, n, OutputCap)
		}
		if n := len(*got.Error); n > OutputCap+len("…") {
			t.Errorf("%s: error of %d bytes", level, n)
		}
	}
	if len(big.Result.Build.StderrTail) != len(long) {
		t.Fatal("For changed the full build output")
	}
	if _, err := ParseFeedback("everything"); err == nil {
		t.Fatal("unknown level accepted")
	}
}
