package cliturn

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"github.com/trajlab/traj/sandbox/xec"
)

// Binary says where a harness's executable may be.
type Binary struct {
	// What names the harness in errors ("Claude Code").
	What string
	// Flag names the command-line flag that sets it, for errors.
	Flag string
	// Env is the variable naming it (TRAJ_CLAUDE_BIN).
	Env string
	// Install is the executable's path in the repository after `make
	// setup`, slash-separated.
	Install string
	// Command is its name on PATH.
	Command string
}

// Locate finds the executable: explicit (a flag's value), then $Env, then
// Install found by walking up from the traj executable and from the
// working folder, then Command on PATH. An explicit value or variable that
// does not name an executable is an error, not a reason to look further.
func (b Binary) Locate(explicit string) (string, error) {
	if explicit != "" {
		return b.check(explicit, b.Flag)
	}
	if v := os.Getenv(b.Env); v != "" {
		return b.check(v, b.Env)
	}
	var starts []string
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		starts = append(starts, filepath.Dir(exe))
	}
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	for _, dir := range starts {
		for {
			if p, err := b.check(filepath.Join(dir, filepath.FromSlash(b.Install)), ""); err == nil {
				return p, nil
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	if p, err := exec.LookPath(b.Command); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%s not found (run `make setup` to install the pinned version, set %s, or pass %s)", b.What, b.Env, b.Flag)
}

func (b Binary) check(p, from string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("%s binary %s (from %s): %w", b.What, p, from, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("%s binary %s (from %s): %w; run `make setup`", b.What, p, from, err)
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("%s binary %s (from %s): not an executable file", b.What, p, from)
	}
	return abs, nil
}

// Version runs the binary with args (e.g. --version, through sandbox/xec:
// its own process group, killed after a minute) and returns the first
// word of its output that starts with a digit ("2.1.330 (Claude Code)" →
// "2.1.330", "codex-cli 0.169.0" → "0.169.0").
func Version(ctx context.Context, path string, args ...string) (string, error) {
	res, err := xec.Run(ctx, xec.Command{Path: path, Args: args, Timeout: time.Minute, OutputLimit: 64 << 10})
	switch {
	case err != nil:
		return "", fmt.Errorf("%s %v: %w", path, args, err)
	case res.TimedOut:
		return "", fmt.Errorf("%s %v: no answer in a minute", path, args)
	case res.ExitCode != 0:
		return "", fmt.Errorf("%s %v: exit status %d: %s", path, args, res.ExitCode, strings.TrimSpace(res.Stderr))
	}
	out := res.Stdout
	for _, f := range strings.FieldsFunc(string(out), func(r rune) bool { return unicode.IsSpace(r) || r == '(' || r == ')' }) {
		if f[0] >= '0' && f[0] <= '9' {
			return f, nil
		}
	}
	return "", fmt.Errorf("%s %v: no version in %q", path, args, out)
}

// Env returns base without the variables named in drop (and without any
// starting with one of the prefixes), then extra appended.
func Env(base []string, drop []string, prefixes []string, extra ...string) []string {
	var out []string
next:
	for _, kv := range base {
		name := kv
		for i := 0; i < len(kv); i++ {
			if kv[i] == '=' {
				name = kv[:i]
				break
			}
		}
		for _, d := range drop {
			if name == d {
				continue next
			}
		}
		for _, p := range prefixes {
			if len(name) >= len(p) && name[:len(p)] == p {
				continue next
			}
		}
		out = append(out, kv)
	}
	return append(out, extra...)
}

// Lookup is the value of name in env ("" when absent).
func Lookup(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if len(kv) > len(name) && kv[len(name)] == '=' && kv[:len(name)] == name {
			v = kv[len(name)+1:]
		}
	}
	return v
}
