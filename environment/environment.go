package environment

import (
	"context"
	"errors"
	"time"
)

// Environment builds a workspace and runs test paths against it.
// Implementations are safe for concurrent use on different workspaces;
// callers serialise calls on one workspace (see LockWorkspace).
type Environment interface {
	// Build runs the workspace's build (for the C compiler, `bash build.sh`
	// producing ./cc). A failed or missing build is reported in the result,
	// never as a panic or an error.
	// x runs it (nil: Host, for trusted trees).
	Build(ctx context.Context, workspace string, x Executor) BuildResult
	// TestPaths lists every valid test path given the suites present,
	// in a stable, documented order.
	TestPaths() []string
	// Run builds the workspace (unless opts.Prebuilt is given) and runs
	// every case of testPath. A failed build is a Result
	// whose Build.OK is false and whose cases all failed at phase "build".
	// Errors are for an unknown path (ErrUnknownPath), a suite whose
	// fixtures are missing (ErrSuiteMissing) or internal faults.
	Run(ctx context.Context, workspace, testPath string, opts RunOptions) (Result, error)
	// Version is a digest that changes whenever the suites' content or the
	// runner's semantics change; replay keys its cache on it.
	Version() string
}

// Sampler is an Environment that names a fixed, seeded sample of a test
// path's cases as a test path of its own, so a sampled evaluation is
// cached apart from the full one and picks the same cases for every tree
// (*ccompiler.Env; the rule is in its sample.go).
type Sampler interface {
	// SamplePath returns the test path running size of path's cases
	// chosen by seed, and false when path is not sampled (its suite has
	// no more than size cases, or path is not a whole suite).
	SamplePath(path string, size int, seed int64) (string, bool)
}

// Sentinel errors callers map to user-facing codes (400 in run_tests).
var (
	// ErrUnknownPath: the test path is not one of TestPaths (or escapes).
	ErrUnknownPath = errors.New("unknown test path")
	// ErrSuiteMissing: the path names a known suite whose fixtures are absent.
	ErrSuiteMissing = errors.New("test suite not installed")
)

// IsUsageError reports whether err is the caller's fault (an unknown path
// or a suite not installed) rather than an internal fault.
func IsUsageError(err error) bool {
	return errors.Is(err, ErrUnknownPath) || errors.Is(err, ErrSuiteMissing)
}

// Phases a case can stop at. A passing case carries the last phase checked.
const (
	PhaseBuild   = "build"
	PhaseCompile = "compile"
	PhaseRun     = "run"
	PhaseCompare = "compare"
	PhaseTimeout = "timeout"
)

// RunOptions tunes one Run. Zero values mean the documented defaults.
type RunOptions struct {
	// Workers bounds the cases run at once (default runtime.NumCPU()).
	Workers int
	// BuildTimeout bounds build.sh (default 300 s).
	BuildTimeout time.Duration
	// CompileTimeout bounds one ./cc invocation (default 10 s).
	CompileTimeout time.Duration
	// RunTimeout bounds one compiled program (default 5 s).
	RunTimeout time.Duration
	// OutputLimit caps captured stdout/stderr per process (default 64 KiB).
	OutputLimit int
	// Prebuilt, when set, is the result of Build on this same workspace
	// and Run does not build again (e.g. replay running several paths on
	// one tree). A failed Prebuilt gives the build-failure Result at once.
	Prebuilt *BuildResult
	// Progress, when set, is called after each case with cases done and
	// the total. Calls are serialised.
	Progress func(done, total int)
	// Executor runs the build, each compile and each program (nil: Host,
	// for trusted trees; replay/evalbox's for untrusted ones).
	Executor Executor
	// Secret is the store's evaluation secret, from which the cases'
	// nonces derive (environment/ccompiler's guard.go): the same secret
	// gives one artifact one score, case by case. It never enters a
	// sandbox. Empty: a fresh one for this Run alone (a trusted tree
	// tested once, nothing to reproduce).
	Secret []byte
	// Digest names what is evaluated: the digest of the build's
	// artifacts (replay/evalbox) when known. The fresh programs are
	// generated from HMAC(Secret, Digest); empty: the environment digests
	// the built compiler itself (the C environment: ./cc).
	Digest string
	// TempDir holds the cases' folders (os.TempDir when empty): an
	// evaluation's capped scratch space (replay/evalbox).
	TempDir string
}

// BuildResult is the outcome of the workspace build.
type BuildResult struct {
	OK       bool   `json:"ok"`
	Phase    string `json:"phase"` // always "build"
	ExitCode int    `json:"exit_code"`
	// StderrTail is the last 2 KiB of build.sh's output, stdout and stderr
	// interleaved (many build tools report errors on stdout).
	StderrTail string `json:"stderr_tail,omitempty"`
	Error      string `json:"error,omitempty"`
	DurationMS int64  `json:"duration_ms"`
}

// Result is the outcome of one test path. Its JSON is what run_tests
// returns inside "result" and what traces record in envoi_calls; the field
// names are a contract (see environment/doc.go).
type Result struct {
	Path       string       `json:"path"`
	Passed     int          `json:"passed"`
	Failed     int          `json:"failed"`
	Total      int          `json:"total"`
	Build      BuildResult  `json:"build"`
	DurationMS int64        `json:"duration_ms"`
	Cases      []CaseResult `json:"cases"`
	// Voided lists the suites a version 3 evaluation voided because one
	// of its controls failed (their cases counted as failed). Kept so old
	// results read; no evaluation voids a suite now: every case carries
	// its own evidence.
	Voided []Void `json:"voided,omitempty"`
	// FixedLike counts the cases whose program did what the case without
	// its nonce wants (what a program ignoring its input would do): a
	// suspicion, not a pass.
	FixedLike int `json:"fixed_like,omitempty"`
}

// Void is one suite voided by its controls (version 3 results).
type Void struct {
	Suite  string `json:"suite"`
	Reason string `json:"reason"`
}

// CaseResult is one test case. Expected fields are omitted when the suite
// does not check them (torture checks only the exit code; wacct invalid
// programs only that the compiler rejects them).
type CaseResult struct {
	Name             string  `json:"name"`
	Phase            string  `json:"phase"`
	Passed           bool    `json:"passed"`
	ExpectReject     bool    `json:"expect_reject,omitempty"`
	ExpectedStdout   *string `json:"expected_stdout,omitempty"`
	ActualStdout     string  `json:"actual_stdout"`
	ExpectedExitCode *int    `json:"expected_exit_code,omitempty"`
	ActualExitCode   int     `json:"actual_exit_code"`
	StderrTail       string  `json:"stderr_tail,omitempty"`
	Error            string  `json:"error,omitempty"`
	CompileMS        int64   `json:"compile_ms"`
	RunMS            int64   `json:"run_ms"`
	// FixedLike: the program failed its nonce but did what the case
	// without it wants (see Result.FixedLike).
	FixedLike bool `json:"fixed_like,omitempty"`
	// Unguarded: the case carries no nonce of its own (the rewrite cannot
	// handle it, or a wacct invalid program without a valid neighbour);
	// its pass counts only beside a guarded one (environment/ccompiler's
	// guard.go says when).
	Unguarded bool `json:"unguarded,omitempty"`
}
