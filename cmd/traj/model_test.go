package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestModelServeBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte("{\"text\":\"ok\"}\n{\"text\":\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good.jsonl")
	if err := os.WriteFile(good, []byte(`{"text":"ok"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"malformed script", []string{"model", "serve", "--script", bad}, 2, bad + ":2: bad JSON"},
		{"missing script", []string{"model", "serve", "--script", filepath.Join(dir, "nope.jsonl")}, 2, "nope.jsonl"},
		{"non-loopback address", []string{"model", "serve", "--script", good, "--addr", "0.0.0.0:0"}, 2, "only loopback addresses"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tt.args, &stdout, &stderr); code != tt.code {
				t.Errorf("exit %d, want %d; stderr %s", code, tt.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tt.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
		})
	}
}

// TestModelServe runs the command until its context is cancelled: it prints
// the base URL, answers a chat completion from the script, and stops cleanly.
func TestModelServe(t *testing.T) {
	script := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(script, []byte("# one response\n{\"text\":\"from the script\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	g := &Globals{Stdout: pw, Stderr: io.Discard, Logger: slog.New(slog.DiscardHandler)}
	cmd := &ModelServeCmd{Script: script, Addr: "127.0.0.1:0", SideModels: []string{"small"}}
	done := make(chan error, 1)
	go func() { done <- cmd.Run(ctx, g) }()

	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	base, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if !ok || !strings.HasPrefix(base, "http://127.0.0.1:") || !strings.HasSuffix(base, "/v1") {
		t.Fatalf("first line %q, want \"listening on http://127.0.0.1:PORT/v1\"", line)
	}
	resp, err := http.Post(base+"/chat/completions", "application/json",
		strings.NewReader(`{"model":"demo","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Choices []struct {
			Message struct{ Content string }
		}
	}
	err = json.NewDecoder(resp.Body).Decode(&c)
	resp.Body.Close()
	if err != nil || len(c.Choices) != 1 || c.Choices[0].Message.Content != "from the script" {
		t.Fatalf("completion %+v, %v", c, err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve returned %v after cancel", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop after its context was cancelled")
	}
}
