package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/report"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store/local"
	"github.com/trajlab/traj/trace/tracetest"
)

// reportStore is a folder store with two finished trajectories.
func reportStore(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, id := range []string{"a", "b"} {
		dir := filepath.Join(root, "trajectories", id)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		tracetest.WriteDir(t, dir, tracetest.Spec{TrajectoryID: id, Turns: []int{2}, End: trace.EndSolved})
	}
	return root
}

// TestRunWritesEveryFile: the handler writes the table and each file
// asked for, from the same trajectories.
func TestRunWritesEveryFile(t *testing.T) {
	root := reportStore(t)
	out := t.TempDir()
	var text bytes.Buffer
	req := report.Request{Store: root, Title: "t", HTML: filepath.Join(out, "r.html"), JSON: filepath.Join(out, "r.json"),
		CSV: filepath.Join(out, "r.csv"), Stdout: &text}
	if err := report.Run(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	var r report.Report
	data, err := os.ReadFile(req.JSON)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &r); err != nil || len(r.Trajectories) != 2 || r.Source != root {
		t.Fatalf("JSON report: %v, %d trajectories, source %q", err, len(r.Trajectories), r.Source)
	}
	csv, err := os.ReadFile(req.CSV)
	if err != nil || strings.Count(string(csv), "\n") != 3 {
		t.Errorf("CSV: %v, want a header and 2 rows:\n%s", err, csv)
	}
	if html, err := os.ReadFile(req.HTML); err != nil || !bytes.Contains(html, []byte("<svg")) {
		t.Errorf("HTML report: %v, no chart", err)
	}
	if !strings.Contains(text.String(), "a") || !strings.Contains(text.String(), "b") {
		t.Errorf("text table lacks a trajectory:\n%s", text.String())
	}
}

// TestRunRefuses: what the request gets wrong is a usage error, and
// nothing is written: an output inside the store (outputs never change
// their inputs), bad thresholds, a store that does not exist (a report
// never creates one), a CSV of an experiment.
func TestRunRefuses(t *testing.T) {
	root := reportStore(t)
	st, err := local.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		req  report.Request
		want string
	}{
		{"output in the store", report.Request{Store: root, HTML: filepath.Join(root, "trajectories", "a", "r.html")}, "r.html"},
		{"bad thresholds", report.Request{Store: root, Labels: map[string]string{"plateau_parts": "x"}}, "--labels"},
		{"unknown threshold", report.Request{Store: root, Labels: map[string]string{"nope": "1"}}, "--labels"},
		{"no store", report.Request{Store: filepath.Join(root, "nope")}, "nope"},
		{"experiment CSV", report.Request{CSV: filepath.Join(t.TempDir(), "x.csv"),
			Experiment: &report.ExperimentRequest{Name: "x", Store: st, Slots: []report.ExperimentSlot{{Task: "c", Model: "m", Attempts: []string{"a"}}}}}, "--csv"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var text bytes.Buffer
			tc.req.Stdout = &text
			err := report.Run(context.Background(), tc.req)
			if !errors.Is(err, replay.ErrUsage) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want a usage error naming %q", err, tc.want)
			}
			if text.Len() != 0 {
				t.Errorf("wrote a table:\n%s", text.String())
			}
			for _, p := range []string{tc.req.HTML, tc.req.CSV} {
				if _, err := os.Stat(p); p != "" && err == nil {
					t.Errorf("%s written", p)
				}
			}
		})
	}
}
