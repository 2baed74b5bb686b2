package location_test

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/location"
	s3store "github.com/trajlab/traj/trace/store/s3"
	"github.com/trajlab/traj/trace/store/s3test"
)

func TestOpenLocal(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, raw := range []string{dir, "file://" + dir, "file://localhost" + dir} {
		s, err := location.Open(ctx, raw, location.Options{})
		if err != nil {
			t.Fatalf("open %s: %v", raw, err)
		}
		if err := s.Save(ctx, store.TraceKey("t1"), store.Bytes("{}")); err != nil {
			t.Fatal(err)
		}
		if got, want := s.URI(store.TraceKey("t1")), "file://"+filepath.Join(dir, "trajectories/t1/agent_trace.json"); got != want {
			t.Errorf("URI = %s, want %s", got, want)
		}
		if _, ok := store.AsLocal(s); !ok {
			t.Errorf("%s: local store not reachable through the retry wrapper", raw)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	cases := map[string]string{
		"":                       "empty store location",
		"gs://bucket/x":          `unsupported scheme "gs"`,
		"http://example.com/x":   `unsupported scheme "http"`,
		"file://otherhost/x":     "remote host",
		"s3://":                  "want s3://BUCKET",
		"s3://b?endpoint=ftp://": "not an http(s) URL",
	}
	for raw, want := range cases {
		_, err := location.Open(context.Background(), raw, location.Options{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("open %q: got %v, want error containing %q", raw, err, want)
		}
	}
	_, err := location.Open(context.Background(), "gs://b", location.Options{})
	if !strings.Contains(err.Error(), "s3://BUCKET") || !strings.Contains(err.Error(), "folder path") {
		t.Errorf("error %q does not name the accepted forms", err)
	}
}

func TestChoose(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	if got := location.Choose("", getenv); got != "./runs" {
		t.Errorf("default = %q", got)
	}
	env["TRAJ_STORE"] = "s3://b/p"
	if got := location.Choose("", getenv); got != "s3://b/p" {
		t.Errorf("env = %q", got)
	}
	if got := location.Choose("/x", getenv); got != "/x" {
		t.Errorf("flag = %q", got)
	}
}

// TestOpenS3 opens a real versitygw through a URL and the standard
// credential chain (environment variables).
func TestOpenS3(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	ctx := context.Background()
	s, err := location.Open(ctx, srv.URL("team/runs"), location.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Save(ctx, store.TraceKey("t1"), store.Bytes(`{"trajectory_id":"t1"}`)); err != nil {
		t.Fatalf("save through URL and env credentials: %v", err)
	}
	var got string
	err = s.Load(ctx, store.TraceKey("t1"), func(r io.Reader) error { b, err := io.ReadAll(r); got = string(b); return err })
	if err != nil || got != `{"trajectory_id":"t1"}` {
		t.Fatalf("load: %q %v", got, err)
	}
	if u := s.URI(store.TraceKey("t1")); u != "s3://traj-test/team/runs/trajectories/t1/agent_trace.json" {
		t.Errorf("URI = %s", u)
	}
	_, err = location.Open(ctx, srv.URL("p"), location.Options{S3: func(c *s3store.Config) { c.PartSize = 1 }})
	if err == nil {
		t.Errorf("part size below the minimum accepted")
	}
}
