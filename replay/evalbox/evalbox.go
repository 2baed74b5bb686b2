// Package evalbox evaluates untrusted trees inside a sandbox provider:
// the tree's build.sh and its compiler run in a sandbox with no network,
// the tree as its only writable folder, the fixtures read-only, and the
// provider's limits, never as the invoking user on the host.
//
// Each evaluation is one sandbox running `traj env evaluate` (hidden) on
// the tree: it builds once, runs every test path, and writes the result
// to a folder of its own. The result is authenticated: the host writes a
// fresh random key into that folder, the evaluator reads and deletes it
// before the build starts, and signs its result with HMAC-SHA-256; the
// host accepts only a result with a valid signature. A process of the
// tree that writes a fake result file therefore cannot sign it (the key
// is gone before any of its code runs). Left open: a process of the tree
// reading the evaluator's memory (same user inside the sandbox).
package evalbox

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/trajlab/traj/environment"
	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/sandbox"
)

// Files in the evaluator's own folder.
const (
	KeyFile    = "key"
	ResultFile = "result.json"
)

// Payload is what the evaluator reports: the result (what the cache
// stores) and, when asked for detail, the environment's own result of
// each path (every case's expected and actual output: what run_tests
// answers the agent).
type Payload struct {
	Result replay.Result        `json:"result"`
	Runs   []environment.Result `json:"runs,omitempty"`
}

// Signed is what the evaluator writes: the payload and its HMAC.
type Signed struct {
	Payload
	MAC string `json:"mac"`
}

// Sign returns the hex HMAC-SHA-256 of p's JSON under key.
func Sign(key []byte, p Payload) (string, error) {
	data, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("encode result: %w", err)
	}
	m := hmac.New(sha256.New, key)
	m.Write(data)
	return hex.EncodeToString(m.Sum(nil)), nil
}

// Evaluator is a replay.Evaluator that runs each tree in a sandbox.
type Evaluator struct {
	// Provider is the sandbox provider ("bwrap", "container", "local";
	// the best available when empty).
	Provider string
	// TrajBin is traj's executable, run inside the sandbox.
	TrajBin string
	// TestsDir is the fixtures root, shown read-only ("" for the embedded
	// suites only).
	TestsDir string
	// EnvVersion is the environment's version (the cache key's), from
	// the same environment on the host.
	EnvVersion string
	// Limits bound each evaluation sandbox.
	Limits sandbox.Limits
	// CaseWorkers is passed to the evaluator inside (0: its default).
	CaseWorkers int
	// TempDir holds the per-evaluation folders; os.TempDir when empty.
	TempDir string
	// Nice lowers the evaluation's CPU priority (0..19; children inherit
	// it): background ground truth yields to the agent and the recorder.
	Nice int
	// DenyCCompiler hides gcc's C front ends (cc1, cc1plus) in the
	// sandbox: gcc still assembles and links, but a compiler under test
	// that hands C to a C compiler fails every case (the C-compiler
	// task's rule). bwrap only: it shows the host's /usr, whose front
	// ends are found and covered.
	DenyCCompiler bool
}

// DenyCCompilerVersion marks an environment version whose evaluations
// hide the C front ends: results differ, so the cache key must too, and
// a trace recording it tells replay evaluate to do the same.
const DenyCCompilerVersion = "+deny-c-compiler"

// frontEnds lists gcc's C and C++ front ends on this machine.
func frontEnds() []string {
	var out []string
	for _, pat := range []string{"/usr/lib/gcc/*/*/cc1", "/usr/lib/gcc/*/*/cc1plus", "/usr/libexec/gcc/*/*/cc1", "/usr/libexec/gcc/*/*/cc1plus"} {
		m, _ := filepath.Glob(pat)
		out = append(out, m...)
	}
	return out
}

// Version implements replay.Evaluator.
func (e *Evaluator) Version() string { return e.EnvVersion }

// Evaluate implements replay.Evaluator: dir (an exported tree) is built
// and tested inside a fresh sandbox.
func (e *Evaluator) Evaluate(ctx context.Context, dir string, paths []string) (replay.Result, error) {
	p, err := e.run(ctx, dir, paths, false)
	return p.Result, err
}

// EvaluateDetailed is Evaluate with the environment's own result of each
// path (Payload.Runs, in the order of paths).
func (e *Evaluator) EvaluateDetailed(ctx context.Context, dir string, paths []string) (Payload, error) {
	return e.run(ctx, dir, paths, true)
}

func (e *Evaluator) run(ctx context.Context, dir string, paths []string, detail bool) (Payload, error) {
	tmp, err := os.MkdirTemp(e.TempDir, "traj-evalbox-")
	if err != nil {
		return Payload{}, fmt.Errorf("evaluation sandbox folder: %w", err)
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, "out")
	if err := os.Mkdir(out, 0o700); err != nil {
		return Payload{}, fmt.Errorf("evaluation sandbox folder: %w", err)
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return Payload{}, fmt.Errorf("evaluation key: %w", err)
	}
	if err := os.WriteFile(filepath.Join(out, KeyFile), key, 0o600); err != nil {
		return Payload{}, fmt.Errorf("evaluation key: %w", err)
	}
	bin, err := filepath.Abs(e.TrajBin)
	if err != nil {
		return Payload{}, fmt.Errorf("traj binary: %w", err)
	}
	mounts := []sandbox.Mount{
		{Host: bin, Inside: "/opt/traj/eval/traj"},
		{Host: out, Inside: "/opt/traj/eval/out", Writable: true},
	}
	testsHost := ""
	if e.TestsDir != "" {
		abs, err := filepath.Abs(e.TestsDir)
		if err != nil {
			return Payload{}, fmt.Errorf("tests dir: %w", err)
		}
		testsHost = abs
		mounts = append(mounts, sandbox.Mount{Host: abs, Inside: "/opt/traj/eval/tests"})
	}
	if e.DenyCCompiler {
		if e.Provider != sandbox.ProviderBwrap {
			return Payload{}, fmt.Errorf("evaluation sandbox: hiding the C compiler needs the bwrap provider (asked: %q)", e.Provider)
		}
		fe := frontEnds()
		if len(fe) == 0 {
			return Payload{}, errors.New("evaluation sandbox: hiding the C compiler: no gcc front end (cc1) found under /usr/lib/gcc")
		}
		for _, p := range fe {
			mounts = append(mounts, sandbox.Mount{Host: os.DevNull, Inside: p})
		}
	}
	sb, err := sandbox.New(ctx, e.Provider, sandbox.Options{
		TrajectoryDir: filepath.Join(tmp, "sandbox"),
		Workspace:     dir,
		Mounts:        mounts,
		Limits:        e.Limits,
		Network:       sandbox.NetworkNone,
		Helper:        bin,
	})
	if err != nil {
		return Payload{}, fmt.Errorf("evaluation sandbox: %w", err)
	}
	defer sb.Stop(context.WithoutCancel(ctx))
	inside := func(p string) string {
		in, ok := sb.Path(p)
		if !ok {
			return p
		}
		return in
	}
	args := []string{"env", "evaluate", "--workspace", inside(dir), "--out", inside(out)}
	if e.TestsDir != "" {
		args = append(args, "--tests-dir", inside(testsHost))
	}
	if detail {
		args = append(args, "--detail")
	}
	if e.Nice > 0 {
		args = append(args, "--nice", fmt.Sprint(e.Nice))
	}
	if e.CaseWorkers > 0 {
		args = append(args, "--workers", fmt.Sprint(e.CaseWorkers))
	}
	args = append(args, paths...)
	svc, err := sb.StartService(ctx, sandbox.ServiceSpec{Name: "evaluate", Path: inside(bin), Args: args, Dir: inside(dir)})
	if err != nil {
		return Payload{}, fmt.Errorf("start evaluation: %w", err)
	}
	select {
	case <-svc.Done():
	case <-ctx.Done():
		return Payload{}, ctx.Err()
	}
	// Every process of the tree is gone before the result is read.
	if err := sb.Stop(context.WithoutCancel(ctx)); err != nil {
		return Payload{}, fmt.Errorf("stop evaluation sandbox: %w", err)
	}
	if err := svc.Err(); err != nil {
		tail, _ := os.ReadFile(sb.LogPath("evaluate"))
		if len(tail) > 2000 {
			tail = tail[len(tail)-2000:]
		}
		return Payload{}, fmt.Errorf("evaluation in the sandbox: %w: %s", err, tail)
	}
	return ReadSigned(filepath.Join(out, ResultFile), key)
}

// ReadSigned reads the evaluator's result and checks its signature.
func ReadSigned(path string, key []byte) (Payload, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return Payload{}, fmt.Errorf("read evaluation result: %w", err)
	}
	defer f.Close()
	var s Signed
	if err := json.NewDecoder(f).Decode(&s); err != nil {
		return Payload{}, fmt.Errorf("read evaluation result: %w", err)
	}
	want, err := Sign(key, s.Payload)
	if err != nil {
		return Payload{}, err
	}
	if !hmac.Equal([]byte(want), []byte(s.MAC)) {
		return Payload{}, errors.New("evaluation result is not signed by the evaluator: refused (something in the tree wrote it)")
	}
	return s.Payload, nil
}
