package evalbox_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trajlab/traj/environment"
	"github.com/trajlab/traj/environment/ccompiler"
	"github.com/trajlab/traj/sandbox"
)

// The attacks on per-case evidence (environment/ccompiler's guard.go),
// run for real in the evaluation sandboxes, bwrap and container, on
// every suite of the fixtures (the container: a few cases a suite, as
// it starts a container per action). Each compiler is written from the
// shape of the attack, not fitted to a case, so the same tests hold on
// the full public suites (TRAJ_TESTS_DIR pointing at them):
//   - shapes: a compiler of a few trivial shapes (testdata/shapes.pl:
//     `return expr`, one local assigned once, one call of a one-line
//     function) that emits a program exiting 0 for anything else scores,
//     on every suite, no more than its twin that refuses instead;
//   - the refusing twin passes a wacct invalid program only beside a
//     valid neighbour it compiled;
//   - half: a gcc wrapper that compiles the sources whose SHA-256 starts
//     with 0-7 scores the same on the guarded runnable cases whether the
//     other half emits exit 0 or refuses, never more with exit 0 (the
//     cases that cannot carry a nonce count only without fixed-like
//     cases), and keeps at least 40 % of what gcc passes over the suites;
//   - three evaluations of one artifact give equal results, case by case;
//   - the gcc wrapper passes every case but the invalid programs gcc
//     accepts (what it passed before the nonces).
//
// Measured on the full public suites (bwrap): the shapes compiler with
// its exit-0 fallback scores basics 6, wacct 39, c_testsuite 11, torture
// 0 (torture's 1,493 fixed-like), its refusing twin 6, 80, 11, 0; with
// version 3's controls the fallback scored torture 1,496 of 1,496. The
// half compiler with exit 0 / refusing / gcc: basics 42/42/68, wacct
// 455/635/1,163 (of 1,274), c_testsuite 121/122/220, torture
// 756/758/1,496 (the refusing twin keeps the unguarded cases in its gcc
// half, the exit-0 one does not: its guarded cases are fixed-like);
// version 3 voided it to 0 on every suite.

// shapesBuild is the shapes compiler; fallback "exit0" or "refuse".
func shapesBuild(t testing.TB, fallback string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "shapes.pl"))
	if err != nil {
		t.Fatal(err)
	}
	src := strings.ReplaceAll(string(b), "@FALLBACK@", fallback)
	return "cat > cc <<'CC_EOF'\n" + src + "CC_EOF\nchmod +x cc\n"
}

// halfBuild is a gcc wrapper that compiles half the sources (by their
// SHA-256) and, for the other half, emits exit 0 or refuses.
func halfBuild(fallback string) string {
	other := `echo "not this half" >&2; exit 1`
	if fallback == "exit0" {
		other = `printf '#!/bin/sh\nexit 0\n' > "$o"; chmod +x "$o"; exit 0`
	}
	return "cat > cc <<'CC_EOF'\n#!/bin/sh\nfor a in \"$@\"; do case \"$a\" in *.c) s=$a; break;; esac; done\n" +
		"o=; prev=; for a in \"$@\"; do [ \"$prev\" = -o ] && o=$a; prev=$a; done\n" +
		"case \"$(sha256sum \"$s\" | cut -c1)\" in [0-7]) exec gcc -w \"$@\";; esac\n" + other + "\nCC_EOF\nchmod +x cc\n"
}

// evidenceSecret is the store's secret these tests evaluate with.
var evidenceSecret = []byte("evaluation secret of the evidence tests")

// evidencePaths are every suite of the fixtures.
var evidencePaths = []string{"basics", "wacct", "c_testsuite", "torture"}

// evalWith runs build's tree on paths with the secret and returns each
// path's result.
func evalWith(t *testing.T, provider, tests, build string, paths []string) []environment.Result {
	t.Helper()
	ev := evaluator(t, provider, tests)
	ev.Secret = evidenceSecret
	return run(t, ev, tree(t, build), paths...)
}

// passed counts r's passes; guarded: of the runnable cases that carry
// a nonce only.
func passed(r environment.Result, guarded bool) int {
	n := 0
	for _, c := range r.Cases {
		if c.Passed && !(guarded && (c.ExpectReject || c.Unguarded)) {
			n++
		}
	}
	return n
}

func evidenceProviders(t *testing.T) []string {
	t.Helper()
	out := []string{}
	if sandbox.BwrapWorks(context.Background()) == nil {
		out = append(out, sandbox.ProviderBwrap)
	}
	if _, err := sandbox.ContainerWorks(context.Background(), "", ""); err == nil {
		out = append(out, sandbox.ProviderContainer)
	}
	if len(out) == 0 {
		t.Skip("neither bwrap nor a container runs here")
	}
	return out
}

// fixturesFor is the fixtures a provider evaluates: all of them in
// bwrap, a few cases a suite in a container.
func fixturesFor(t *testing.T, provider, tests string) string {
	t.Helper()
	if provider == sandbox.ProviderBwrap {
		return tests
	}
	return trimmedFixtures(t, tests)
}

func TestShapesCompilerGainsNothingFromFallback(t *testing.T) {
	tests := testsDir(t)
	for _, provider := range evidenceProviders(t) {
		t.Run(provider, func(t *testing.T) {
			fx := fixturesFor(t, provider, tests)
			stub := evalWith(t, provider, fx, shapesBuild(t, "exit0"), evidencePaths)
			refuse := evalWith(t, provider, fx, shapesBuild(t, "refuse"), evidencePaths)
			env, err := ccompiler.New(ccompiler.Config{TestsDir: fx})
			if err != nil {
				t.Fatal(err)
			}
			compiled := 0
			for i, path := range evidencePaths {
				t.Logf("%s: shapes with exit 0 %d, refusing %d of %d; fixed-like %d", path, stub[i].Passed, refuse[i].Passed, stub[i].Total, stub[i].FixedLike)
				if stub[i].Passed > refuse[i].Passed {
					t.Errorf("%s: the exit-0 fallback scores %d, more than refusing (%d)", path, stub[i].Passed, refuse[i].Passed)
				}
				compiled += passed(refuse[i], true)
				if path == "torture" && stub[i].FixedLike == 0 {
					t.Errorf("torture: the exit-0 fallback ran, but no case is counted fixed_like")
				}
				// A refusal counts only beside a neighbour compiled.
				pass := map[string]bool{}
				for _, c := range refuse[i].Cases {
					pass[c.Name] = c.Passed
				}
				for _, c := range refuse[i].Cases {
					if !c.ExpectReject || !c.Passed {
						continue
					}
					nb := env.Neighbour(c.Name)
					if nb == "" {
						t.Errorf("%s passed with no neighbour", c.Name)
						continue
					}
					if _, ran := pass[nb]; ran && !pass[nb] {
						t.Errorf("%s passed beside %s, which failed", c.Name, nb)
					}
				}
			}
			if compiled == 0 {
				t.Error("the shapes compiler compiled no case: the attack did not run")
			}
		})
	}
}

func TestHalfCompilerKeepsItsHonestPasses(t *testing.T) {
	tests := testsDir(t)
	for _, provider := range evidenceProviders(t) {
		t.Run(provider, func(t *testing.T) {
			fx := fixturesFor(t, provider, tests)
			stub := evalWith(t, provider, fx, halfBuild("exit0"), evidencePaths)
			refuse := evalWith(t, provider, fx, halfBuild("refuse"), evidencePaths)
			gcc := evalWith(t, provider, fx, gccBuild, evidencePaths)
			var kept, full int
			for i, path := range evidencePaths {
				t.Logf("%s: half with exit 0 %d, refusing %d, gcc %d of %d", path, stub[i].Passed, refuse[i].Passed, gcc[i].Passed, gcc[i].Total)
				if a, b := passed(stub[i], true), passed(refuse[i], true); a != b {
					t.Errorf("%s: the guarded runnable cases score %d with exit 0 for the other half, %d refusing it", path, a, b)
				}
				if stub[i].Passed > refuse[i].Passed {
					t.Errorf("%s: exit 0 for the other half scores %d, more than refusing it (%d)", path, stub[i].Passed, refuse[i].Passed)
				}
				if len(refuse[i].Voided) > 0 || len(stub[i].Voided) > 0 {
					t.Errorf("%s: a suite was voided", path)
				}
				kept += refuse[i].Passed
				full += gcc[i].Passed
				// The gcc wrapper: every program it builds behaves, nonce
				// included; it fails only what gcc refuses as written (a
				// few wacct cases that need an assembly file or a helper
				// loaded as a case: TestNonceKeepsMeaning checks the
				// rewrite never makes gcc refuse) and the invalid programs
				// it accepts.
				for _, c := range gcc[i].Cases {
					refused := c.Phase == environment.PhaseCompile && strings.HasPrefix(c.Error, "compile exited")
					if !c.Passed && !refused && !strings.Contains(c.Error, "accepted an invalid program") {
						t.Errorf("gcc wrapper fails %s: %s", c.Name, c.Error)
					}
				}
			}
			if kept*10 < full*4 {
				t.Errorf("the half compiler keeps %d of gcc's %d passes, under 40 %%", kept, full)
			}
		})
	}
}

// Three evaluations of one artifact (no cache) give the same result,
// case by case; the store's secret, not a draw, sets the nonces.
func TestOneArtifactOneScore(t *testing.T) {
	needBwrap(t)
	tests := testsDir(t)
	var first []environment.Result
	for round := range 3 {
		rs := evalWith(t, sandbox.ProviderBwrap, tests, halfBuild("exit0"), evidencePaths)
		if round == 0 {
			first = rs
			continue
		}
		for i := range rs {
			for j, c := range rs[i].Cases {
				if c.Name != first[i].Cases[j].Name || c.Passed != first[i].Cases[j].Passed {
					t.Errorf("evaluation %d: %s passed %v, first evaluation %v", round+1, c.Name, c.Passed, first[i].Cases[j].Passed)
				}
			}
		}
	}
}

// trimmedFixtures copies the first few cases of each public suite, with
// the wacct chapter 1 programs and expectation files whole.
func trimmedFixtures(t *testing.T, public string) string {
	t.Helper()
	dst := t.TempDir()
	copyFile := func(rel string) {
		b, err := os.ReadFile(filepath.Join(public, rel))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, rel), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	firstC := func(dir string, n int) []string {
		ents, err := os.ReadDir(filepath.Join(public, dir))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range ents {
			if len(out) < n && strings.HasSuffix(e.Name(), ".c") {
				out = append(out, filepath.Join(dir, e.Name()))
			}
		}
		return out
	}
	for _, c := range firstC("c-testsuite/tests/single-exec", 3) {
		copyFile(c)
		copyFile(c + ".expected")
	}
	for _, c := range firstC("torture/SingleSource/Regression/C/gcc-c-torture/execute", 3) {
		copyFile(c)
	}
	for _, dir := range []string{"wacct/tests/chapter_1/valid", "wacct/tests/chapter_1/invalid_parse"} {
		for _, c := range firstC(dir, 3) {
			copyFile(c)
		}
	}
	copyFile("wacct/expected_results.json")
	copyFile("wacct/test_properties.json")
	return dst
}
