package ccompiler

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/trajlab/traj/environment"
	"github.com/trajlab/traj/environment/ccompiler/fresh"
	"github.com/trajlab/traj/environment/host"
	"github.com/trajlab/traj/sandbox/xec"
)

// RunnerVersion names the runner's semantics (pass rules, skip rules, how
// cases are compiled and compared). Bump it whenever any of them changes so
// cached evaluations are not reused across different meanings.
const RunnerVersion = "ccompiler-runner/4"

// Name is the environment's name in a task (`environment`), a trace
// (`environment.name`) and the registry (environment/evaluation).
const Name = "c-compiler"

// Defaults for RunOptions' zero values.
const (
	DefaultBuildTimeout   = 300 * time.Second
	DefaultCompileTimeout = 10 * time.Second
	DefaultRunTimeout     = 5 * time.Second
	DefaultOutputLimit    = 64 << 10
	stderrTailBytes       = 2 << 10
	// reportBytes caps expected/actual stdout as reported in a CaseResult;
	// comparisons use the full captured output.
	reportBytes = 4 << 10
)

//go:embed basics
var basicsFS embed.FS

// Config selects the fixtures root for the public suites.
type Config struct {
	// TestsDir holds c-testsuite/, wacct/ and torture/ (see doc.go). Empty
	// means only basics is available.
	TestsDir string
}

// Env is the C-compiler environment. It is immutable after New and safe for
// concurrent use on different workspaces.
type Env struct {
	suites  map[string]suite
	order   []string // suite names in path order
	paths   []string
	version string
}

var _ environment.Environment = (*Env)(nil)

// New loads the basics suite and every public suite present under
// cfg.TestsDir. A missing public suite is not an error here: its paths are
// not listed, and running them reports which folder is missing and where
// the suite comes from.
func New(cfg Config) (*Env, error) {
	root := cfg.TestsDir
	if root != "" {
		abs, err := filepath.Abs(root)
		if err != nil {
			return nil, fmt.Errorf("resolve tests dir %q: %w", root, err)
		}
		if !isDir(abs) {
			return nil, fmt.Errorf("tests dir %s: not a folder", abs)
		}
		root = abs
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s shard=%d\n", RunnerVersion, ShardSize)
	basics, err := loadBasics(basicsFS, h)
	if err != nil {
		return nil, err
	}
	// The fixture suites load at once (a read and a hash a file: ~40 µs
	// each, thousands of files with the full suites); each one's share of
	// the digest's input is fed in the order it always was, so the
	// version is the same.
	var ctest, tort, std, wacct suite
	var in [3]bytes.Buffer
	var wg sync.WaitGroup
	wg.Go(func() { ctest = loadCTestsuite(root, &in[0]) })
	wg.Go(func() { tort, std = loadTorture(root, &in[1]) })
	wg.Go(func() { wacct = loadWacct(root, &in[2]) })
	wg.Wait()
	for i := range in {
		h.Write(in[i].Bytes())
	}
	// The fresh suite's programs depend on its generator's version.
	fmt.Fprintf(h, "%s\n", fresh.Version)
	e := &Env{suites: map[string]suite{SuiteBasics: basics, SuiteCTestsuite: ctest, SuiteTorture: tort, SuiteTortureStd: std, SuiteWacct: wacct, SuiteFresh: freshSuite()}}
	e.order = []string{SuiteBasics, SuiteCTestsuite, SuiteTorture, SuiteTortureStd, SuiteWacct, SuiteFresh}
	e.version = "sha256:" + hex.EncodeToString(h.Sum(nil))
	e.paths = e.listPaths()
	return e, nil
}

// Version is a digest of RunnerVersion, ShardSize and the content of every
// suite file in use (embedded basics and the fixtures present).
func (e *Env) Version() string { return e.version }

// TestPaths lists "all", then each present suite followed by its
// selectors: basics/<category> sorted, c_testsuite/part_<n> and
// torture/part_<n> in numeric order, wacct/chapter_<n> in numeric order.
func (e *Env) TestPaths() []string { return append([]string(nil), e.paths...) }

func (e *Env) listPaths() []string {
	paths := []string{PathAll}
	for _, name := range e.order {
		s := e.suites[name]
		if s.missing != nil {
			continue
		}
		paths = append(paths, name)
		switch name {
		case SuiteBasics, SuiteFresh:
			seen := map[string]bool{}
			var cats []string
			for _, c := range s.cases {
				if !seen[c.group] {
					seen[c.group] = true
					cats = append(cats, c.group)
				}
			}
			sort.Strings(cats)
			for _, c := range cats {
				paths = append(paths, name+"/"+c)
			}
		case SuiteWacct:
			seen := map[int]bool{}
			var chs []int
			for _, c := range s.cases {
				if n := chapterOf(c.group); !seen[n] {
					seen[n] = true
					chs = append(chs, n)
				}
			}
			sort.Ints(chs)
			for _, n := range chs {
				paths = append(paths, name+"/chapter_"+strconv.Itoa(n))
			}
		default:
			for i := 1; (i-1)*ShardSize < len(s.cases); i++ {
				paths = append(paths, name+"/part_"+strconv.Itoa(i))
			}
		}
	}
	return paths
}

// cases resolves a test path to its cases, sorted by name.
func (e *Env) cases(testPath string) ([]testCase, error) {
	p, err := ParseTestPath(testPath)
	if err != nil {
		return nil, err
	}
	if p.Suite == PathAll {
		var all []testCase
		for _, name := range e.order {
			if name == SuiteTortureStd {
				continue // a subset of torture
			}
			all = append(all, e.suites[name].cases...)
		}
		sortCases(all)
		return all, nil
	}
	s := e.suites[p.Suite]
	if s.missing != nil {
		return nil, s.missing
	}
	if p.Selector == "" {
		return s.cases, nil
	}
	if p.Sample {
		return sampleCases(s.cases, p.N, p.Seed), nil
	}
	var out []testCase
	switch p.Suite {
	case SuiteBasics, SuiteWacct, SuiteFresh:
		for _, c := range s.cases {
			if c.group == p.Selector {
				out = append(out, c)
			}
		}
	default:
		lo := (p.N - 1) * ShardSize
		if lo < len(s.cases) {
			out = s.cases[lo:min(lo+ShardSize, len(s.cases))]
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %q", environment.ErrUnknownPath, testPath)
	}
	return out, nil
}

// Build runs `bash build.sh` in the workspace with the default timeout,
// through x (nil: on the host).
func (e *Env) Build(ctx context.Context, workspace string, x environment.Executor) environment.BuildResult {
	return build(ctx, executor(x), workspace, DefaultBuildTimeout)
}

func executor(x environment.Executor) environment.Executor {
	if x == nil {
		return host.Executor{}
	}
	return x
}

func build(ctx context.Context, x environment.Executor, workspace string, timeout time.Duration) environment.BuildResult {
	r := environment.BuildResult{Phase: environment.PhaseBuild, ExitCode: -1}
	// The tree is untrusted and traj may run as root: every name in it is
	// looked up through an os.Root, so a link never reaches a host file,
	// and a link that leaves the tree gets the same answer whether its
	// target exists on the host or not.
	root, err := os.OpenRoot(workspace)
	if err != nil {
		r.Error = fmt.Sprintf("open the workspace: %v", err)
		return r
	}
	defer root.Close()
	if st, err := root.Stat("build.sh"); err != nil || st.IsDir() {
		r.Error = "build.sh not found in the workspace"
		return r
	}
	// ./cc must be what this build.sh made: a stale one (or one the agent
	// placed by hand) would pass live while replay, whose checkpoints never
	// record ./cc, could not rebuild it.
	if err := root.Remove("cc"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		r.Error = fmt.Sprintf("remove the previous ./cc: %v", err)
		return r
	}
	// stdout and stderr together: many build tools report errors on stdout.
	p, err := x.Build(ctx, workspace, environment.Limits{Timeout: timeout, OutputLimit: DefaultOutputLimit, CombineOutput: true})
	r.DurationMS = p.Elapsed.Milliseconds()
	r.ExitCode = p.ExitCode
	r.StderrTail = tail(p.Stdout, stderrTailBytes)
	switch {
	case err != nil:
		r.Error = err.Error()
	case p.TimedOut:
		r.Error = fmt.Sprintf("build.sh timed out after %s", timeout)
	case ctx.Err() != nil:
		r.Error = "build interrupted: " + ctx.Err().Error()
	case p.ExitCode != 0:
		r.Error = fmt.Sprintf("build.sh exited with %d", p.ExitCode)
	default:
		_, lerr := root.Lstat("cc")
		st, err := root.Stat("cc")
		switch {
		case lerr != nil:
			r.Error = "build.sh succeeded but ./cc does not exist"
		case err != nil:
			r.Error = "./cc is a link to nothing inside the tree"
		case st.IsDir() || st.Mode()&0o111 == 0:
			r.Error = "./cc is not an executable file"
		default:
			r.OK = true
		}
	}
	return r
}

// Run builds the workspace and runs every case of testPath.
func (e *Env) Run(ctx context.Context, workspace, testPath string, opts environment.RunOptions) (environment.Result, error) {
	start := time.Now()
	cases, err := e.cases(testPath)
	if err != nil {
		return environment.Result{}, err
	}
	o := withDefaults(opts)
	ws, err := filepath.Abs(workspace)
	if err != nil {
		return environment.Result{}, fmt.Errorf("resolve workspace %q: %w", workspace, err)
	}
	if !isDir(ws) {
		return environment.Result{}, fmt.Errorf("workspace %s: not a folder", ws)
	}
	res := environment.Result{Path: testPath, Total: len(cases), Cases: make([]environment.CaseResult, len(cases))}
	if opts.Prebuilt != nil {
		res.Build = *opts.Prebuilt
	} else {
		res.Build = build(ctx, executor(o.Executor), ws, o.BuildTimeout)
	}
	if err := ctx.Err(); err != nil {
		return environment.Result{}, fmt.Errorf("run %s: %w", testPath, err)
	}
	if !res.Build.OK {
		for i, c := range cases {
			res.Cases[i] = environment.CaseResult{
				Name: c.name, Phase: environment.PhaseBuild, ExpectReject: c.expectReject,
				ExpectedStdout: reported(c.stdout), ExpectedExitCode: c.exitCode, ActualExitCode: -1,
				Error: "build failed: " + res.Build.Error,
			}
			if o.Progress != nil {
				o.Progress(i+1, len(cases))
			}
		}
		res.Failed = len(cases)
		res.DurationMS = time.Since(start).Milliseconds()
		return res, nil
	}
	if cases, err = fillFresh(ctx, cases, ws, o); err != nil {
		return environment.Result{}, fmt.Errorf("run %s: %w", testPath, err)
	}
	res.Total, res.Cases = len(cases), make([]environment.CaseResult, len(cases))
	tmp, err := os.MkdirTemp(o.TempDir, "traj-cc-*")
	if err != nil {
		return environment.Result{}, fmt.Errorf("make run folder: %w", err)
	}
	defer os.RemoveAll(tmp)
	secret, err := runSecret(o.Secret)
	if err != nil {
		return environment.Result{}, err
	}
	// Every runnable case runs rewritten with its nonce, and the wacct
	// invalid programs' neighbours run too (hidden when the path lacks
	// them): guard.go.
	all, neighbour := e.withEvidence(cases)
	for i := range all {
		if all[i], err = e.guardOf(all[i], secret); err != nil {
			return environment.Result{}, err
		}
	}
	results := make([]environment.CaseResult, len(all))

	var (
		mu   sync.Mutex
		done int
		wg   sync.WaitGroup
		next = make(chan int)
	)
	for range o.Workers {
		wg.Go(func() {
			for i := range next {
				results[i] = e.runCase(ctx, o.Executor, ws, filepath.Join(tmp, "c"+strconv.Itoa(i)), all[i], o)
				if i >= len(cases) {
					continue
				}
				mu.Lock()
				done++
				if o.Progress != nil {
					o.Progress(done, len(cases))
				}
				mu.Unlock()
			}
		})
	}
feed:
	for i := range all {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return environment.Result{}, fmt.Errorf("run %s: %w", testPath, err)
	}
	judge(all, results, neighbour, len(cases))
	copy(res.Cases, results[:len(cases)])
	for _, c := range res.Cases {
		if c.Passed {
			res.Passed++
		} else {
			res.Failed++
		}
		if c.FixedLike {
			res.FixedLike++
		}
	}
	res.DurationMS = time.Since(start).Milliseconds()
	return res, nil
}

func withDefaults(o environment.RunOptions) environment.RunOptions {
	if o.Workers <= 0 {
		o.Workers = runtime.NumCPU()
	}
	if o.BuildTimeout <= 0 {
		o.BuildTimeout = DefaultBuildTimeout
	}
	if o.CompileTimeout <= 0 {
		o.CompileTimeout = DefaultCompileTimeout
	}
	if o.RunTimeout <= 0 {
		o.RunTimeout = DefaultRunTimeout
	}
	if o.OutputLimit <= 0 {
		o.OutputLimit = DefaultOutputLimit
	}
	return o
}

// runCase compiles and runs one case in its own folder, through x.
func (e *Env) runCase(ctx context.Context, x environment.Executor, ws, dir string, tc testCase, o environment.RunOptions) environment.CaseResult {
	r := environment.CaseResult{
		Name: tc.name, Phase: environment.PhaseCompile, ExpectReject: tc.expectReject,
		ExpectedStdout: reported(tc.stdout), ExpectedExitCode: tc.exitCode, ActualExitCode: -1,
	}
	if tc.nonce != 0 {
		// Told in the original case's terms: no answer shows the nonce.
		r.ExpectedExitCode = intp(tc.origExit)
	}
	defer os.RemoveAll(dir)
	srcs, err := e.stage(dir, tc)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	out := filepath.Join(dir, "prog")
	args := append(srcs, "-o", out)
	comp, err := executor(x).Compile(ctx, ws, dir, args, environment.Limits{Timeout: o.CompileTimeout, OutputLimit: o.OutputLimit})
	r.CompileMS = comp.Elapsed.Milliseconds()
	r.StderrTail = tail(comp.Stderr, stderrTailBytes)
	if stopped(&r, comp, err, "compile", o.CompileTimeout) {
		return r
	}
	if tc.expectReject {
		r.ActualExitCode = comp.ExitCode
		leftovers := outputsLeft(dir, out)
		switch {
		case comp.ExitCode == 0:
			r.Error = "the compiler accepted an invalid program (exit 0)"
		case len(leftovers) > 0:
			r.Error = "the compiler rejected the program but left output: " + strings.Join(leftovers, ", ")
		default:
			r.Passed = true
		}
		return r
	}
	if comp.ExitCode != 0 {
		r.Error = fmt.Sprintf("compile exited with %d", comp.ExitCode)
		return r
	}
	// Lstat: what the compile left is untrusted, and a symlink would make
	// the run show a file of the host's choosing to the compiler's.
	if st, err := os.Lstat(out); err != nil || !st.Mode().IsRegular() {
		r.Error = "compile exited 0 but wrote no output file"
		return r
	}

	r.Phase = environment.PhaseRun
	run, err := executor(x).Run(ctx, out, environment.Limits{Timeout: o.RunTimeout, OutputLimit: o.OutputLimit, CombineOutput: tc.combineStderr})
	r.RunMS = run.Elapsed.Milliseconds()
	r.ActualExitCode = run.ExitCode
	if tc.nonce != 0 && run.Signal == 0 && run.ExitCode >= 0 {
		r.ActualExitCode = (run.ExitCode - tc.nonce + 256) % 256
	}
	r.ActualStdout = clip(run.Stdout, reportBytes)
	r.StderrTail = tail(run.Stderr, stderrTailBytes)
	if stopped(&r, run, err, "run", o.RunTimeout) {
		return r
	}
	if run.Signal != 0 && (tc.exitCode == nil || *tc.exitCode != run.ExitCode) {
		r.Error = "killed by signal " + run.Signal.String()
		return r
	}

	r.Phase = environment.PhaseCompare
	var problems []string
	if tc.exitCode != nil && run.ExitCode != *tc.exitCode {
		problems = append(problems, fmt.Sprintf("exit code %d, want %d", r.ActualExitCode, *r.ExpectedExitCode))
	}
	if tc.stdout != nil && run.Stdout != *tc.stdout {
		if tc.combineStderr {
			problems = append(problems, "stdout+stderr differ from the expected output")
		} else {
			problems = append(problems, "stdout differs from the expected output")
		}
	}
	if tc.expectEmptyStderr && run.Stderr != "" {
		problems = append(problems, "stderr is not empty")
	}
	if len(problems) > 0 {
		// The program did what the case without its nonce wants: what a
		// program that ignores its input would do (exit 0, no output,
		// where the nonce wants another code).
		r.FixedLike = tc.nonce != 0 && len(problems) == 1 && run.ExitCode == tc.origExit
		r.Error = strings.Join(problems, "; ")
		return r
	}
	r.Passed = true
	return r
}

// stopped records in r a process (what: "compile" or "run") that could
// not start or ran past its timeout, and reports whether it did.
func stopped(r *environment.CaseResult, p xec.Result, startErr error, what string, timeout time.Duration) bool {
	switch {
	case startErr != nil:
		r.Error = startErr.Error()
	case p.TimedOut:
		r.Phase = environment.PhaseTimeout
		r.Error = fmt.Sprintf("%s timed out after %s", what, timeout)
	default:
		return false
	}
	return true
}

// reported returns the expected stdout as a CaseResult shows it.
func reported(s *string) *string {
	if s == nil || len(*s) <= reportBytes {
		return s
	}
	return strp(clip(*s, reportBytes))
}

// stage copies a case's sources into its private folder (so a compiler that
// writes next to its input never touches the fixtures) and returns their
// absolute paths in order.
func (e *Env) stage(dir string, tc testCase) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("make case folder: %w", err)
	}
	var out []string
	used := map[string]bool{}
	for i, src := range tc.sources {
		data, err := e.source(tc, i)
		if err != nil {
			return nil, err
		}
		name := path.Base(filepath.ToSlash(src))
		if used[name] || name == "prog" {
			name = strconv.Itoa(i) + "_" + name
		}
		used[name] = true
		dst := filepath.Join(dir, name)
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return nil, fmt.Errorf("stage source %s: %w", name, err)
		}
		out = append(out, dst)
	}
	for i, src := range tc.support {
		name := filepath.Base(src)
		if used[name] {
			return nil, fmt.Errorf("stage %s: name taken by a source", name)
		}
		used[name] = true
		var data []byte
		var err error
		if tc.supportGen != nil {
			data = tc.supportGen[i]
		} else if data, err = os.ReadFile(src); err != nil {
			return nil, fmt.Errorf("read %s: %w", src, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return nil, fmt.Errorf("stage %s: %w", name, err)
		}
	}
	return out, nil
}

// outputsLeft lists the executable and any assembly or object files a
// rejecting compiler left behind.
func outputsLeft(dir, out string) []string {
	var left []string
	// Lstat: a link the compile left counts as output, wherever it points
	// (following it would test a host path).
	if _, err := os.Lstat(out); err == nil {
		left = append(left, filepath.Base(out))
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return left
	}
	for _, en := range entries {
		if n := en.Name(); strings.HasSuffix(n, ".s") || strings.HasSuffix(n, ".o") {
			left = append(left, n)
		}
	}
	return left
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// clip returns the first n bytes of s, marked when cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…[truncated]"
}
