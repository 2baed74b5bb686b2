// Package mcp serves an environment.Environment to a coding agent as the MCP
// tool run_tests(test_path), over stdio (mark3labs/mcp-go). The tool's
// answer is JSON text in the original recorder's shape:
//
//	{"path": "basics/smoke", "timestamp": "2026-11-21T10:00:00.123Z",
//	 "duration_ms": 812, "status_code": 200, "error": null,
//	 "result": { environment.Result }}
//
// status_code 200: the path ran; "result" holds the Result (a failed build
// is still 200, with result.build.ok false and every case at phase
// "build"). 400: the path is unknown or tries to leave the fixtures
// ("..", absolute, backslash, NUL); "error" says why and lists the valid
// paths; "result" is null. 500: an internal fault; "error" says what.
// For 400 and 500 the MCP result also has isError set.
//
// Calls on one workspace are serialised: one at a time in this process
// (a mutex) and across processes (environment.LockWorkspace).
//
// # Channel capacity
//
// The code under test sees the hidden case sources (each compile is given
// one) and chooses how each case ends, so an answer is a channel out of
// the evaluation room. Response.For keeps only what a level names; below
// full the code under test chooses nothing but each case's pass or fail
// and the build's outcome (the build is shown no case): no phase (a
// compile error, a wrong output and a timeout all read "failed"), no
// timestamp or duration, no voided suite's reason (and the tool gateway's
// answer no time waited for an evaluation slot: orchestrator/groundtruth). Per answer, for a path
// of N cases:
//   - counts: the passed count, log2(N+1) bits (basics, 68 cases: 6.1);
//   - failures: the set of failing names, N bits (basics: 68);
//   - full: every case's phase, outputs (stdout, stderr tail) and times:
//     bounded only by the output caps, kilobytes per case.
//
// Measured by TestFeedbackChannel: a ./cc that fails every basics case,
// choosing compile error, wrong output or timeout from byte 40 of the
// source it is given (62 cases, log2(3) bits each), has all 62 symbols
// read back from a full answer; at counts and failures its answer is byte
// for byte a constant failure's, so a decoder gets what a constant guess
// gets (42 of 62, the commonest symbol). Before phases were dropped below
// full, failures carried the 62 symbols too (98 bits a call).
//
// What no field can hide is the call's wall time, which the agent can
// measure itself; with the pass/fail bits it is bounded per trajectory by
// the task's run_tests_calls (orchestrator/task: default 100 answers; at
// failures on basics at most 6,800 bits of pass/fail for a whole run).
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/trajlab/traj/environment"
)

// ToolName is the tool's name; OpenCode shows it to the model as
// "<server>_run_tests".
const ToolName = "run_tests"

// Response is the run_tests answer. Its JSON is the contract recorded in
// traces (envoi_calls) and read by the orchestrator.
type Response struct {
	Path       string              `json:"path"`
	Timestamp  string              `json:"timestamp"`
	DurationMS int64               `json:"duration_ms"`
	StatusCode int                 `json:"status_code"`
	Error      *string             `json:"error"`
	Result     *environment.Result `json:"result"`
}

// Options configure a Server.
type Options struct {
	// Run is passed to every Environment.Run (workers, timeouts).
	Run environment.RunOptions
	// Logger receives diagnostics; it must not write to the protocol's
	// stdout. Nil discards.
	Logger *slog.Logger
	// Version is reported as the server version.
	Version string
	// Now is the clock (tests pin it); nil means time.Now.
	Now func() time.Time
	// Feedback is how much of each result the agent is told; "" is
	// FeedbackFull.
	Feedback Feedback
	// OnResult, when set, gets every full answer before it is cut to
	// Feedback (for a record that keeps the full result).
	OnResult func(Response)
	// Runner, when set, runs a checked path instead of the environment in
	// this process (the tool gateway: in an evaluation sandbox, on a
	// snapshot of the workspace); the workspace lock is then the
	// runner's business.
	Runner func(ctx context.Context, path string) (environment.Result, error)
}

// Server runs tests for one workspace.
type Server struct {
	env       environment.Environment
	workspace string
	opts      Options
	log       *slog.Logger
	mu        sync.Mutex // one run at a time in this process
}

// New returns a Server for workspace.
func New(env environment.Environment, workspace string, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	return &Server{env: env, workspace: workspace, opts: opts, log: opts.Logger}
}

// Description is the tool description: what it does and every valid path.
func (s *Server) Description() string {
	switch s.opts.Feedback {
	case FeedbackCounts:
		return "Build the workspace (bash build.sh must produce ./cc, used as `./cc input.c -o output`) " +
			"and run a test path against it. Returns JSON: path, timestamp, duration_ms, status_code, error, " +
			"result {path, passed, failed, total, build}. Valid test paths: " + strings.Join(s.env.TestPaths(), ", ") + "."
	case FeedbackFailures:
		return "Build the workspace (bash build.sh must produce ./cc, used as `./cc input.c -o output`) " +
			"and run a test path against it. Returns JSON: path, timestamp, duration_ms, status_code, error, " +
			"result {path, passed, failed, total, build, cases[{name}] (the failing cases)}. Valid test paths: " +
			strings.Join(s.env.TestPaths(), ", ") + "."
	}
	return "Build the workspace (bash build.sh must produce ./cc, used as `./cc input.c -o output`) " +
		"and run a test path against it. Returns JSON: path, timestamp, duration_ms, status_code, error, " +
		"result {path, passed, failed, total, build, cases[{name, phase, passed, expected_stdout, actual_stdout, " +
		"expected_exit_code, actual_exit_code, stderr_tail, error}]}. Valid test paths: " +
		strings.Join(s.env.TestPaths(), ", ") + "."
}

// Tool is the run_tests tool as MCP describes it (name, description at the
// feedback level, input schema): served here, and by the tool gateway.
func (s *Server) Tool() mcpgo.Tool {
	return mcpgo.NewTool(ToolName,
		mcpgo.WithDescription(s.Description()),
		mcpgo.WithString("test_path", mcpgo.Required(),
			mcpgo.Description("A test path, e.g. basics/smoke, wacct/chapter_1, c_testsuite/part_1, torture/part_1 or all.")),
	)
}

// MCPServer builds the mcp-go server with the run_tests tool.
func (s *Server) MCPServer() *server.MCPServer {
	srv := server.NewMCPServer("traj-tests", s.opts.Version,
		server.WithToolCapabilities(false),
		server.WithRecovery(),
	)
	srv.AddTool(s.Tool(), s.handle)
	return srv
}

// ServeStdio serves MCP over in/out until in closes or ctx ends. Only
// protocol messages are written to out; diagnostics go to the Logger.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	std := server.NewStdioServer(s.MCPServer())
	std.SetErrorLogger(log.New(slogWriter{s.log}, "", 0))
	err := std.Listen(ctx, in, out)
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return fmt.Errorf("serve MCP over stdio: %w", err)
}

func (s *Server) handle(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	path, err := req.RequireString("test_path")
	var resp Response
	if err != nil {
		resp = s.respond(s.opts.Now(), "", 400, "test_path (a string) is required; valid paths: "+strings.Join(s.env.TestPaths(), ", "), nil)
	} else {
		var progress func(done, total int)
		if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
			progress = progressNotifier(ctx, req.Params.Meta.ProgressToken)
		}
		resp = s.RunTests(ctx, path, progress)
	}
	if s.opts.OnResult != nil {
		s.opts.OnResult(resp)
	}
	resp = resp.For(s.opts.Feedback)
	data, err := json.Marshal(resp)
	if err != nil {
		return nil, fmt.Errorf("encode run_tests response: %w", err)
	}
	res := mcpgo.NewToolResultText(string(data))
	res.IsError = resp.StatusCode != 200
	return res, nil
}

// progressNotifier sends MCP progress notifications for a request that
// asked for them.
func progressNotifier(ctx context.Context, token mcpgo.ProgressToken) func(done, total int) {
	srv := server.ServerFromContext(ctx)
	if srv == nil {
		return nil
	}
	return func(done, total int) {
		_ = srv.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
			"progressToken": token, "progress": done, "total": total,
		})
	}
}

// RunTests validates path, takes the workspace lock, and runs it. It is
// what the tool calls; the orchestrator may call it directly too.
func (s *Server) RunTests(ctx context.Context, path string, progress func(done, total int)) Response {
	start := s.opts.Now()
	if why := escapes(path); why != "" {
		s.log.Warn("run_tests refused a path", "path", path, "why", why)
		return s.respond(start, path, 400, fmt.Sprintf("test path %q refused: %s; valid paths: %s", path, why, strings.Join(s.env.TestPaths(), ", ")), nil)
	}
	if !slices.Contains(s.env.TestPaths(), path) {
		return s.respond(start, path, 400, fmt.Sprintf("unknown test path %q; valid paths: %s", path, strings.Join(s.env.TestPaths(), ", ")), nil)
	}
	s.log.Info("run_tests", "path", path)
	res, err := s.run(ctx, path, progress)
	switch {
	case environment.IsUsageError(err):
		return s.respond(start, path, 400, err.Error()+"; valid paths: "+strings.Join(s.env.TestPaths(), ", "), nil)
	case err != nil:
		s.log.Error("run_tests", "path", path, "err", err)
		return s.respond(start, path, 500, err.Error(), nil)
	}
	s.log.Info("run_tests done", "path", path, "passed", res.Passed, "total", res.Total, "build_ok", res.Build.OK)
	return s.respond(start, path, 200, "", &res)
}

// run runs a checked path: through Options.Runner, or the environment
// on the workspace under its lock.
func (s *Server) run(ctx context.Context, path string, progress func(done, total int)) (environment.Result, error) {
	if s.opts.Runner != nil {
		return s.opts.Runner(ctx, path)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	unlock, err := environment.LockWorkspace(ctx, s.workspace)
	if err != nil {
		return environment.Result{}, err
	}
	defer unlock()
	opts := s.opts.Run
	opts.Progress = progress
	return s.env.Run(ctx, s.workspace, path, opts)
}

func (s *Server) respond(start time.Time, path string, code int, msg string, res *environment.Result) Response {
	r := Response{
		Path:       path,
		Timestamp:  start.UTC().Format(time.RFC3339Nano),
		DurationMS: s.opts.Now().Sub(start).Milliseconds(),
		StatusCode: code,
		Result:     res,
	}
	if msg != "" {
		r.Error = &msg
	}
	return r
}

// escapes says why a path could reach outside the fixtures, or "".
func escapes(path string) string {
	switch {
	case strings.ContainsRune(path, 0):
		return "contains NUL"
	case strings.Contains(path, "\\"):
		return "contains a backslash"
	case strings.HasPrefix(path, "/"):
		return "absolute path"
	case slices.Contains(strings.Split(path, "/"), ".."):
		return "contains .."
	}
	return ""
}

// slogWriter adapts mcp-go's *log.Logger output to slog.
type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.l.Warn("mcp", "msg", strings.TrimSpace(string(p)))
	return len(p), nil
}
