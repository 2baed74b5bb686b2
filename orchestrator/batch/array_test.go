package batch

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestScriptRunsItsCommandVerbatim: a task's script, run by sh, hands
// its command exactly the words it was given, whatever they hold; none
// is expanded, split or run.
func TestScriptRunsItsCommandVerbatim(t *testing.T) {
	dir := t.TempDir()
	hostile := []string{"plain", "two words", "it's", "$(touch pwned)", "`touch pwned`", "; touch pwned", "a\nnewline",
		"", "*", "~", "-n", "$HOME", `back\slash`, "&& touch pwned", "tab\there", "ünïcode"}
	script := filepath.Join(dir, "task.sh")
	cmd := append([]string{"printf", `%s\000`}, hostile...)
	if err := os.WriteFile(script, []byte(Script("a hostile\ntouch pwned", cmd)), 0o755); err != nil {
		t.Fatal(err)
	}
	run := exec.Command("sh", script)
	run.Dir = dir
	out, err := run.Output()
	if err != nil {
		t.Fatalf("sh %s: %v", script, err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if !slices.Equal(got, hostile) {
		t.Errorf("the task got %q, want %q", got, hostile)
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Error("a word of the command ran")
	}
}

// TestKubernetesSubmission: a Kubernetes array is written as its manifest
// and recorded as the Job (name, size, how to poll it); an unknown
// executor and a manifest without an image are refused.
func TestKubernetesSubmission(t *testing.T) {
	a := Array{Executor: Kubernetes, Name: "traj-Demo_1", Tasks: 3, Command: []string{"replay", "evaluate-task"},
		Kube: Kube{Namespace: "research", Component: "evaluate", Image: "registry.example/traj:1",
			Files: map[string]string{"trees": "a\nb\n"}, FilesName: "trees"}}
	var y bytes.Buffer
	sub, err := Submit(context.Background(), a, &y)
	if err != nil {
		t.Fatal(err)
	}
	if sub.Executor != Kubernetes || sub.JobID != "traj-demo-1" || sub.Tasks != 3 || sub.Poll != "kubectl get job traj-demo-1 -n research" || sub.SubmittedAt == "" {
		t.Errorf("record %+v", sub)
	}
	for _, w := range []string{"kind: ConfigMap", "name: traj-demo-1-trees", "completions: 3", "completionMode: Indexed", "mountPath: /etc/traj"} {
		if !strings.Contains(y.String(), w) {
			t.Errorf("manifest lacks %q:\n%s", w, y.String())
		}
	}
	for name, bad := range map[string]Array{
		"no executor": {Name: "x", Tasks: 1},
		"no image":    {Executor: Kubernetes, Name: "x", Tasks: 1},
		"no tasks":    {Executor: Kubernetes, Name: "x", Kube: Kube{Image: "i"}},
		"no command":  {Executor: Slurm, Name: "x", Tasks: 1, Slurm: SlurmOptions{Dir: t.TempDir()}},
	} {
		if _, err := Submit(context.Background(), bad, &y); err == nil {
			t.Errorf("%s: submitted", name)
		}
	}
}

// TestPodStore: a folder store needs a claim and is mounted; an s3://
// store is used as it is.
func TestPodStore(t *testing.T) {
	for _, tc := range []struct {
		url, claim, wantURL, wantClaim string
		bad                            bool
	}{
		{"s3://bucket/traj", "", "s3://bucket/traj", "", false},
		{"s3://bucket/traj", "runs", "s3://bucket/traj", "", false},
		{"./runs", "runs", StoreMountPath, "runs", false},
		{"file:///data/runs", "runs", StoreMountPath, "runs", false},
		{"./runs", "", "", "", true},
	} {
		url, claim, err := PodStore(tc.url, tc.claim)
		if (err != nil) != tc.bad || url != tc.wantURL || claim != tc.wantClaim {
			t.Errorf("PodStore(%q, %q) = %q, %q, %v", tc.url, tc.claim, url, claim, err)
		}
	}
}

// TestRecordLog: the log keeps every record in order, and reads records
// written before batch.Submission existed (an experiment's slurm.json
// without executor or tasks) with their callers' own fields.
func TestRecordLog(t *testing.T) {
	type cells struct {
		Submission
		Cells []int `json:"cells"`
	}
	path := filepath.Join(t.TempDir(), "slurm.json")
	old := `[{"job_id": "12", "submitted_at": "2026-01-02T03:04:05Z", "cells": [3, 1], "cells_file": "/x/a.cells"}]`
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Append(path, cells{Submission: Submission{Executor: Slurm, JobID: "13", Tasks: 1}, Cells: []int{3}}); err != nil {
		t.Fatal(err)
	}
	subs, err := Read[cells](path)
	if err != nil {
		t.Fatal(err)
	}
	if len(subs) != 2 || subs[0].JobID != "12" || !slices.Equal(subs[0].Cells, []int{3, 1}) || subs[0].Executor != "" ||
		subs[1].JobID != "13" || subs[1].Executor != Slurm || !slices.Equal(subs[1].Cells, []int{3}) {
		t.Errorf("log %+v", subs)
	}
	if subs, err := Read[cells](filepath.Join(t.TempDir(), "none.json")); err != nil || subs != nil {
		t.Errorf("no log: %v %v", subs, err)
	}
	if err := os.WriteFile(path, []byte("{not a list"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read[cells](path); err == nil {
		t.Error("a broken log read")
	}
}
