package main

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/trajlab/traj/orchestrator"
)

// TestRunGivenFlags: the flags on the command line are the request's
// Given, whatever their value, and no other flag is: a fork or resume
// with --cpus 0 or --max-tokens 0 must not take the source's limit
// (record.TestForkGivenFlags has the merge), and a flag left out, --task
// included, is not given even where the run has a default for it (a
// variable such as TRAJ_TESTS_DIR gives a value, which counts by itself).
func TestRunGivenFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want orchestrator.Given
	}{
		{[]string{"run", "--fork", "src", "--at-part", "5", "--cpus", "0", "--max-tokens=0"},
			orchestrator.Given{"fork": true, "at-part": true, "cpus": true, "max-tokens": true}},
		{[]string{"run", "--resume", "src", "--task", "c-compiler", "--timeout", "0s", "--sandbox", "bwrap"},
			orchestrator.Given{"resume": true, "task": true, "timeout": true, "sandbox": true}},
		{[]string{"run", "--model", "scripted/demo", "--max-parts", "3"},
			orchestrator.Given{"model": true, "max-parts": true}},
	}
	for _, tt := range tests {
		var cli CLI
		var out bytes.Buffer
		cli.Stdout, cli.Stderr = &out, &out
		p, err := newParser(t.Context(), &cli, &out, &out)
		if err != nil {
			t.Fatal(err)
		}
		kctx, err := p.Parse(tt.args)
		if err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		req, err := cli.Run.request(&cli.Globals, kctx)
		if err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		if !reflect.DeepEqual(req.Given, tt.want) {
			t.Errorf("%v: given %v, want %v", tt.args, req.Given, tt.want)
		}
		if req.Options.Task != "" && !tt.want["task"] {
			t.Errorf("%v: task %q without --task (a default before the merge)", tt.args, req.Options.Task)
		}
	}
}
