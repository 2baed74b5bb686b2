package opencode_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/sandbox/opencode"
	"github.com/trajlab/traj/sandbox/scripted"
	"github.com/trajlab/traj/sandbox/xec"
)

var update = flag.Bool("update", false, "rewrite testdata/events.jsonl from a live run")

// fakeAPIKey stands for a provider key: it must reach the model server
// (proving the {env:NAME} reference works) and never any file.
const fakeAPIKey = "sk-traj-test-3f9c1e77d2b04a5e"

// binary finds OpenCode or fails: these tests are part of `make test`.
// Outside CI, TRAJ_SKIP_OPENCODE=1 turns a missing binary into a skip.
func binary(t *testing.T) string {
	t.Helper()
	bin, err := opencode.ResolveBinary("")
	if err != nil {
		if os.Getenv("CI") == "" && os.Getenv("TRAJ_SKIP_OPENCODE") == "1" {
			t.Skipf("TRAJ_SKIP_OPENCODE=1: %v", err)
		}
		t.Fatalf("%v (run make setup)", err)
	}
	return bin
}

// trajBinary is the traj executable for the tests MCP server: $TRAJ_BIN
// (make test builds it), else built once for this test binary.
var trajOnce struct {
	sync.Once
	path string
	err  error
}

func trajBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TRAJ_BIN"); p != "" {
		return p
	}
	trajOnce.Do(func() {
		dir, err := os.MkdirTemp("", "traj-bin-")
		if err != nil {
			trajOnce.err = err
			return
		}
		trajOnce.path = filepath.Join(dir, "traj")
		out, err := exec.Command("go", "build", "-o", trajOnce.path, "github.com/trajlab/traj/cmd/traj").CombinedOutput()
		if err != nil {
			trajOnce.err = fmt.Errorf("go build traj: %v\n%s", err, out)
		}
	})
	if trajOnce.err != nil {
		t.Fatalf("%v (or set TRAJ_BIN; make test does)", trajOnce.err)
	}
	return trajOnce.path
}

// modelServer serves script on 127.0.0.1 until the test ends and records
// the Authorization headers OpenCode sent.
type modelServer struct {
	url   string
	mu    sync.Mutex
	ok    int             // requests that carried the fake key
	tools map[string]bool // tool names offered in any request
}

func startModel(t *testing.T, script string) (*modelServer, error) {
	sc, err := scripted.Parse("test.jsonl", strings.NewReader(script))
	if err != nil {
		return nil, err
	}
	srv := scripted.New(sc, scripted.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	ms := &modelServer{url: scripted.BaseURL(ln.Addr()), tools: map[string]bool{}}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var req struct {
			Tools []struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tools"`
		}
		_ = json.Unmarshal(body, &req)
		ms.mu.Lock()
		if r.Header.Get("Authorization") == "Bearer "+fakeAPIKey {
			ms.ok++
		}
		for _, tool := range req.Tools {
			ms.tools[tool.Function.Name] = true
		}
		ms.mu.Unlock()
		srv.ServeHTTP(w, r)
	})}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { hs.Close() })
	return ms, nil
}

func (ms *modelServer) offered(tool string) bool {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return ms.tools[tool]
}

func (ms *modelServer) keyed() int {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return ms.ok
}

func config(ms *modelServer, traj, ws string) opencode.Config {
	return opencode.Config{
		Model:      "scripted/demo",
		SmallModel: "scripted/small",
		Providers: map[string]opencode.Provider{"scripted": {
			NPM: "@ai-sdk/openai-compatible", Name: "Scripted", BaseURL: ms.url,
			APIKeyEnv: "TRAJ_TEST_MODEL_KEY", Models: []string{"demo", "small"},
		}},
		TestsMCP: opencode.TrajMCP(traj, ws),
	}
}

// env is a test sandbox with a running OpenCode server.
type env struct {
	sb    *sandbox.Local
	srv   *opencode.Server
	model *modelServer
}

func start(t *testing.T, script string) *env {
	t.Helper()
	e, err := startEnv(t, binary(t), trajBinary(t), script)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// startEnv starts a sandbox, a model and OpenCode; it does not call
// t.Fatal, so it may run in any goroutine. Cleanups stop everything.
func startEnv(t *testing.T, bin, traj, script string) (*env, error) {
	ms, err := startModel(t, script)
	if err != nil {
		return nil, err
	}
	sb, err := sandbox.NewLocal(context.Background(), sandbox.LocalOptions{TrajectoryDir: t.TempDir()})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = sb.Stop(context.Background()) })
	began := time.Now()
	defer func() { t.Logf("opencode start took %v", time.Since(began).Round(time.Millisecond)) }()
	srv, err := opencode.Start(context.Background(), sb, opencode.ServerOptions{
		Binary: bin, Config: config(ms, traj, sb.Workspace()),
		// The whole `make test` shares two cores: a start measured 27 s
		// at load 15, so tests allow more than the 30 s default.
		ReadyTimeout: 90 * time.Second,
		// The question tool is enabled so that its absence proves the
		// config's "question": "deny" (measured: with "allow" it is offered).
		Env: []string{"TRAJ_TEST_MODEL_KEY=" + fakeAPIKey, "OPENCODE_ENABLE_QUESTION_TOOL=1"},
	})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = srv.Stop() })
	return &env{sb: sb, srv: srv, model: ms}, nil
}

func password(t *testing.T, e *env) string {
	b, err := os.ReadFile(opencode.PasswordFile(e.sb.TrajectoryDir()))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const agentScript = `
{"reasoning":"Plan: write, run, delegate.","text":"Writing a file.","tools":[{"name":"write","args":{"filePath":"hello.txt","content":"hi\n"}},{"name":"bash","args":{"command":"echo ran > bash.txt && cat hello.txt","description":"run"}}]}
{"tools":[{"name":"task","args":{"description":"sub work","prompt":"list the files","subagent_type":"general"}}]}
{"tools":[{"name":"bash","args":{"command":"ls","description":"list"}}]}
{"text":"Sub-agent saw hello.txt."}
{"text":"All done.","usage":{"prompt_tokens":1200,"completion_tokens":3,"cached_tokens":1000}}
{"delay_ms":60000,"text":"Too late: this answer is aborted."}
`

func TestAgentSession(t *testing.T) {
	e := start(t, agentScript)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := e.srv.Client

	t.Run("401 without credentials", func(t *testing.T) {
		for _, pw := range []string{"", "wrong"} {
			_, err := opencode.NewClient(e.srv.URL, pw).Health(ctx)
			if !errors.Is(err, opencode.ErrUnauthorized) {
				t.Fatalf("password %q: err = %v, want 401", pw, err)
			}
		}
		if _, err := opencode.NewClient(e.srv.URL, "wrong").Subscribe(ctx, opencode.StreamOptions{}); !errors.Is(err, opencode.ErrUnauthorized) {
			t.Fatalf("subscribe with a wrong password: %v", err)
		}
	})

	t.Run("config in effect", func(t *testing.T) {
		raw, err := c.Config(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var cfg struct {
			Model      string         `json:"model"`
			SmallModel string         `json:"small_model"`
			Permission map[string]any `json:"permission"`
		}
		if err := json.Unmarshal(raw, &cfg); err != nil {
			t.Fatal(err)
		}
		if cfg.Model != "scripted/demo" || cfg.SmallModel != "scripted/small" {
			t.Fatalf("model %q small %q", cfg.Model, cfg.SmallModel)
		}
		if cfg.Permission["question"] != "deny" || cfg.Permission["bash"] != "allow" || cfg.Permission["edit"] != "allow" {
			t.Fatalf("permission = %v", cfg.Permission)
		}
		st, err := c.MCPStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(st["tests"]), `"connected"`) {
			t.Fatalf("tests MCP status = %s", st["tests"])
		}
		if strings.Contains(e.srv.AttachCommand("ses_x"), password(t, e)) {
			t.Fatal("attach command holds the password")
		}
	})

	sess, err := c.CreateSession(ctx, opencode.CreateSessionRequest{Title: "test"})
	if err != nil {
		t.Fatal(err)
	}
	stream, err := c.Subscribe(ctx, opencode.StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	msgID, err := c.SendPrompt(ctx, sess.ID, opencode.TextPrompt("Do the thing."))
	if err != nil {
		t.Fatal(err)
	}

	// Follow events until the root session is idle.
	var raw []string
	var (
		completed = map[string]opencode.Part{} // part id → first completed update
		children  []opencode.Session
		finished  []opencode.MessageInfo
	)
	for done := false; !done; {
		select {
		case ev, ok := <-stream.Events():
			if !ok {
				t.Fatalf("stream ended: %v", stream.Err())
			}
			raw = append(raw, string(ev.Raw))
			switch ev.Type {
			case opencode.EventPartUpdated:
				if ev.Part.Completed() {
					if _, seen := completed[ev.Part.ID]; !seen {
						completed[ev.Part.ID] = *ev.Part
					}
				}
			case opencode.EventSessionCreated:
				if ev.Session.ParentID == sess.ID {
					children = append(children, *ev.Session)
				}
			case opencode.EventMessageUpdated:
				if ev.Message.Time.Completed != nil {
					finished = append(finished, *ev.Message)
				}
			case opencode.EventSessionIdle:
				done = ev.SessionID == sess.ID
			}
		case <-ctx.Done():
			t.Fatalf("no session.idle: %v", ctx.Err())
		}
	}

	if *update {
		if err := os.WriteFile("testdata/events.jsonl", []byte(strings.Join(raw, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// The tools really ran in the workspace.
	for name, want := range map[string]string{"hello.txt": "hi\n", "bash.txt": "ran\n"} {
		b, err := os.ReadFile(filepath.Join(e.sb.Workspace(), name))
		if err != nil || string(b) != want {
			t.Fatalf("%s = %q, %v; want %q", name, b, err, want)
		}
	}

	// Messages hold the tool parts, completed, and the verbatim JSON.
	msgs, err := c.Messages(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if msgs[0].Info.ID != msgID || msgs[0].Info.Role != "user" {
		t.Fatalf("first message %s %s, want the prompt %s", msgs[0].Info.ID, msgs[0].Info.Role, msgID)
	}
	tools := map[string]opencode.Part{}
	var types []string
	for _, m := range msgs {
		if len(m.Raw) == 0 || !json.Valid(m.Raw) {
			t.Fatal("message without raw JSON")
		}
		for _, p := range m.Parts {
			types = append(types, p.Type)
			if p.Type == opencode.PartTool {
				tools[p.Tool] = p
			}
			if m.Info.Role == "assistant" && !p.Completed() {
				t.Errorf("part %s (%s) not completed after idle", p.ID, p.Type)
			}
		}
	}
	for _, name := range []string{"write", "bash", "task"} {
		p, ok := tools[name]
		if !ok || p.State.Status != opencode.ToolCompleted {
			t.Fatalf("tool %s: %+v (parts %v)", name, p.State, types)
		}
		if ev, ok := completed[p.ID]; !ok || ev.State.Status != opencode.ToolCompleted {
			t.Fatalf("no completed event for tool part %s", name)
		}
	}
	if !strings.Contains(tools["bash"].State.Output, "hi") {
		t.Fatalf("bash output %q", tools["bash"].State.Output)
	}
	for _, typ := range []string{opencode.PartReasoning, opencode.PartText, opencode.PartStepStart, opencode.PartStepFinish, opencode.PartPatch} {
		if !strings.Contains(" "+strings.Join(types, " ")+" ", " "+typ+" ") {
			t.Errorf("no %s part among %v", typ, types)
		}
	}

	// The sub-agent's session is a child found by its parentID.
	kids, err := c.Children(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(kids) != 1 || kids[0].ParentID != sess.ID {
		t.Fatalf("children = %+v", kids)
	}
	if desc, err := c.Descendants(ctx, sess.ID); err != nil || len(desc) != 1 || desc[0].ID != kids[0].ID {
		t.Fatalf("descendants = %+v, %v", desc, err)
	}
	if len(children) != 1 || children[0].ID != kids[0].ID {
		t.Fatalf("session.created events for children: %+v", children)
	}
	if got := tools["task"].SubSessionID(); got != kids[0].ID {
		t.Fatalf("task part names session %q, want %q", got, kids[0].ID)
	}
	kidMsgs, err := c.Messages(ctx, kids[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if last := kidMsgs[len(kidMsgs)-1]; last.Info.Role != "assistant" || !strings.Contains(string(last.Raw)+partsText(last), "Sub-agent saw hello.txt.") {
		t.Fatalf("child's last message: %s", last.Raw)
	}

	// Tokens: the scripted usage of the last response reaches the message.
	var sawUsage bool
	for _, m := range finished {
		if m.SessionID == sess.ID && m.Tokens != nil && m.Tokens.Input > 0 && m.Tokens.Output == 3 {
			sawUsage = true
		}
	}
	if !sawUsage {
		t.Fatalf("no finished message with the scripted usage among %d", len(finished))
	}
	if e.model.keyed() < 5 {
		t.Fatalf("%d model requests carried the API key from the environment", e.model.keyed())
	}
	// Permissions: the question tool is denied, so never offered; the
	// tests MCP tool is.
	for tool, want := range map[string]bool{"bash": true, "write": true, "task": true, "tests_run_tests": true, "question": false} {
		if e.model.offered(tool) != want {
			t.Errorf("tool %s offered: %v, want %v", tool, !want, want)
		}
	}

	t.Run("prompt with a delivered id is not sent again", func(t *testing.T) {
		p := opencode.TextPrompt("Do the thing.")
		p.MessageID = msgID
		got, err := c.SendPrompt(ctx, sess.ID, p)
		if err != nil || got != msgID {
			t.Fatalf("SendPrompt = %q, %v", got, err)
		}
		again, err := c.Messages(ctx, sess.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(again) != len(msgs) {
			t.Fatalf("messages %d → %d after a repeated prompt", len(msgs), len(again))
		}
		if err := c.Abort(ctx, sess.ID); err != nil {
			t.Fatalf("abort idle session: %v", err)
		}
	})

	t.Run("abort a running session", func(t *testing.T) {
		if _, err := c.SendPrompt(ctx, sess.ID, opencode.TextPrompt("Once more.")); err != nil {
			t.Fatal(err)
		}
		aborted := false
		for idle := false; !idle; {
			select {
			case ev := <-stream.Events():
				if ev.Type == opencode.EventSessionStatus && ev.SessionID == sess.ID && ev.Status.Type == "busy" && !aborted {
					time.Sleep(300 * time.Millisecond) // the model is now waiting
					if err := c.Abort(ctx, sess.ID); err != nil {
						t.Fatal(err)
					}
					aborted = true
				}
				idle = aborted && ev.Type == opencode.EventSessionIdle && ev.SessionID == sess.ID
			case <-time.After(30 * time.Second):
				t.Fatal("no session.idle within 30 s of the abort")
			}
		}
		msgs, err := c.Messages(ctx, sess.ID)
		if err != nil {
			t.Fatal(err)
		}
		last := msgs[len(msgs)-1]
		if last.Info.Role != "assistant" || !strings.Contains(string(last.Info.Error), "MessageAbortedError") {
			t.Fatalf("last message after abort: role %s error %s", last.Info.Role, last.Info.Error)
		}
	})

	t.Run("workspace clean of OpenCode files", func(t *testing.T) {
		out, err := exec.Command("git", "-C", e.sb.Workspace(), "status", "--porcelain", "--untracked-files=all").Output()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Fields(string(out)); strings.Join(got, " ") != "?? bash.txt ?? hello.txt" {
			t.Fatalf("git status = %q", out)
		}
	})

	pw := password(t, e)
	if sec := e.srv.Secrets(); len(sec) != 2 || sec[0] != pw || sec[1] != fakeAPIKey {
		t.Fatalf("Secrets() = %d values, want the password and the API key", len(sec))
	}
	pid := e.srv.PID()
	mcp := processesWith(e.sb.Workspace())
	if len(mcp) == 0 {
		t.Fatal("no traj mcp process found while the server runs")
	}
	if err := e.srv.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	for _, m := range xec.GroupMembers(pid) {
		if m.State != 'Z' {
			t.Fatalf("process left after stop: %+v", m)
		}
	}
	if left := processesWith(e.sb.Workspace()); len(left) > 0 {
		t.Fatalf("OpenCode's children left after stop: %v", left)
	}
	t.Run("no secret in any file", func(t *testing.T) {
		if _, err := os.Stat(opencode.PasswordFile(e.sb.TrajectoryDir())); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("password file after stop: %v", err)
		}
		assertNoSecret(t, e.sb.TrajectoryDir(), pw, fakeAPIKey)
	})
}

// processesWith lists live processes whose command line mentions s (the
// MCP server OpenCode spawned gets the workspace as an argument).
func processesWith(s string) []string {
	var out []string
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), s) {
			continue
		}
		st, err := os.ReadFile(filepath.Join(filepath.Dir(p), "stat"))
		if err != nil || strings.Contains(string(st), ") Z ") {
			continue
		}
		out = append(out, strings.ReplaceAll(string(b), "\x00", " "))
	}
	return out
}

func partsText(m opencode.Message) string {
	var b strings.Builder
	for _, p := range m.Parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// assertNoSecret walks dir and fails if any file holds a secret.
func assertNoSecret(t *testing.T, dir string, secrets ...string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		n++
		for _, s := range secrets {
			if strings.Contains(string(b), s) {
				t.Errorf("%s holds a secret", p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 5 {
		t.Fatalf("only %d files under %s: the check saw nothing", n, dir)
	}
}

// TestParallelSandboxes starts two sandboxes at once: they must not share
// ports, folders, passwords or OpenCode state.
func TestParallelSandboxes(t *testing.T) {
	bin, traj := binary(t), trajBinary(t)
	envs := make([]*env, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range envs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			envs[i], errs[i] = startEnv(t, bin, traj, `{"text":"unused"}`)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	a, b := envs[0], envs[1]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if a.srv.Port == b.srv.Port {
		t.Fatalf("both servers on port %d", a.srv.Port)
	}
	if a.sb.Workspace() == b.sb.Workspace() || opencode.ConfigPath(a.sb.TrajectoryDir()) == opencode.ConfigPath(b.sb.TrajectoryDir()) {
		t.Fatal("shared folders")
	}
	if password(t, a) == password(t, b) {
		t.Fatal("same password")
	}
	if _, err := opencode.NewClient(a.srv.URL, password(t, b)).Health(ctx); !errors.Is(err, opencode.ErrUnauthorized) {
		t.Fatalf("a accepted b's password: %v", err)
	}
	sa, err := a.srv.Client.CreateSession(ctx, opencode.CreateSessionRequest{Title: "only in a"})
	if err != nil {
		t.Fatal(err)
	}
	list, err := b.srv.Client.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		if s.ID == sa.ID {
			t.Fatal("b lists a's session")
		}
	}
	if _, err := b.srv.Client.Session(ctx, sa.ID); !errors.Is(err, opencode.ErrNotFound) {
		t.Fatalf("b gets a's session: %v", err)
	}
	if got, err := a.srv.Client.Session(ctx, sa.ID); err != nil || got.Directory != a.sb.Workspace() {
		t.Fatalf("a's session: %+v, %v", got, err)
	}
	// a's session is stored under a's data folder only.
	for _, e := range envs {
		found := false
		_ = filepath.WalkDir(filepath.Join(e.sb.TrajectoryDir(), "opencode", "xdg", "data"), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), sa.ID) {
					found = true
				}
			}
			return nil
		})
		if want := e == a; found != want {
			t.Errorf("session stored in %s: %v, want %v", e.sb.TrajectoryDir(), found, want)
		}
	}
	// Stopping a sandbox (not the server) ends OpenCode and its password.
	if err := b.sb.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		_, err := os.Stat(opencode.PasswordFile(b.sb.TrajectoryDir()))
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("password file after the sandbox stopped: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := a.srv.Client.Health(ctx); err != nil {
		t.Fatalf("a hurt by b's stop: %v", err)
	}
}
