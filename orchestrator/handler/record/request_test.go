package record

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trajlab/traj/orchestrator"
	"github.com/trajlab/traj/orchestrator/folder"
)

// TestBadRequests: requests that cannot run as given are refused before
// anything is opened or written, as a *BadRequest (traj exits 2), and a
// source whose run.json does not decode is refused too, never replayed
// with the defaults in its place (folder.ReadRunState's one policy): its
// sandbox and limits are what an edited run.json would otherwise drop.
func TestBadRequests(t *testing.T) {
	t.Parallel()
	st := sourceStore(t, folder.RunState{TrajectoryID: "src", TaskSource: "builtin:c-compiler", Model: "scripted/demo", MaxParts: 28})
	broken := t.TempDir()
	if err := os.CopyFS(broken, os.DirFS(st)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(broken, "trajectories", "src", "run.json"), []byte(`{"sandbox": `), 0o644); err != nil {
		t.Fatal(err)
	}
	model := orchestrator.Options{Model: "scripted/demo", MaxParts: 3, Store: st, WorkDir: t.TempDir()}
	for _, c := range []struct {
		name string
		run  func() error
		bad  bool
		want string
	}{
		{"fork and resume", func() error { return runErr(RunRequest{Fork: "a", Resume: "b", AtPart: 1}) }, true, "do not go together"},
		{"at-part without fork", func() error { return runErr(RunRequest{AtPart: 3, Options: model}) }, true, "go with --fork"},
		{"fork without at-part", func() error { return runErr(RunRequest{Fork: "src", Options: model}) }, true, "--at-part P"},
		{"no model", func() error { return runErr(RunRequest{Options: orchestrator.Options{MaxParts: 3}}) }, true, "--model is required"},
		{"no budget", func() error { return runErr(RunRequest{Options: orchestrator.Options{Model: "scripted/demo"}}) }, true, "--max-parts is required"},
		{"negative cpus", func() error {
			o := model
			o.Sandbox.Limits.CPUs = -1
			return runErr(RunRequest{Options: o})
		}, true, "must not be negative"},
		{"fork of nothing", func() error { return runErr(RunRequest{Fork: "nope", AtPart: 1, Options: model}) }, true, "nope"},
		{"fork past the end", func() error { return runErr(RunRequest{Fork: "src", AtPart: 1 << 20, Options: model}) }, true, "--at-part"},
		{"rerun until-part < 0", func() error { return rerunErr(RerunRequest{Ref: "src", Store: st, UntilPart: -1}) }, true, "--until-part"},
		{"rerun past the end", func() error { return rerunErr(RerunRequest{Ref: "src", Store: st, UntilPart: 1 << 20}) }, true, "the source has"},
		{"rerun of a broken run.json", func() error { return rerunErr(RerunRequest{Ref: "src", Store: broken}) }, false, "read run state"},
		{"fork of a broken run.json", func() error {
			o := model
			o.Store = broken
			return runErr(RunRequest{Fork: "src", AtPart: 1, Options: o})
		}, false, "read run state"},
	} {
		err := c.run()
		var bad *BadRequest
		if err == nil || errors.As(err, &bad) != c.bad || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v (bad request: %v), want an error saying %q (bad request: %v)", c.name, err, errors.As(err, &bad), c.want, c.bad)
		}
	}
}

func runErr(r RunRequest) error {
	_, err := Run(context.Background(), r)
	return err
}

func rerunErr(r RerunRequest) error {
	_, err := Rerun(context.Background(), r)
	return err
}
