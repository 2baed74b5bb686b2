package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/location"
	"github.com/trajlab/traj/trace/store/s3test"
)

// TestTraceRefStore: `traj trace show|validate ID --store URL` with a local
// store, TRAJ_STORE, and a real S3 server (versitygw), plus s3:// URLs.
func TestTraceRefStore(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // downloads go to the cache
	ctx := context.Background()
	doc, err := os.ReadFile(filepath.Join(traceTestdata, "trace_traj.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := golden(t, "show_traj.golden")

	root := t.TempDir()
	local, err := location.Open(ctx, root, location.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := local.Save(ctx, store.TraceKey("run-1"), store.Bytes(doc)); err != nil {
		t.Fatal(err)
	}

	srv := s3test.Start(t)
	srv.SetEnv(t) // credentials through the standard chain, as a user would
	remote, err := location.Open(ctx, srv.URL("team"), location.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Save(ctx, store.TraceKey("run-2"), store.Bytes(doc)); err != nil {
		t.Fatal(err)
	}
	query := srv.URL("")[strings.Index(srv.URL(""), "?"):]
	trajURL := "s3://" + srv.Bucket + "/team/trajectories/run-2" + query

	for _, args := range [][]string{
		{"trace", "show", "run-1", "--store", root},
		{"trace", "show", "run-1", "--store", "file://" + root},
		{"trace", "show", "run-2", "--store", srv.URL("team")},
		{"trace", "show", trajURL},
	} {
		code, out, errs := runTraj(t, args...)
		if code != 0 || out != want {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errs)
		}
	}
	t.Setenv("TRAJ_STORE", root)
	if code, out, errs := runTraj(t, "trace", "validate", "run-1"); code != 0 || !strings.HasPrefix(out, "ok: run-1: trajectory") {
		t.Fatalf("validate with TRAJ_STORE: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := runTraj(t, "trace", "validate", trajURL); code != 0 || !strings.Contains(out, "ok: ") {
		t.Fatalf("validate s3 URL: exit %d\n%s%s", code, out, errs)
	}

	bad := []struct {
		args []string
		want string
	}{
		{[]string{"trace", "show", "nobody", "--store", root}, `trajectory "nobody" not found in store ` + root},
		{[]string{"trace", "show", "nobody", "--store", srv.URL("team")}, `not found in store s3://`},
		{[]string{"trace", "show", "s3://" + srv.Bucket + "/team/elsewhere/run-2" + query}, "want s3://bucket/prefix/trajectories/<id>"},
		{[]string{"trace", "show", "run-1", "--store", "gs://bucket"}, `unsupported scheme "gs"`},
		{[]string{"trace", "validate", "bad\x01id"}, "not allowed"},
	}
	for _, b := range bad {
		code, _, errs := runTraj(t, b.args...)
		if code != 2 || !strings.Contains(errs, b.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", b.args, code, errs, b.want)
		}
		if strings.Contains(errs, srv.SecretKey) {
			t.Errorf("%q: stderr shows the S3 secret", b.args)
		}
	}
}
