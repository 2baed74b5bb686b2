package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trajlab/traj/orchestrator"
	"github.com/trajlab/traj/orchestrator/handler/record"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store/s3test"
)

// TestRunRefusesUnwritableStore: a store that refuses writes (no
// credentials, or wrong ones) fails `traj run` before anything is created
// (the write probe), with a non-zero exit and the store named.
func TestRunRefusesUnwritableStore(t *testing.T) {
	srv := s3test.Start(t)
	task, err := filepath.Abs("../../orchestrator/testdata/tasks/e2e")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	script := writeFile(t, filepath.Join(root, "s.jsonl"), []byte(`{"text":"a"}`+"\n"))
	// No credential chain at all: no variables, no files, no instance role.
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(root, "absent"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(root, "absent"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	cases := []struct {
		name string
		env  map[string]string
	}{
		{"no-credentials", nil},
		{"wrong-credentials", map[string]string{"AWS_ACCESS_KEY_ID": "AKIAWRONGWRONGWRONG1", "AWS_SECRET_ACCESS_KEY": "wrong-secret-wrong-secret"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			work := filepath.Join(root, c.name)
			code, stdout, stderr := runTraj(t, "run", "--task", task, "--model", "scripted/demo", "--script", script,
				"--agent-bin", "/bin/true", "--max-parts", "3", "--store", srv.URL(c.name), "--work-dir", work)
			if code == 0 || !strings.Contains(stderr, "refuses writes") {
				t.Errorf("exit %d, want non-zero with the store refusing writes\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			if _, err := os.Stat(work); !os.IsNotExist(err) {
				t.Errorf("%s was created (err %v)", work, err)
			}
		})
	}
}

// TestRunSummarySaysWhatNext: an interrupted (or otherwise continuable)
// run's summary says how to resume it, with the store flags the run was
// given; a run with pending uploads says to sync.
func TestRunSummarySaysWhatNext(t *testing.T) {
	tests := []struct {
		reason  string
		store   string
		pending []string
		want    []string
		absent  []string
	}{
		{trace.EndInterrupted, "", nil, []string{"continue:      traj run --resume t1 --store '/my store'\n"}, []string{"traj sync"}},
		{trace.EndPartLimit, "", nil, []string{"traj run --resume t1 --store '/my store' --max-parts N"}, nil},
		{trace.EndSolved, "", []string{"trajectories/t1/repo.bundle"}, []string{"upload later:  traj sync t1 --store '/my store'\n"}, []string{"--resume"}},
		// An S3 store URL holds & and ?: pasted unquoted, the shell would
		// run the rest in the background.
		{trace.EndInterrupted, "s3://b/p?endpoint=http://127.0.0.1:7070&region=us-east-1", nil,
			[]string{"traj run --resume t1 --store 's3://b/p?endpoint=http://127.0.0.1:7070&region=us-east-1'\n"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			var b bytes.Buffer
			c := &RunCmd{Store: tt.store}
			if c.Store == "" {
				c.Store = "/my store"
			}
			record.PrintNext(&b, &orchestrator.Result{TrajectoryID: "t1", End: trace.SessionEnd{Reason: tt.reason}, NotUploaded: tt.pending},
				c.locateArgs("t1"))
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("output %q lacks %q", b.String(), w)
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(b.String(), a) {
					t.Errorf("output %q says %q", b.String(), a)
				}
			}
		})
	}
}

// TestRunExit: uploads left pending make the exit status 4 and name
// `traj sync`; an interrupt is 130 whatever else; agent errors 3.
func TestRunExit(t *testing.T) {
	pending := []string{"trajectories/t1/agent_trace.json"}
	tests := []struct {
		reason  string
		pending []string
		code    int
		msg     string
	}{
		{trace.EndSolved, nil, 0, ""},
		{trace.EndPartLimit, pending, 4, "traj sync t1"},
		{trace.EndAgentError, pending, 4, "1 objects are only in the trajectory folder"},
		{trace.EndAgentError, nil, 3, ""},
		{trace.EndInterrupted, pending, 130, ""},
	}
	for _, tt := range tests {
		err := runExit(&orchestrator.Result{End: trace.SessionEnd{Reason: tt.reason}, NotUploaded: tt.pending}, "t1")
		code := 0
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
		if code != tt.code || tt.msg != "" && !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s with %d pending: exit %d (%v), want %d saying %q", tt.reason, len(tt.pending), code, err, tt.code, tt.msg)
		}
	}
}
