package evalbox_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trajlab/traj/environment"
	"github.com/trajlab/traj/environment/ccompiler"
	"github.com/trajlab/traj/replay/evalbox"
	"github.com/trajlab/traj/sandbox"
)

// needBwrap skips where bubblewrap cannot run (make test installs it).
func needBwrap(t testing.TB) {
	t.Helper()
	if err := sandbox.BwrapWorks(context.Background()); err != nil {
		t.Skipf("bwrap: %v", err)
	}
}

// testsDir is $TRAJ_TESTS_DIR (make test sets it), or "" when unset.
func testsDir(t testing.TB) string {
	t.Helper()
	d := os.Getenv("TRAJ_TESTS_DIR")
	if d == "" {
		t.Skip("TRAJ_TESTS_DIR not set: the public suites are needed")
	}
	return d
}

// tree is a fresh tree whose build.sh is build.
func tree(t testing.TB, build string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "build.sh"), []byte(build), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func evaluator(t testing.TB, provider, tests string) *evalbox.Evaluator {
	t.Helper()
	env, err := ccompiler.New(ccompiler.Config{TestsDir: tests})
	if err != nil {
		t.Fatal(err)
	}
	return &evalbox.Evaluator{Provider: provider, Env: env, TempDir: t.TempDir()}
}

// gccBuild makes ./cc a gcc wrapper: a real compiler, the control.
const gccBuild = "printf '#!/bin/sh\\nexec gcc -w \"$@\"\\n' > cc && chmod +x cc\n"

// run evaluates tree on paths and returns each path's environment result.
func run(t *testing.T, ev *evalbox.Evaluator, dir string, paths ...string) []environment.Result {
	t.Helper()
	p, err := ev.EvaluateDetailed(context.Background(), dir, paths)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Runs) != len(paths) {
		t.Fatalf("%d runs for %d paths", len(p.Runs), len(paths))
	}
	for i, path := range paths {
		s := p.Result.Suites[path]
		if s.Passed != p.Runs[i].Passed || s.Total != p.Runs[i].Total {
			t.Fatalf("%s: result %+v disagrees with the run (%d of %d)", path, s, p.Runs[i].Passed, p.Runs[i].Total)
		}
	}
	return p.Runs
}

// The gcc wrapper passes basics/smoke in every provider that works here
// (local runs on the host: trusted trees only).
func TestRealCompilerPasses(t *testing.T) {
	for _, provider := range []string{sandbox.ProviderLocal, sandbox.ProviderBwrap, sandbox.ProviderContainer} {
		t.Run(provider, func(t *testing.T) {
			switch provider {
			case sandbox.ProviderBwrap:
				needBwrap(t)
			case sandbox.ProviderContainer:
				if _, err := sandbox.ContainerWorks(context.Background(), "", ""); err != nil {
					t.Skipf("container: %v", err)
				}
			}
			r := run(t, evaluator(t, provider, ""), tree(t, gccBuild), "basics/smoke")[0]
			if r.Total == 0 || r.Passed != r.Total || len(r.Voided) > 0 {
				for _, c := range r.Cases {
					if !c.Passed {
						t.Logf("%s: %s: stdout %q stderr %q", c.Name, c.Error, c.ActualStdout, c.StderrTail)
					}
				}
				t.Fatalf("basics/smoke: %d of %d, voided %+v", r.Passed, r.Total, r.Voided)
			}
		})
	}
}

// A build.sh that leaves a setsid daemon behind (it appends to a file in
// the tree every 20 ms, as a forger would wait for the evaluation): the
// daemon dies with the build's sandbox, before the first compile. Every
// compile looks for it (the file must exist and not grow while it
// watches) and fails if it is alive. The build ran on a copy of the tree
// in the evaluation's scratch space: the tree given is left as it was.
func TestBuildDaemonDiesBeforeCompile(t *testing.T) {
	needBwrap(t)
	build := `printf '#!/bin/sh
[ -e /workspace/alive ] || { echo "the daemon never ran" >&2; exit 1; }
a=$(stat -c %%s /workspace/alive); sleep 0.2; b=$(stat -c %%s /workspace/alive)
if [ "$a" != "$b" ]; then echo "the build daemon is alive" >&2; exit 1; fi
exec gcc -w "$@"
' > cc && chmod +x cc
setsid sh -c 'while :; do echo x >> /workspace/alive; sleep 0.02; done' </dev/null >/dev/null 2>&1 &
sleep 0.1
`
	dir := tree(t, build)
	r := run(t, evaluator(t, sandbox.ProviderBwrap, ""), dir, "basics/smoke")[0]
	if r.Passed != r.Total || r.Total == 0 {
		for _, c := range r.Cases {
			t.Logf("%s: %s %s", c.Name, c.Error, c.StderrTail)
		}
		t.Fatalf("basics/smoke %d of %d: the daemon outlived the build", r.Passed, r.Total)
	}
	if _, err := os.Stat(filepath.Join(dir, "alive")); err == nil {
		t.Fatal("the build wrote into the tree it was given, not its copy in the scratch space")
	}
}

// A ./cc that searches everything it can see for the suites' fixtures
// and expectations (expected outputs, expected_results.json, other cases'
// sources, basics' `// expect:` lines in its own input) and for any
// folder it could write besides its own case folder and private /tmp
// and HOME: it finds nothing, so it compiles with gcc and every case
// passes. Anything found fails the case with what was found.
func TestCompileSeesOnlyItsCase(t *testing.T) {
	needBwrap(t)
	tests := testsDir(t)
	build := `cat > cc <<'EOF'
#!/bin/bash
src=()
for a in "$@"; do case "$a" in *.c) src+=("$a");; esac; done
leak=$(find / \( -path /proc -o -path /sys -o -path /usr -o -path /dev \) -prune -o \
  \( -name '*.expected' -o -name 'expected_results.json' -o -name '*.c' -o -name '*.tags' -o -name 'fixtures' \) -print 2>/dev/null |
  grep -vxF -f <(printf '%s\n' "${src[@]}"))
leak+=$(grep -l 'expect:' "${src[@]}")
leak+=$(find / \( -path /proc -o -path /sys -o -path /usr -o -path /dev \) -prune -o -type d -writable -print 2>/dev/null |
  grep -vE '^(/case|/tmp|/home/agent)(/|$)')
if [ -n "$leak" ]; then echo "found: $leak" >&2; exit 1; fi
exec gcc -w "$@"
EOF
chmod +x cc
`
	runs := run(t, evaluator(t, sandbox.ProviderBwrap, tests), tree(t, build), "basics/smoke", "c_testsuite/part_1")
	for _, r := range runs {
		if r.Passed != r.Total || r.Total == 0 {
			for _, c := range r.Cases {
				if !c.Passed {
					t.Logf("%s: %s: %s", c.Name, c.Error, c.StderrTail)
				}
			}
			t.Errorf("%s: %d of %d: a compile saw what it should not", r.Path, r.Passed, r.Total)
		}
	}
}

// A produced program runs alone: it sees neither the tree nor any case
// folder nor anything in /tmp (its output is observed and must be empty).
func TestProgramRunsAlone(t *testing.T) {
	needBwrap(t)
	build := `cat > cc <<'EOF'
#!/bin/sh
while [ $# -gt 0 ]; do [ "$1" = -o ] && o=$2; shift; done
printf '#!/bin/sh\nfor p in /workspace /case /tmp/* /home/agent/*; do [ -e "$p" ] && echo "sees $p"; done\nexit 0\n' > "$o"
chmod +x "$o"
EOF
chmod +x cc
touch /tmp/left-by-the-build
`
	r := run(t, evaluator(t, sandbox.ProviderBwrap, ""), tree(t, build), "basics/smoke")[0]
	for _, c := range r.Cases {
		if c.Phase == environment.PhaseCompile || c.ActualStdout != "" {
			t.Errorf("%s: phase %s, stdout %q: %s", c.Name, c.Phase, c.ActualStdout, c.Error)
		}
	}
}

// A compile cannot write into another case's folder: each ./cc drops a
// poisoned `prog` into every other folder it might reach, and plants a
// file wherever the tree is; every case still passes with gcc's program,
// and the tree holds nothing new after the evaluation.
func TestCompileCannotWriteOtherCases(t *testing.T) {
	needBwrap(t)
	build := `cat > cc <<'EOF'
#!/bin/sh
for d in / /case/.. /tmp /workspace /workspace/target; do
  mkdir -p "$d/c0" "$d/c1" 2>/dev/null
  for c in "$d"/c*; do printf '#!/bin/sh\nexit 3\n' > "$c/prog" 2>/dev/null; done
  echo poison > "$d/poison" 2>/dev/null
done
exec gcc -w "$@"
EOF
chmod +x cc
`
	dir := tree(t, build)
	r := run(t, evaluator(t, sandbox.ProviderBwrap, ""), dir, "basics/smoke", "basics/control_flow")
	for _, res := range r {
		if res.Passed != res.Total {
			t.Errorf("%s: %d of %d", res.Path, res.Passed, res.Total)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "build.sh" && e.Name() != "cc" {
			t.Errorf("a compile wrote %s into the tree", e.Name())
		}
	}
}

// The `exit 0` compiler (a ./cc that ignores its input and writes a
// program that exits 0) scores 0 on torture and c_testsuite, whose pass
// rule it meets for most cases as written, and on every other suite:
// every case carries its own nonce; where the case without it wants
// exit 0 the case is counted fixed_like. No suite is voided. The
// always-failing compiler (the control) scores 0 too: its refusals of
// wacct's invalid programs count only beside a compiled neighbour.
func TestInputIgnoringCompilerScoresZero(t *testing.T) {
	needBwrap(t)
	tests := testsDir(t)
	compilers := map[string]string{
		"exit 0":       `printf '#!/bin/sh\nwhile [ $# -gt 0 ]; do [ "$1" = -o ] && o=$2; shift; done\nprintf "#!/bin/sh\\\\nexit 0\\\\n" > "$o"; chmod +x "$o"\n' > cc && chmod +x cc` + "\n",
		"always fails": "printf '#!/bin/sh\\nexit 1\\n' > cc && chmod +x cc\n",
	}
	paths := []string{"torture/part_1", "c_testsuite/part_1", "basics/smoke", "wacct/chapter_1"}
	for name, build := range compilers {
		t.Run(name, func(t *testing.T) {
			p, err := evaluator(t, sandbox.ProviderBwrap, tests).EvaluateDetailed(context.Background(), tree(t, build), paths)
			if err != nil {
				t.Fatal(err)
			}
			for i, path := range paths {
				s := p.Result.Suites[path]
				if s.Passed != 0 || s.Total == 0 || s.Void != "" {
					t.Errorf("%s: %d of %d, void %q: want 0, nothing voided", path, s.Passed, s.Total, s.Void)
				}
				if name == "exit 0" && path != "wacct/chapter_1" {
					// Without the nonces these would pass: they really ran.
					if s.FixedLike == 0 || s.FixedLike != p.Runs[i].FixedLike {
						t.Errorf("%s: fixed_like %d (run %d): the programs did what the cases without nonces want", path, s.FixedLike, p.Runs[i].FixedLike)
					}
				}
			}
		})
	}
}

// deny_c_compiler: a ./cc that hands C to gcc fails every compile, in the
// build's and the compiles' sandboxes alike, in bwrap and in a container
// (sandbox/deny.go); the local provider refuses it.
func TestDenyCCompiler(t *testing.T) {
	for _, provider := range []string{sandbox.ProviderBwrap, sandbox.ProviderContainer} {
		t.Run(provider, func(t *testing.T) {
			needProvider(t, provider)
			ev := evaluator(t, provider, "")
			ev.DenyCCompiler = true
			r := run(t, ev, tree(t, gccBuild+"echo 'int main(void){return 0;}' > t.c && gcc t.c -o t && echo built-with-gcc\n"), "basics/smoke")[0]
			if r.Build.OK || strings.Contains(r.Build.StderrTail, "built-with-gcc") {
				t.Errorf("build with gcc under deny: %+v", r.Build)
			}
			r = run(t, ev, tree(t, gccBuild), "basics/smoke")[0]
			if r.Passed != 0 {
				t.Errorf("gcc wrapper under deny passed %d of %d", r.Passed, r.Total)
			}
		})
	}
	ev := evaluator(t, sandbox.ProviderLocal, "")
	ev.DenyCCompiler = true
	if _, err := ev.Evaluate(context.Background(), tree(t, gccBuild), []string{"basics/smoke"}); err == nil {
		t.Error("deny_c_compiler accepted by the local provider")
	}
}
