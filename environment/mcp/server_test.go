package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/trajlab/traj/environment/ccompiler"
)

// gccBuild makes ./cc a gcc wrapper. serialBuild does the same but records
// an overlap if two builds of the workspace ever run at once.
const (
	gccBuild    = "printf '#!/bin/sh\\nexec gcc -w \"$@\"\\n' > cc && chmod +x cc\n"
	serialBuild = "if [ -e building ]; then echo overlap >> overlaps; fi\ntouch building\nsleep 0.3\nrm building\n" + gccBuild
)

func fixtures(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("TRAJ_TESTS_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared", "fixtures")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		t.Skipf("fixtures not found at %s (set TRAJ_TESTS_DIR)", abs)
	}
	return abs
}

func needGCC(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
}

// trajBin is $TRAJ_BIN (set by the Makefile) or a fresh build of cmd/traj.
func trajBin(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("TRAJ_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "traj")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/traj")
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func workspace(t *testing.T, script string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "build.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func startClient(t *testing.T, bin, ws, tests string) *client.Client {
	t.Helper()
	c, err := client.NewStdioMCPClient(bin, append(os.Environ(), "TRAJ_LOG_LEVEL=debug"), "mcp", "--workspace", ws, "--tests-dir", tests, "--workers", "2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	init := mcpgo.InitializeRequest{}
	init.Params.ProtocolVersion = mcpgo.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcpgo.Implementation{Name: "traj-test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c
}

func callRunTests(t *testing.T, c *client.Client, path string) (Response, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req := mcpgo.CallToolRequest{}
	req.Params.Name = ToolName
	req.Params.Arguments = map[string]any{"test_path": path}
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("call run_tests(%q): %v", path, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("content: %+v", res.Content)
	}
	text, ok := res.Content[0].(mcpgo.TextContent)
	if !ok {
		t.Fatalf("content is %T", res.Content[0])
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text.Text), &raw); err != nil {
		t.Fatalf("run_tests answer is not JSON: %v: %s", err, text.Text)
	}
	for _, k := range []string{"path", "timestamp", "duration_ms", "status_code", "error", "result"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("answer lacks %q: %s", k, text.Text)
		}
	}
	var r Response
	if err := json.Unmarshal([]byte(text.Text), &r); err != nil {
		t.Fatal(err)
	}
	if _, err := time.Parse(time.RFC3339Nano, r.Timestamp); err != nil {
		t.Errorf("timestamp %q: %v", r.Timestamp, err)
	}
	return r, res.IsError
}

func TestStdioServerWithRealClient(t *testing.T) {
	needGCC(t)
	bin, tests := trajBin(t), fixtures(t)
	ws := workspace(t, gccBuild)
	c := startClient(t, bin, ws, tests)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tools, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != 1 || tools.Tools[0].Name != ToolName {
		t.Fatalf("tools = %+v", tools.Tools)
	}
	desc := tools.Tools[0].Description
	for _, p := range []string{"all", "basics/smoke", "basics/multi_file", "wacct/chapter_1", "c_testsuite/part_1", "torture/part_1"} {
		if !strings.Contains(desc, p) {
			t.Errorf("description lacks %q: %s", p, desc)
		}
	}
	if req := tools.Tools[0].InputSchema.Required; len(req) != 1 || req[0] != "test_path" {
		t.Errorf("required = %v", req)
	}

	r, isErr := callRunTests(t, c, "basics/smoke")
	if isErr || r.StatusCode != 200 || r.Error != nil || r.Result == nil || r.Path != "basics/smoke" {
		t.Fatalf("basics/smoke: %+v", r)
	}
	if r.Result.Total != 8 || r.Result.Passed != 8 || !r.Result.Build.OK || len(r.Result.Cases) != 8 {
		t.Errorf("basics/smoke result: %+v", r.Result)
	}

	r, _ = callRunTests(t, c, "c_testsuite/part_1")
	if r.StatusCode != 200 || r.Result.Passed != r.Result.Total || r.Result.Total == 0 {
		t.Errorf("c_testsuite/part_1: %+v", r.Result)
	}

	for _, bad := range []string{"../x", "/etc", "nope", "basics/../../etc", "basics\\smoke", "wacct/chapter_99"} {
		r, isErr := callRunTests(t, c, bad)
		if r.StatusCode != 400 || !isErr || r.Result != nil || r.Error == nil || !strings.Contains(*r.Error, "basics/smoke") {
			t.Errorf("%q: status %d isError %v error %v", bad, r.StatusCode, isErr, r.Error)
		}
	}
}

func TestFailedBuildIs200(t *testing.T) {
	bin, tests := trajBin(t), fixtures(t)
	ws := workspace(t, "echo broken >&2; exit 2\n")
	c := startClient(t, bin, ws, tests)
	r, isErr := callRunTests(t, c, "basics/smoke")
	if isErr || r.StatusCode != 200 || r.Result == nil || r.Result.Build.OK || r.Result.Build.ExitCode != 2 ||
		r.Result.Failed != r.Result.Total || r.Result.Cases[0].Phase != "build" || !strings.Contains(r.Result.Build.StderrTail, "broken") {
		t.Fatalf("failed build: %+v", r)
	}
}

// Two server processes on one workspace never build at once.
func TestCallsSerialisedAcrossProcesses(t *testing.T) {
	needGCC(t)
	bin, tests := trajBin(t), fixtures(t)
	ws := workspace(t, serialBuild)
	a := startClient(t, bin, ws, tests)
	b := startClient(t, bin, ws, tests)
	var wg sync.WaitGroup
	for _, c := range []*client.Client{a, b, a, b} {
		wg.Go(func() {
			r, _ := callRunTests(t, c, "basics/smoke")
			if r.StatusCode != 200 || r.Result.Passed != 8 {
				t.Errorf("run: %+v", r)
			}
		})
	}
	wg.Wait()
	if data, err := os.ReadFile(filepath.Join(ws, "overlaps")); err == nil {
		t.Fatalf("builds overlapped: %q", data)
	}
}

// Malformed JSON-RPC gets a JSON-RPC error; the server keeps serving and
// writes nothing but protocol to stdout.
func TestMalformedInput(t *testing.T) {
	bin, tests := trajBin(t), fixtures(t)
	ws := workspace(t, gccBuild)
	cmd := exec.Command(bin, "mcp", "--workspace", ws, "--tests-dir", tests)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	send := func(s string) map[string]any {
		t.Helper()
		if _, err := io.WriteString(stdin, s+"\n"); err != nil {
			t.Fatal(err)
		}
		if !lines.Scan() {
			t.Fatalf("no answer to %q: %v", s, lines.Err())
		}
		var m map[string]any
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatalf("stdout line is not JSON: %q", lines.Text())
		}
		return m
	}
	for _, bad := range []string{`{not json`, `[1,2`, `{"jsonrpc":"2.0","id":7,"method":"no/such/method"}`} {
		m := send(bad)
		e, ok := m["error"].(map[string]any)
		if !ok || e["code"] == nil {
			t.Errorf("%q: answer %v, want a JSON-RPC error", bad, m)
		}
	}
	m := send(`{"jsonrpc":"2.0","id":8,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if m["result"] == nil || m["id"].(float64) != 8 {
		t.Errorf("initialize after garbage: %v", m)
	}
	if _, err := io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	m = send(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"run_tests","arguments":{"test_path":42}}}`)
	res, _ := m["result"].(map[string]any)
	if res == nil || res["isError"] != true || !strings.Contains(lines.Text(), `status_code\":400`) {
		t.Errorf("non-string test_path: %v", m)
	}
}

// Path checks without a subprocess.
func TestRunTestsPaths(t *testing.T) {
	env, err := ccompiler.New(ccompiler.Config{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	s := New(env, t.TempDir(), Options{Now: func() time.Time { return now }})
	tests := []struct {
		path, want string
	}{
		{"../x", "contains .."},
		{"/etc", "absolute path"},
		{"a\x00b", "NUL"},
		{"basics\\smoke", "backslash"},
		{"nope", "unknown test path"},
		{"wacct", "unknown test path"}, // not installed: not a valid path here
		{"", "unknown test path"},
	}
	for _, tt := range tests {
		r := s.RunTests(context.Background(), tt.path, nil)
		if r.StatusCode != 400 || r.Error == nil || !strings.Contains(*r.Error, tt.want) || !strings.Contains(*r.Error, "basics/smoke") {
			t.Errorf("%q: %d %v", tt.path, r.StatusCode, r.Error)
		}
		if r.Timestamp != "2026-11-21T10:00:00Z" || r.Path != tt.path {
			t.Errorf("%q: timestamp %q path %q", tt.path, r.Timestamp, r.Path)
		}
	}
}
