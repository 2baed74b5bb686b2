package scripted

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// opencodeBin finds the pinned OpenCode binary: TRAJ_OPENCODE_BIN (set by
// make), else the folder `make setup` installs into.
func opencodeBin(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TRAJ_OPENCODE_BIN"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("TRAJ_OPENCODE_BIN=%s: %v", p, err)
		}
		return p
	}
	p, _ := filepath.Abs("../opencode/npm/node_modules/opencode-linux-x64/bin/opencode")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatal("OpenCode binary missing under CI: run `make setup`")
	}
	t.Skip("OpenCode binary missing: run `make setup` or set TRAJ_OPENCODE_BIN")
	return ""
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestOpenCodeWritesFileAndRunsBash drives the real `opencode serve` with a
// scripted model: the agent writes a file, runs a bash command that reads it,
// and finishes with a text.
func TestOpenCodeWritesFileAndRunsBash(t *testing.T) {
	bin := opencodeBin(t)
	script, err := Parse("it.jsonl", strings.NewReader(`
{"reasoning":"Create the file, then check it with bash.","text":"Writing hello.txt.","tools":[{"name":"write","args":{"filePath":"hello.txt","content":"hello from the script\n"}}]}
{"tools":[{"name":"bash","args":{"command":"cp hello.txt copy.txt && echo ran-bash","description":"Copy the file"}}]}
{"reasoning":"All good.","text":"Done.","expect":{"contains":"ran-bash"},"usage":{"prompt_tokens":9000,"completion_tokens":30,"reasoning_tokens":10,"cached_tokens":8000}}
`))
	if err != nil {
		t.Fatal(err)
	}
	model := New(script, Options{})
	ms := httptest.NewServer(model)
	defer ms.Close()

	root := t.TempDir()
	project := filepath.Join(root, "project")
	if err := os.Mkdir(project, 0o755); err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`{
  "$schema": "https://opencode.ai/config.json",
  "provider": {"scripted": {"npm": "@ai-sdk/openai-compatible", "name": "Scripted",
    "options": {"baseURL": %q, "apiKey": "{env:SCRIPTED_API_KEY}"},
    "models": {"demo": {"name": "demo"}, "small": {"name": "small"}}}},
  "model": "scripted/demo",
  "small_model": "scripted/small",
  "permission": {"edit": "allow", "bash": "allow", "webfetch": "deny"}
}`, ms.URL+"/v1")
	if err := os.WriteFile(filepath.Join(project, "opencode.json"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	const password = "it-password"
	// Typically 13 s; OpenCode alone took up to 30 s to start on 2 busy cores.
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.Command(bin, "serve", "--hostname", "127.0.0.1", "--port", fmt.Sprint(port))
	cmd.Dir = project
	cmd.Env = append(os.Environ(),
		"XDG_DATA_HOME="+filepath.Join(root, "data"),
		"XDG_CONFIG_HOME="+filepath.Join(root, "config"),
		"XDG_STATE_HOME="+filepath.Join(root, "state"),
		"XDG_CACHE_HOME="+filepath.Join(root, "cache"),
		"SCRIPTED_API_KEY=unused",
		"OPENCODE_SERVER_PASSWORD="+password,
	)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		if t.Failed() {
			t.Logf("opencode output:\n%s", logs.String())
		}
	}()

	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	call := func(method, path string, body any, out any) error {
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
		if err != nil {
			return err
		}
		req.SetBasicAuth("opencode", password)
		req.Header.Set("Content-Type", "application/json")
		c := http.Client{Timeout: 5 * time.Second}
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
		if out != nil {
			return json.Unmarshal(b, out)
		}
		return nil
	}
	for {
		if err := call("GET", "/global/health", nil, nil); err == nil {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("opencode exited before it was healthy: %v", err)
		case <-ctx.Done():
			t.Fatal("opencode not healthy in time")
		case <-time.After(200 * time.Millisecond):
		}
	}
	var session struct{ ID string }
	if err := call("POST", "/session", map[string]any{}, &session); err != nil {
		t.Fatal(err)
	}
	prompt := map[string]any{"parts": []map[string]any{{"type": "text", "text": "Write hello.txt and copy it."}}}
	if err := call("POST", "/session/"+session.ID+"/prompt_async", prompt, nil); err != nil {
		t.Fatal(err)
	}

	type part struct {
		Type  string `json:"type"`
		Text  string `json:"text"`
		Tool  string `json:"tool"`
		State struct {
			Status string          `json:"status"`
			Input  json.RawMessage `json:"input"`
			Output string          `json:"output"`
		} `json:"state"`
	}
	type message struct {
		Info struct {
			Role   string          `json:"role"`
			Tokens json.RawMessage `json:"tokens"`
			Time   struct {
				Completed int64 `json:"completed"`
			} `json:"time"`
		} `json:"info"`
		Parts []part `json:"parts"`
	}
	var msgs []message
	var last message
	finished := func() bool {
		for _, m := range msgs {
			for _, p := range m.Parts {
				if m.Info.Role == "assistant" && m.Info.Time.Completed != 0 && p.Type == "text" && p.Text == "Done." {
					last = m
					return true
				}
			}
		}
		return false
	}
	for !finished() {
		select {
		case err := <-exited:
			t.Fatalf("opencode exited: %v", err)
		case <-ctx.Done():
			t.Fatalf("agent did not finish; model status %+v; messages %+v", model.Status(), msgs)
		case <-time.After(250 * time.Millisecond):
		}
		if err := call("GET", "/session/"+session.ID+"/message", nil, &msgs); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Logf("poll messages: %v", err)
		}
	}

	got, err := os.ReadFile(filepath.Join(project, "hello.txt"))
	if err != nil || string(got) != "hello from the script\n" {
		t.Errorf("hello.txt = %q, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(project, "copy.txt")); err != nil {
		t.Errorf("bash did not run in the project folder: %v", err)
	}
	tools := map[string]part{}
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.Type == "tool" {
				tools[p.Tool] = p
			}
		}
	}
	if p := tools["write"]; p.State.Status != "completed" {
		t.Errorf("write part %+v", p)
	}
	if p := tools["bash"]; p.State.Status != "completed" || !strings.Contains(p.State.Output, "ran-bash") {
		t.Errorf("bash part %+v", p)
	}
	// The scripted usage reaches OpenCode's token accounting.
	var tokens struct {
		Input, Output, Reasoning int
		Cache                    struct{ Read int }
	}
	if err := json.Unmarshal(last.Info.Tokens, &tokens); err != nil {
		t.Fatalf("tokens %s: %v", last.Info.Tokens, err)
	}
	t.Logf("scripted usage prompt=9000 cached=8000 completion=30 reasoning=10 -> opencode tokens %s", last.Info.Tokens)
	if tokens.Input != 1000 || tokens.Cache.Read != 8000 || tokens.Reasoning != 10 || tokens.Output+tokens.Reasoning != 30 {
		t.Errorf("opencode tokens %s, want input 1000, cache.read 8000, reasoning 10, output+reasoning 30", last.Info.Tokens)
	}
	if st := model.Status(); st.Played != 3 || st.Diverged != 0 {
		t.Errorf("model status %+v, want all 3 responses played without divergence", st)
	}
}
