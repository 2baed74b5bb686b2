package opencode

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/trace"
)

// Readiness backoff for GET /global/health (as the reference platform's
// waitForOpenCodeReady): 200 ms first delay, ×1.5, at most 2 s per
// attempt, 30 s in total.
const (
	readyBase       = 200 * time.Millisecond
	readyFactor     = 1.5
	readyMaxAttempt = 2 * time.Second
	DefaultReady    = 30 * time.Second
)

// ServiceName is the OpenCode server's service (and log) name.
const ServiceName = "opencode"

// Host is the only address OpenCode listens on.
const Host = "127.0.0.1"

// Sandbox is what Start needs from a sandbox.
type Sandbox = sandbox.Sandbox

// ServerOptions configure Start.
type ServerOptions struct {
	// Binary is the opencode executable (see ResolveBinary).
	Binary string
	// Config is written to the trajectory's OpenCode config folder.
	Config Config
	// Env adds KEY=VALUE pairs to the server's environment, e.g. the API
	// key a Provider's APIKeyEnv names. They live only in the child's
	// environment, never in a file. The rest of its environment is the
	// sandbox's allowlist (sandbox.AllowedEnv): the user's own OPENCODE_*
	// settings never reach a trajectory.
	Env []string
	// ReadyTimeout bounds the wait for /global/health; DefaultReady when 0.
	ReadyTimeout time.Duration
	// Grace between SIGTERM and SIGKILL on Stop; 5 s when 0.
	Grace  time.Duration
	Logger *slog.Logger
}

// Server is a running `opencode serve` for one trajectory.
type Server struct {
	// URL is http://127.0.0.1:PORT.
	URL    string
	Port   int
	Client *Client

	binary  string
	secrets []string
	svc     sandbox.Service
	exposed *sandbox.Exposed
	expose  func(port int) (string, error)
	pwFile  string // PasswordFile(trajectory)
	logPath string
}

// Paths of a trajectory's OpenCode state, under <trajectory>/opencode:
// the XDG folders (config holds opencode/opencode.json) and the 0600
// password file. Nothing here belongs in a store upload.
func stateDir(traj string) string { return filepath.Join(traj, "opencode") }

// configGitignore is what OpenCode 1.18.33 writes into a config folder.
const configGitignore = "node_modules\npackage.json\npackage-lock.json\nbun.lock\n.gitignore"

// xdgKinds are the XDG folders OpenCode uses.
var xdgKinds = []string{"config", "data", "state", "cache"}

// Inside paths of OpenCode in an isolated sandbox.
const (
	InsideBinary = "/opt/opencode/bin/opencode"
	insideXDG    = "/opt/opencode/xdg"
)

// Mounts creates the trajectory's OpenCode folders and returns what a
// sandbox must show for Start to work: the binary and the config
// read-only; data, state and cache read-write (sessions, snapshots); and
// an empty read-only ~/.opencode, because OpenCode reads $HOME/.opencode
// as a config folder (agents, commands, plugins) even with project config
// off, and HOME is writable for the agent. The password file is never
// mounted.
func Mounts(traj, binary string) ([]sandbox.Mount, error) {
	dir := stateDir(traj)
	var out []sandbox.Mount
	if binary != "" {
		out = append(out, sandbox.Mount{Host: binary, Inside: InsideBinary})
	}
	for _, k := range xdgKinds {
		p := filepath.Join(dir, "xdg", k)
		if err := os.MkdirAll(p, 0o700); err != nil {
			return nil, fmt.Errorf("opencode state folder: %w", err)
		}
		out = append(out, sandbox.Mount{Host: p, Inside: insideXDG + "/" + k, Writable: k != "config"})
	}
	empty := filepath.Join(dir, "empty")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		return nil, fmt.Errorf("opencode state folder: %w", err)
	}
	// OpenCode writes this .gitignore into every config folder it loads
	// and fails when it cannot; with the file there it leaves the
	// read-only folders alone.
	for _, d := range []string{filepath.Dir(ConfigPath(traj)), empty} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("opencode state folder: %w", err)
		}
		if err := os.WriteFile(filepath.Join(d, ".gitignore"), []byte(configGitignore), 0o644); err != nil {
			return nil, fmt.Errorf("opencode state folder: %w", err)
		}
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("opencode state folder: %w", err)
	}
	return append(out, sandbox.Mount{Host: empty, Inside: sandbox.InsideHome + "/.opencode"}), nil
}

// ConfigPath is where Start writes opencode.json for a trajectory: the
// global config of the trajectory's own XDG_CONFIG_HOME, outside the
// workspace so checkpoints never commit it.
func ConfigPath(traj string) string {
	return filepath.Join(stateDir(traj), "xdg", "config", "opencode", "opencode.json")
}

// PasswordFile is the 0600 file holding the server password while the
// server runs (removed by Stop): the only place the password is written.
func PasswordFile(traj string) string { return filepath.Join(stateDir(traj), "password") }

var listening = regexp.MustCompile(`opencode server listening on http://127\.0\.0\.1:(\d+)`)

// Start writes the config, starts `opencode serve --hostname 127.0.0.1
// --port 0` as a sandbox service in the workspace with its own XDG
// data/config/state/cache folders and a random password, learns the port
// from the server's first output line, and waits for /global/health. On
// failure the server is stopped and the error carries its log's tail.
// The server lives until Stop, the sandbox's Stop, or the cancellation of
// ctx: pass the run's context, not a startup timeout.
func Start(ctx context.Context, sb Sandbox, opts ServerOptions) (*Server, error) {
	if opts.Binary == "" {
		return nil, fmt.Errorf("start opencode: %w", ErrNoBinary)
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = DefaultReady
	}
	if opts.Grace <= 0 {
		opts.Grace = 5 * time.Second
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	traj := sb.TrajectoryDir()
	if _, err := Mounts(traj, ""); err != nil {
		return nil, fmt.Errorf("start opencode: %w", err)
	}
	xdg := map[string]string{}
	for _, k := range xdgKinds {
		p, ok := sb.Path(filepath.Join(stateDir(traj), "xdg", k))
		if !ok {
			return nil, fmt.Errorf("start opencode: the sandbox does not show its %s folder (pass opencode.Mounts to the sandbox)", k)
		}
		xdg["XDG_"+strings.ToUpper(k)+"_HOME"] = p
	}
	bin, ok := sb.Path(opts.Binary)
	if !ok {
		return nil, fmt.Errorf("start opencode: the sandbox does not show %s (pass opencode.Mounts to the sandbox)", opts.Binary)
	}
	var homeEnv []string
	if sb.Provider() == sandbox.ProviderLocal {
		// OpenCode reads $HOME/.opencode whatever the project settings,
		// and a local agent can write its HOME: give the server a fresh
		// HOME of traj's at every start, so nothing the agent left there
		// configures a resumed run.
		home := filepath.Join(stateDir(traj), "home")
		if err := os.RemoveAll(home); err != nil {
			return nil, fmt.Errorf("start opencode: %w", err)
		}
		if err := os.MkdirAll(home, 0o700); err != nil {
			return nil, fmt.Errorf("start opencode: %w", err)
		}
		homeEnv = []string{"HOME=" + home}
	}
	if err := WriteConfig(ConfigPath(traj), opts.Config); err != nil {
		return nil, fmt.Errorf("start opencode: %w", err)
	}
	password, err := newPassword()
	if err != nil {
		return nil, fmt.Errorf("start opencode: %w", err)
	}
	pwFile := PasswordFile(traj)
	if err := writeSecret(pwFile, password); err != nil {
		return nil, fmt.Errorf("start opencode: %w", err)
	}

	env := serverEnv(append(opts.Env, homeEnv...), xdg, password)
	logPath := sb.LogPath(ServiceName)
	// Learn the port from this run's output only, not a previous run's.
	offset := fileSize(logPath)
	svc, err := sb.StartService(ctx, sandbox.ServiceSpec{
		Name: ServiceName, Path: bin,
		Args: []string{"serve", "--hostname", Host, "--port", "0", "--print-logs", "--log-level", "INFO"},
		Env:  env, Grace: opts.Grace,
	})
	if err != nil {
		os.Remove(pwFile)
		return nil, fmt.Errorf("start opencode: %w", err)
	}
	s := &Server{binary: opts.Binary, svc: svc, pwFile: pwFile, logPath: logPath, secrets: secretValues(password, opts)}
	s.expose = func(port int) (string, error) {
		e, err := sandbox.Expose(sb, port)
		if err != nil {
			return "", err
		}
		s.exposed = e
		return e.Addr, nil
	}
	// However the server ends (Stop, the sandbox's Stop, ctx, a crash), the
	// password file goes with it.
	go func() {
		<-svc.Done()
		os.Remove(pwFile)
	}()
	started := time.Now()
	if err := s.waitReady(ctx, password, offset, opts.ReadyTimeout); err != nil {
		_ = s.Stop()
		return nil, fmt.Errorf("start opencode: %w\n--- %s (tail) ---\n%s", err, logPath, redact(tail(logPath, 4096), password))
	}
	log.Info("opencode ready", "url", s.URL, "pid", svc.PID(), "after", time.Since(started).Round(time.Millisecond))
	return s, nil
}

// serverEnv is extra plus traj's settings (which win): the password, the
// XDG folders, and the switches that keep OpenCode's configuration
// traj's. OPENCODE_DISABLE_PROJECT_CONFIG turns off every file the agent
// could write in its workspace or a parent of it (opencode.json(c),
// .opencode/ with agents, commands, plugins and tools, AGENTS.md
// instructions); OPENCODE_CONFIG, OPENCODE_CONFIG_DIR and
// OPENCODE_CONFIG_CONTENT are never set (the sandbox's allowlist drops
// them from traj's environment).
func serverEnv(extra []string, xdg map[string]string, password string) []string {
	ours := map[string]string{
		"OPENCODE_SERVER_PASSWORD":         password,
		"OPENCODE_DISABLE_AUTOUPDATE":      "1",
		"OPENCODE_DISABLE_SHARE":           "1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD":    "1",
		"OPENCODE_DISABLE_CLAUDE_CODE":     "1",
		"OPENCODE_DISABLE_PROJECT_CONFIG":  "1",
		"OPENCODE_DISABLE_EXTERNAL_SKILLS": "1",
	}
	for k, v := range xdg {
		ours[k] = v
	}
	var env []string
	for _, kv := range extra {
		k, _, _ := strings.Cut(kv, "=")
		if _, set := ours[k]; set || k == "OPENCODE_CONFIG" || k == "OPENCODE_CONFIG_DIR" || k == "OPENCODE_CONFIG_CONTENT" {
			continue
		}
		env = append(env, kv)
	}
	for k, v := range ours {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return env
}

func (s *Server) waitReady(ctx context.Context, password string, offset int64, total time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, total)
	defer cancel()
	delay := readyBase
	var last error = errors.New("no answer yet")
	for {
		select {
		case <-s.svc.Done():
			return fmt.Errorf("opencode exited before it was ready: %v", s.svc.Err())
		default:
		}
		if s.Port == 0 {
			if port := findPort(s.logPath, offset); port > 0 {
				addr, err := s.expose(port)
				if err != nil {
					return err
				}
				s.Port = port
				s.URL = "http://" + addr
				s.Client = NewClient(s.URL, password)
			} else {
				last = errors.New("no listening line in the log yet")
			}
		}
		if s.Client != nil {
			actx, acancel := context.WithTimeout(ctx, readyMaxAttempt)
			h, err := s.Client.Health(actx)
			acancel()
			if err == nil && h.Healthy {
				return nil
			}
			if err == nil {
				err = errors.New("server says it is not healthy")
			}
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready after %v: %w", total, last)
		case <-s.svc.Done():
			return fmt.Errorf("opencode exited before it was ready: %v", s.svc.Err())
		case <-time.After(delay):
		}
		delay = min(time.Duration(float64(delay)*readyFactor), readyMaxAttempt)
	}
}

func findPort(logPath string, offset int64) int {
	f, err := os.Open(logPath)
	if err != nil {
		return 0
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return 0
	}
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return 0
	}
	m := listening.FindSubmatch(b)
	if m == nil {
		return 0
	}
	port, _ := strconv.Atoi(string(m[1]))
	return port
}

// Secrets are the values a recorder must never write: the server password
// and the values of the API-key variables the config references. The
// agent's tools (bash, the MCP server) inherit OpenCode's environment, so
// a command like `env` prints them: redact these from anything recorded.
func (s *Server) Secrets() []string { return append([]string(nil), s.secrets...) }

func secretValues(password string, opts ServerOptions) []string {
	out := []string{password}
	keys := map[string]bool{}
	for _, p := range opts.Config.Providers {
		if p.APIKeyEnv != "" {
			keys[p.APIKeyEnv] = true
		}
	}
	for _, kv := range append(os.Environ(), opts.Env...) {
		if k, v, _ := strings.Cut(kv, "="); keys[k] && v != "" {
			out = append(out, v)
		}
	}
	return out
}

// Stop stops the server's process group and removes the password file.
func (s *Server) Stop() error {
	err := s.svc.Stop()
	if s.exposed != nil {
		s.exposed.Close()
	}
	if rerr := os.Remove(s.pwFile); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
		err = rerr
	}
	return err
}

// Done is closed when the server process has exited (e.g. it died).
func (s *Server) Done() <-chan struct{} { return s.svc.Done() }

// Err is the server's exit error once Done is closed.
func (s *Server) Err() error { return s.svc.Err() }

// PID is the server's process (group) id.
func (s *Server) PID() int { return s.svc.PID() }

// LogPath is the server's stdout+stderr log.
func (s *Server) LogPath() string { return s.logPath }

// AttachCommand is a shell command that opens OpenCode's terminal UI on
// the live session. It holds no secret: the password is read from the
// 0600 password file when the command runs.
func (s *Server) AttachCommand(sessionID string) string {
	cmd := "OPENCODE_SERVER_PASSWORD=\"$(cat " + trace.ShellWord(s.pwFile) + ")\" " +
		trace.ShellWord(s.binary) + " attach " + s.URL
	if sessionID != "" {
		cmd += " --session " + trace.ShellWord(sessionID)
	}
	return cmd
}

func newPassword() (string, error) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("server password: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// writeSecret writes a 0600 file (never readable by others, even for an
// instant).
func writeSecret(path, secret string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.WriteString(secret); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

func fileSize(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// tail is the last n bytes of a file, from a line start.
func tail(p string, n int64) string {
	f, err := os.Open(p)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	defer f.Close()
	size := fileSize(p)
	off := max(size-n, 0)
	b := make([]byte, size-off)
	if _, err := f.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
		return "(log unreadable: " + err.Error() + ")"
	}
	s := string(b)
	if off > 0 {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
	}
	return s
}

func redact(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "[redacted]")
}
