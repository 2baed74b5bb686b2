package scripted

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeRefuses: a bad script or an address beyond this host is a
// RequestError, before anything listens.
func TestServeRefuses(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.jsonl")
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(good, []byte(`{"text":"ok"}`), 0o644)
	os.WriteFile(bad, []byte("{\"text\":\n"), 0o644)
	for _, tc := range []struct {
		name string
		req  ServeRequest
		want string
	}{
		{"bad script", ServeRequest{Script: bad, Addr: "127.0.0.1:0"}, "bad JSON"},
		{"missing script", ServeRequest{Script: filepath.Join(dir, "nope"), Addr: "127.0.0.1:0"}, "nope"},
		{"any address", ServeRequest{Script: good, Addr: "0.0.0.0:0"}, "only loopback addresses"},
		{"public address", ServeRequest{Script: good, Addr: "192.0.2.1:80"}, "only loopback addresses"},
		{"host name", ServeRequest{Script: good, Addr: "example.com:80"}, "only loopback addresses"},
		{"no port", ServeRequest{Script: good, Addr: "127.0.0.1"}, "missing port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Serve(context.Background(), tc.req)
			if re := (*RequestError)(nil); !errors.As(err, &re) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want a RequestError with %q", err, tc.want)
			}
		})
	}
}

// TestServeAnswersUntilCancelled: Serve says where it listens, answers
// there, and returns nil when its context ends.
func TestServeAnswersUntilCancelled(t *testing.T) {
	script := filepath.Join(t.TempDir(), "s.jsonl")
	os.WriteFile(script, []byte(`{"text":"ok"}`), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, ServeRequest{Script: script, Addr: "127.0.0.1:0", Stdout: pw})
		pw.Close()
	}()
	line := make([]byte, 256)
	n, err := pr.Read(line)
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	url, ok := strings.CutPrefix(strings.TrimSpace(string(line[:n])), "listening on ")
	if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("first line %q", line[:n])
	}
	resp, err := http.Get(url + "/models")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "demo") {
		t.Errorf("/v1/models: %d %s", resp.StatusCode, body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve after cancel: %v", err)
	}
}
