package ccompiler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trajlab/traj/environment"
	"github.com/trajlab/traj/environment/ccompiler/fresh"
)

// Build scripts for test workspaces. Each makes ./cc.
const (
	// gccBuild makes ./cc a thin gcc wrapper: the reference compiler.
	gccBuild = "printf '#!/bin/sh\\nexec gcc -w \"$@\"\\n' > cc && chmod +x cc\n"
	// rejectAllBuild makes a compiler that always exits 1.
	rejectAllBuild = "printf '#!/bin/sh\\necho nope >&2\\nexit 1\\n' > cc && chmod +x cc\n"
	// wrongOutputBuild makes a compiler whose programs print "wrong" and exit 0.
	wrongOutputBuild = `cat > cc <<'EOF'
#!/bin/sh
out=a.out
while [ $# -gt 0 ]; do
  if [ "$1" = -o ]; then out=$2; shift; fi
  shift
done
printf 'int puts(const char *);\nint main(void){puts("wrong");return 0;}\n' | gcc -x c - -o "$out"
EOF
chmod +x cc
`
	failingBuild = "echo 'error: cannot build' >&2\nexit 3\n"
)

// gccAcceptsInvalid are the wacct sample's invalid programs that gcc
// compiles anyway (it accepts them as extensions or only warns), so the gcc
// wrapper fails exactly these cases.
var gccAcceptsInvalid = []string{
	"wacct/chapter_1/invalid_parse/missing_type.c",
}

func testsDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("TRAJ_TESTS_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared", "fixtures")
	}
	if !isDir(dir) {
		t.Skipf("fixtures not found at %s (set TRAJ_TESTS_DIR)", dir)
	}
	return dir
}

func needGCC(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
}

func workspace(t testing.TB, buildScript string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "build.sh"), []byte(buildScript), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func newEnv(t testing.TB) *Env {
	t.Helper()
	e, err := New(Config{TestsDir: testsDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func failedNames(r environment.Result) []string {
	var out []string
	for _, c := range r.Cases {
		if !c.Passed {
			out = append(out, c.Name)
		}
	}
	return out
}

func TestGCCWrapperPassesSuites(t *testing.T) {
	needGCC(t)
	e := newEnv(t)
	ws := workspace(t, gccBuild)
	ctx := context.Background()
	b := e.Build(ctx, ws, nil)
	if !b.OK {
		t.Fatalf("build: %+v", b)
	}
	for _, path := range []string{"basics", "c_testsuite", "torture", "torture_std", "wacct"} {
		t.Run(path, func(t *testing.T) {
			r, err := e.Run(ctx, ws, path, environment.RunOptions{Prebuilt: &b})
			if err != nil {
				t.Fatal(err)
			}
			if r.Total == 0 || r.Total != len(r.Cases) || r.Passed+r.Failed != r.Total {
				t.Fatalf("counts: passed %d failed %d total %d cases %d", r.Passed, r.Failed, r.Total, len(r.Cases))
			}
			if !sort.SliceIsSorted(r.Cases, func(i, j int) bool { return r.Cases[i].Name < r.Cases[j].Name }) {
				t.Error("cases not sorted by name")
			}
			var want []string
			if path == "wacct" {
				want = gccAcceptsInvalid
			}
			got := failedNames(r)
			if !slices.Equal(got, want) {
				for _, c := range r.Cases {
					if !c.Passed && !slices.Contains(want, c.Name) {
						t.Logf("%s: phase %s: %s; stdout %q exit %d; stderr %s", c.Name, c.Phase, c.Error, c.ActualStdout, c.ActualExitCode, c.StderrTail)
					}
				}
				t.Fatalf("failed cases = %v, want %v", got, want)
			}
		})
	}
	if n := len(e.suites[SuiteBasics].cases); n < 60 {
		t.Errorf("basics has %d cases, want at least 60", n)
	}
}

// A compiler that rejects everything is right about wacct's invalid
// programs, but a refusal counts only beside a valid neighbour it
// compiles (guard.go): it scores 0, no suite voided; each case still
// shows what it observed, and each refused invalid program names its
// neighbour.
func TestRejectingCompilerFailsEverything(t *testing.T) {
	e := newEnv(t)
	ws := workspace(t, rejectAllBuild)
	r, err := e.Run(context.Background(), ws, "all", environment.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Build.OK {
		t.Fatalf("build: %+v", r.Build)
	}
	for _, c := range r.Cases {
		if c.Passed || c.Phase != environment.PhaseCompile {
			t.Errorf("%s: passed=%v phase=%s, want a failure at compile", c.Name, c.Passed, c.Phase)
		}
		if !strings.Contains(c.StderrTail, "nope") {
			t.Errorf("%s: stderr tail %q lacks the compiler's message", c.Name, c.StderrTail)
		}
		if c.ExpectReject && !strings.Contains(c.Error, "neighbour wacct/") {
			t.Errorf("%s: error %q does not name its neighbour", c.Name, c.Error)
		}
	}
	if r.Passed != 0 || r.Failed != r.Total || len(r.Voided) != 0 {
		t.Errorf("passed %d failed %d of %d, voided %v: want 0 passed and nothing voided", r.Passed, r.Failed, r.Total, r.Voided)
	}
}

// Compilers that ignore their input score 0 on every suite, though each
// meets some cases' pass rule (exit 0 with empty output: torture, most
// of c-testsuite, some of wacct and basics; any refusal: wacct's invalid
// programs): every case carries its own nonce (a code other than 0
// meets the few whose nonce is that code, by chance). exit 0 is counted as a
// suspicion (fixed_like) where the case without its nonce wants it. A
// compiler whose output depends on its input is the control: a gcc
// wrapper passes (TestGCCWrapperPassesSuites).
func TestInputIgnoringCompilersScoreZero(t *testing.T) {
	compilers := []struct{ name, build string }{
		{"exit 0", `printf '#!/bin/sh\nwhile [ $# -gt 0 ]; do [ "$1" = -o ] && o=$2; shift; done\nprintf "#!/bin/sh\\nexit 0\\n" > "$o"; chmod +x "$o"\n' > cc && chmod +x cc` + "\n"},
		{"exit 7", `printf '#!/bin/sh\nwhile [ $# -gt 0 ]; do [ "$1" = -o ] && o=$2; shift; done\nprintf "#!/bin/sh\\nexit 7\\n" > "$o"; chmod +x "$o"\n' > cc && chmod +x cc` + "\n"},
		{"always fails", rejectAllBuild},
	}
	e := newEnv(t)
	secret := []byte("the secret of TestInputIgnoringCompilersScoreZero")
	for _, c := range compilers {
		t.Run(c.name, func(t *testing.T) {
			ws := workspace(t, c.build)
			b := e.Build(context.Background(), ws, nil)
			if !b.OK {
				t.Fatalf("build: %+v", b)
			}
			for _, path := range []string{"basics", "wacct", "c_testsuite", "torture/part_1", "torture_std/part_1"} {
				r, err := e.Run(context.Background(), ws, path, environment.RunOptions{Prebuilt: &b, Secret: secret})
				if err != nil {
					t.Fatal(err)
				}
				// exit 0 meets no nonce (never 0); another code meets only
				// the cases whose nonce happens to be it (chance: 1 in
				// 254 or so), computed here from the same secret.
				chance := 0
				if c.name == "exit 7" {
					cs, err := e.cases(path)
					if err != nil {
						t.Fatal(err)
					}
					for _, tc := range cs {
						if tc.exitCode != nil && (*tc.exitCode+nonceFor(secret, tc.name, *tc.exitCode))%256 == 7 {
							chance++
						}
					}
				}
				if r.Passed > chance || len(r.Voided) != 0 {
					t.Errorf("%s: passed %d of %d (its nonces' chance %d), voided %+v; want 0, nothing voided", path, r.Passed, r.Total, chance, r.Voided)
				}
				if c.name == "exit 0" && path != "wacct" && r.FixedLike == 0 {
					t.Errorf("%s: exit 0 for every case, but no case is counted fixed_like", path)
				}
				for _, cr := range r.Cases {
					if cr.FixedLike && (cr.ExpectedExitCode == nil || cr.ActualExitCode == *cr.ExpectedExitCode) {
						t.Errorf("%s: fixed_like with actual %d, expected %v: the answer is not in the case's own terms", cr.Name, cr.ActualExitCode, cr.ExpectedExitCode)
					}
				}
			}
		})
	}
}

func TestWrongOutputFailsAtCompare(t *testing.T) {
	needGCC(t)
	e := newEnv(t)
	ws := workspace(t, wrongOutputBuild)
	for _, path := range []string{"basics/smoke", "c_testsuite/part_1", "wacct/chapter_1"} {
		r, err := e.Run(context.Background(), ws, path, environment.RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range r.Cases {
			if c.ExpectReject {
				continue // an accepting compiler fails these at compile
			}
			if c.Passed || c.Phase != environment.PhaseCompare || c.ActualStdout != "wrong\n" {
				t.Errorf("%s: passed=%v phase=%s stdout=%q, want a compare failure", c.Name, c.Passed, c.Phase, c.ActualStdout)
			}
		}
		if r.Passed != 0 {
			t.Errorf("%s: %d passed, want 0", path, r.Passed)
		}
	}
}

func TestBuildFailures(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name, script string
		noScript     bool
		wantExit     int
		wantErr      string
	}{
		{name: "exit 3", script: failingBuild, wantExit: 3, wantErr: "exited with 3"},
		{name: "no build.sh", noScript: true, wantExit: -1, wantErr: "build.sh not found"},
		{name: "no cc", script: "true\n", wantExit: 0, wantErr: "./cc does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			if !tt.noScript {
				ws = workspace(t, tt.script)
			}
			r, err := e.Run(context.Background(), ws, "basics/smoke", environment.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Build.OK || r.Build.Phase != "build" || r.Build.ExitCode != tt.wantExit || !strings.Contains(r.Build.Error, tt.wantErr) {
				t.Fatalf("build = %+v", r.Build)
			}
			if r.Failed != r.Total || r.Total == 0 {
				t.Errorf("failed %d of %d", r.Failed, r.Total)
			}
			for _, c := range r.Cases {
				if c.Phase != environment.PhaseBuild || c.Passed {
					t.Errorf("%s: phase %s passed %v", c.Name, c.Phase, c.Passed)
				}
			}
		})
	}
	ws := workspace(t, failingBuild)
	r, _ := e.Run(context.Background(), ws, "basics/smoke", environment.RunOptions{})
	if !strings.Contains(r.Build.StderrTail, "cannot build") {
		t.Errorf("stderr tail %q", r.Build.StderrTail)
	}
}

func TestTimeoutsKillProcessGroups(t *testing.T) {
	needGCC(t)
	e := newEnv(t)
	// The compiler forks a background sleeper and then hangs: the whole
	// group must die at the compile timeout.
	pidFile := filepath.Join(t.TempDir(), "pid")
	ws := workspace(t, "cat > cc <<'EOF'\n#!/bin/sh\nsleep 300 &\necho $! >> "+pidFile+"\nwait\nEOF\nchmod +x cc\n")
	start := time.Now()
	r, err := e.Run(context.Background(), ws, "basics/smoke", environment.RunOptions{CompileTimeout: 300 * time.Millisecond, Workers: 8})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("run took %s", d)
	}
	for _, c := range r.Cases {
		if c.Phase != environment.PhaseTimeout || c.Passed {
			t.Errorf("%s: phase %s", c.Name, c.Phase)
		}
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pids := strings.Fields(string(data))
	if len(pids) == 0 {
		t.Fatal("no background sleeper started")
	}
	for _, pid := range pids {
		if st, err := os.ReadFile("/proc/" + pid + "/stat"); err == nil && !strings.Contains(string(st), ") Z") {
			t.Errorf("background sleeper %s still alive: %s", pid, st)
		}
	}

	// A program that loops forever times out at run.
	ws2 := workspace(t, `cat > cc <<'EOF'
#!/bin/sh
out=a.out
while [ $# -gt 0 ]; do
  if [ "$1" = -o ]; then out=$2; shift; fi
  shift
done
printf '#include <stdio.h>\nint main(void){for(;;)puts("y");}\n' | gcc -x c - -o "$out"
EOF
chmod +x cc
`)
	r, err = e.Run(context.Background(), ws2, "smoke_only_one", environment.RunOptions{})
	if !errors.Is(err, environment.ErrUnknownPath) {
		t.Fatalf("unknown path: err = %v", err)
	}
	r, err = e.Run(context.Background(), ws2, "basics/smoke", environment.RunOptions{RunTimeout: 200 * time.Millisecond, OutputLimit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Cases {
		if c.Phase != environment.PhaseTimeout || len(c.ActualStdout) > 1000 {
			t.Errorf("%s: phase %s, %d bytes of stdout", c.Name, c.Phase, len(c.ActualStdout))
		}
	}
}

func TestPathsAndSelection(t *testing.T) {
	e := newEnv(t)
	paths := e.TestPaths()
	for _, want := range []string{"all", "basics", "basics/smoke", "basics/multi_file", "basics/stress", "c_testsuite", "c_testsuite/part_1", "torture", "torture/part_1", "wacct", "wacct/chapter_1", "wacct/chapter_3"} {
		if !slices.Contains(paths, want) {
			t.Errorf("TestPaths lacks %q: %v", want, paths)
		}
	}
	for _, p := range paths {
		cs, err := e.cases(p)
		if err != nil || len(cs) == 0 {
			t.Errorf("listed path %q: %d cases, err %v", p, len(cs), err)
		}
	}
	for _, bad := range []string{"c_testsuite/part_2", "wacct/chapter_4", "basics/nope", "nope", "../x", "/etc", "basics/../wacct"} {
		if _, err := e.cases(bad); !errors.Is(err, environment.ErrUnknownPath) {
			t.Errorf("%q: err = %v, want ErrUnknownPath", bad, err)
		}
	}
	// Only basics without fixtures; public suites name their source.
	bare, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if got := bare.TestPaths(); slices.Contains(got, "wacct") || !slices.Contains(got, "basics/smoke") {
		t.Errorf("bare paths = %v", got)
	}
	_, err = bare.cases("wacct/chapter_1")
	if !errors.Is(err, environment.ErrSuiteMissing) || !strings.Contains(err.Error(), "github.com/nlsandler/writing-a-c-compiler-tests") {
		t.Errorf("missing suite error = %v", err)
	}
	empty := t.TempDir()
	e2, err := New(Config{TestsDir: empty})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e2.cases("torture")
	if !errors.Is(err, environment.ErrSuiteMissing) || !strings.Contains(err.Error(), filepath.Join(empty, "torture", "SingleSource")) || !strings.Contains(err.Error(), "llvm-test-suite") {
		t.Errorf("missing torture error = %v", err)
	}
	if bare.Version() == e.Version() {
		t.Error("version ignores the fixtures")
	}
}

func TestVersionTracksContent(t *testing.T) {
	src := testsDir(t)
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{TestsDir: dst})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(Config{TestsDir: dst})
	if err != nil {
		t.Fatal(err)
	}
	if a.Version() != b.Version() || !strings.HasPrefix(a.Version(), "sha256:") {
		t.Fatalf("version not stable: %s vs %s", a.Version(), b.Version())
	}
	f := filepath.Join(dst, "c-testsuite", "tests", "single-exec", "00001.c.expected")
	if err := os.WriteFile(f, []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{TestsDir: dst})
	if err != nil {
		t.Fatal(err)
	}
	if c.Version() == a.Version() {
		t.Error("version unchanged after a fixture changed")
	}
}

func TestParseExpect(t *testing.T) {
	tests := []struct {
		src      string
		exit     int
		stdout   string
		ok, fail bool
	}{
		{src: "// expect: exit=3 stdout=\"a\\nb\"\nint main(){}", exit: 3, stdout: "a\nb", ok: true},
		{src: "int x;\n  // expect: stdout=\"x\"", stdout: "x", ok: true},
		{src: "// expect: exit=300", fail: true},
		{src: "// expect: exit=1 bogus", fail: true},
		{src: "int main(){}"},
	}
	for _, tt := range tests {
		exit, stdout, ok, err := parseExpect(tt.src)
		if (err != nil) != tt.fail || ok != tt.ok || exit != tt.exit || stdout != tt.stdout {
			t.Errorf("parseExpect(%q) = %d %q %v %v", tt.src, exit, stdout, ok, err)
		}
	}
}

// TestTortureSets: torture is every top-level execute test but the named
// exclusions (what gcc itself fails under the ./cc contract), torture_std
// its standard-C subset, "all" runs torture once, and a test's #include
// "sibling.c" is staged beside it.
func TestTortureSets(t *testing.T) {
	for name, reason := range tortureExcluded {
		if !strings.HasSuffix(name, ".c") || reason == "" {
			t.Errorf("exclusion %q: %q", name, reason)
		}
	}
	dir := t.TempDir()
	execute := filepath.Join(dir, "torture", "SingleSource", "Regression", "C", "gcc-c-torture", "execute")
	files := map[string]string{
		"body.c":         "int main(void) { return VALUE; }\n",
		"uses-body.c":    "#define VALUE 0\n#include \"body.c\"\n",
		"gnu.c":          "int main(void) { return ({ 0; }); }\n",
		"20001121-1.c":   "int main(void) { return 0; }\n", // excluded by name
		"plain.c":        "int main(void) { return 0; }\n",
		"self-include.c": "#ifndef AGAIN\n#define AGAIN\n#include \"self-include.c\"\n#else\nint main(void) { return 0; }\n#endif\n",
	}
	for name, src := range files {
		if err := os.MkdirAll(execute, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(execute, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e, err := New(Config{TestsDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	names := func(path string) []string {
		cs, err := e.cases(path)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range cs {
			out = append(out, c.name)
		}
		return out
	}
	if got, want := names("torture"), []string{"torture/body.c", "torture/gnu.c", "torture/plain.c", "torture/self-include.c", "torture/uses-body.c"}; !slices.Equal(got, want) {
		t.Errorf("torture = %v, want %v", got, want)
	}
	if got, want := names("torture_std"), []string{"torture_std/body.c", "torture_std/plain.c", "torture_std/self-include.c", "torture_std/uses-body.c"}; !slices.Equal(got, want) {
		t.Errorf("torture_std = %v, want %v", got, want)
	}
	for _, n := range names("all") {
		if strings.HasPrefix(n, SuiteTortureStd+"/") {
			t.Fatalf("all runs the subset too: %s", n)
		}
	}
	if !slices.Contains(e.TestPaths(), "torture_std/part_1") {
		t.Errorf("TestPaths lacks torture_std/part_1: %v", e.TestPaths())
	}
	needGCC(t)
	ws := workspace(t, gccBuild)
	r, err := e.Run(context.Background(), ws, "torture", environment.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// body.c alone does not compile (VALUE is undefined): the real suite
	// has no such file, this one shows the include is staged.
	if got := failedNames(r); !slices.Equal(got, []string{"torture/body.c"}) {
		t.Fatalf("failed = %v, want only torture/body.c", got)
	}
}

// TestGCCPassesFullTorture runs the whole torture suite with the gcc
// wrapper when TRAJ_TORTURE_FULL names a tests folder holding the full
// llvm-test-suite execute folder (torture/SingleSource/…): every case must
// pass. About 1,500 compiles and runs, so not part of make test.
func TestGCCPassesFullTorture(t *testing.T) {
	dir := os.Getenv("TRAJ_TORTURE_FULL")
	if dir == "" {
		t.Skip("TRAJ_TORTURE_FULL not set (a tests folder with the full torture suite)")
	}
	needGCC(t)
	e, err := New(Config{TestsDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ws := workspace(t, gccBuild)
	r, err := e.Run(context.Background(), ws, "torture", environment.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("torture: %d/%d passed", r.Passed, r.Total)
	if r.Failed != 0 {
		t.Fatalf("gcc fails %v", failedNames(r))
	}
}

func TestTortureSkipRules(t *testing.T) {
	tests := []struct {
		name, src string
		skip      bool
	}{
		{"a.c", "int main(void){ if (1 && x) abort(); exit(0); }", false},
		{"b.c", "/* { dg-options \"-O2\" } */\nint main(){}", true},
		{"c.c", "typedef int v4 __attribute__((vector_size(16)));", true},
		{"d.c", "int main(){ return ({ 1; }); }", true},
		{"e.c", "int main(){ __builtin_abort(); }", false},
		{"f.c", "int main(){ return __builtin_popcount(3); }", true},
		{"g.c", "int main(void)\n{\n  int inner (int x) { return x; }\n  return inner(0);\n}\n", true},
		{"nestfunc-1.c", "int main(){}", true},
		{"h.c", "int main(){ _Complex double z; }", true},
		{"i.c", "static int __attribute__((noinline)) f(int x) { return x; }\nint main(){ return f(0); }", false},
	}
	for _, tt := range tests {
		if got := tortureSkipReason(tt.name, []byte(tt.src)) != ""; got != tt.skip {
			t.Errorf("%s: skip = %v, want %v", tt.name, got, tt.skip)
		}
	}
}

func TestResultJSONShape(t *testing.T) {
	e, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	ws := workspace(t, failingBuild)
	r, err := e.Run(context.Background(), ws, "basics/smoke", environment.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"path", "passed", "failed", "total", "build", "duration_ms", "cases"} {
		if _, ok := m[k]; !ok {
			t.Errorf("result JSON lacks %q: %s", k, data)
		}
	}
	c := m["cases"].([]any)[0].(map[string]any)
	for _, k := range []string{"name", "phase", "passed", "expected_stdout", "actual_stdout", "expected_exit_code", "actual_exit_code", "compile_ms", "run_ms"} {
		if _, ok := c[k]; !ok {
			t.Errorf("case JSON lacks %q: %v", k, c)
		}
	}
}

func TestProgressAndCancel(t *testing.T) {
	needGCC(t)
	e := newEnv(t)
	ws := workspace(t, gccBuild)
	var mu sync.Mutex
	var seen []int
	r, err := e.Run(context.Background(), ws, "basics/smoke", environment.RunOptions{Workers: 2, Progress: func(done, total int) {
		mu.Lock()
		defer mu.Unlock()
		if total != 8 {
			t.Errorf("total %d", total)
		}
		seen = append(seen, done)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != r.Total || seen[len(seen)-1] != r.Total || !sort.IntsAreSorted(seen) {
		t.Errorf("progress %v for %d cases", seen, r.Total)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Run(ctx, ws, "basics", environment.RunOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled run: err = %v", err)
	}
}

func TestPrebuiltFailureIsNotRebuilt(t *testing.T) {
	e, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	ws := workspace(t, gccBuild)
	failed := environment.BuildResult{Phase: environment.PhaseBuild, ExitCode: 1, Error: "build.sh exited with 1"}
	r, err := e.Run(context.Background(), ws, "basics/smoke", environment.RunOptions{Prebuilt: &failed})
	if err != nil {
		t.Fatal(err)
	}
	if r.Build != failed || r.Failed != r.Total {
		t.Errorf("build %+v, failed %d of %d", r.Build, r.Failed, r.Total)
	}
	if _, err := os.Stat(filepath.Join(ws, "cc")); err == nil {
		t.Error("Run built again despite a Prebuilt result")
	}
}

// What a compile is handed of a basics case is its program without the
// `// expect:` line: the expectation stays on the host.
func TestStagedBasicsCarryNoExpectation(t *testing.T) {
	e, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range e.suites[SuiteBasics].cases {
		dir := t.TempDir()
		srcs, err := e.stage(dir, c)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range srcs {
			data, err := os.ReadFile(s)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(data), "expect:") {
				t.Errorf("%s: staged %s still holds its expectation", c.name, filepath.Base(s))
			}
		}
	}
	if got := string(stripExpect([]byte("// expect: exit=3\r\nint main(void) { return 3; }\n  // expect: x\n"))); got != "\r\nint main(void) { return 3; }\n\n" {
		t.Errorf("stripExpect = %q", got)
	}
}

// TestVersionSameAsSequentialLoad: New loads the fixture suites at once,
// and its version is the digest of the suites fed one after the other,
// as it always was (a version that changed would miss every cached
// evaluation).
func TestVersionSameAsSequentialLoad(t *testing.T) {
	root, err := filepath.Abs(testsDir(t))
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s shard=%d\n", RunnerVersion, ShardSize)
	if _, err := loadBasics(basicsFS, h); err != nil {
		t.Fatal(err)
	}
	loadCTestsuite(root, h)
	loadTorture(root, h)
	loadWacct(root, h)
	fmt.Fprintf(h, "%s\n", fresh.Version)
	e, err := New(Config{TestsDir: root})
	if err != nil {
		t.Fatal(err)
	}
	if want := "sha256:" + hex.EncodeToString(h.Sum(nil)); e.Version() != want {
		t.Errorf("version %s, loaded one suite after the other %s", e.Version(), want)
	}
}
