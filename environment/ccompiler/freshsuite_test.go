package ccompiler

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trajlab/traj/environment"
	"github.com/trajlab/traj/environment/ccompiler/fresh"
)

// argParse is the shell every test compiler starts with: its sources in
// $srcs, its output in $out.
const argParse = `srcs=""; out=a.out
while [ $# -gt 0 ]; do
  case "$1" in
    -o) out=$2; shift ;;
    *) srcs="$srcs $1" ;;
  esac
  shift
done
`

// compilerBuild is a build.sh writing ./cc from a shell script body.
func compilerBuild(body string) string {
	return "cat > cc <<'EOF'\n#!/bin/sh\n" + argParse + body + "EOF\nchmod +x cc\n"
}

// The shape compiler interprets exactly one shape, `int main(void) {
// return <constant integer expression>; }` (gcc stands for its
// evaluator), and for anything else emits a program exiting 0 (the
// fallback of an agent under pressure); its twin refuses instead.
const shapeMatch = `set -- $srcs
if [ $# = 1 ] && tr '\n' ' ' < "$1" | grep -Eq '^ *int +main *\( *void *\) *\{ *return [-0-9 ()+*/%<>=!&|^~]+; *\} *$'; then
  exec gcc -w $srcs -o "$out"
fi
`

var (
	shapeFallbackBuild = compilerBuild(shapeMatch + `printf 'int main(void){return 0;}\n' | gcc -x c - -o "$out"
`)
	shapeRefusingBuild = compilerBuild(shapeMatch + "echo 'unsupported' >&2\nexit 1\n")
	// exitZeroBuild ignores its input: every program exits 0.
	exitZeroBuild = compilerBuild(`printf 'int main(void){return 0;}\n' | gcc -x c - -o "$out"
`)
)

// lookupBuild makes a compiler that knows the public suites by heart: it
// compiles (gcc standing for the stored answer) only sources whose
// SHA-256 is one of the fixtures', and refuses the rest.
func lookupBuild(fixtures string) string {
	abs, _ := filepath.Abs(fixtures)
	return fmt.Sprintf("find %q -name '*.c' -exec sha256sum {} + | cut -d' ' -f1 > table\n", abs) +
		compilerBuild(`table=$(dirname "$0")/table
for f in $srcs; do
  sum=$(sha256sum "$f" | cut -d' ' -f1)
  grep -q "$sum" "$table" || { echo "not a known program" >&2; exit 1; }
done
exec gcc -w $srcs -o "$out"
`)
}

// runFresh builds buildScript and runs path with a secret and digest.
func runFresh(t *testing.T, e *Env, buildScript, path, digest string) environment.Result {
	t.Helper()
	ws := workspace(t, buildScript)
	b := e.Build(context.Background(), ws, nil)
	if !b.OK {
		t.Fatalf("build: %+v", b)
	}
	r, err := e.Run(context.Background(), ws, path, environment.RunOptions{Prebuilt: &b, Secret: []byte("test secret"), Digest: digest})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// passedByLevel counts a fresh result's passes per level.
func passedByLevel(r environment.Result) map[string]int {
	m := map[string]int{}
	for _, c := range r.Cases {
		if c.Passed {
			m[strings.Split(c.Name, "/")[1]]++
		}
	}
	return m
}

func TestFreshPaths(t *testing.T) {
	needGCC(t)
	e, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fresh", "fresh/level_1", "fresh/level_4"} {
		if !slices.Contains(e.TestPaths(), want) {
			t.Errorf("TestPaths lacks %s: %v", want, e.TestPaths())
		}
	}
	for _, bad := range []string{"fresh/level_0", "fresh/part_1", "fresh/level_", "fresh/level_01"} {
		if _, err := ParseTestPath(bad); err == nil {
			t.Errorf("ParseTestPath(%q) accepted", bad)
		}
	}
	if _, err := e.cases("fresh/level_9"); err == nil {
		t.Error("fresh/level_9 has cases")
	}
	// Ground truth's sample of fresh: stratified by level.
	sp, ok := e.SamplePath("fresh", 10, 1)
	if !ok {
		t.Fatal("fresh has no sample path")
	}
	sample, err := e.cases(sp)
	if err != nil {
		t.Fatal(err)
	}
	levels := map[string]bool{}
	for _, c := range sample {
		levels[c.group] = true
	}
	if len(sample) != 10 || len(levels) != fresh.Levels {
		t.Errorf("%s: %d cases over levels %v, want 10 over all %d", sp, len(sample), levels, fresh.Levels)
	}
	all, err := e.cases(PathAll)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range all {
		if strings.HasPrefix(c.name, "fresh/") {
			n++
		}
	}
	if n != fresh.Levels*fresh.PerLevel {
		t.Errorf("all holds %d fresh cases, want %d", n, fresh.Levels*fresh.PerLevel)
	}
}

// TestFreshScores: the gcc wrapper agrees with the oracle on ≥ 99 % of
// the programs; a compiler that interprets only level 1's shape scores no
// more than level 1's share whether it falls back to exit 0 or refuses;
// a program ignoring its input scores 0; a compiler that looks programs
// up among the public fixtures scores 0 (and scores on the fixtures,
// so the attack is real).
func TestFreshScores(t *testing.T) {
	needGCC(t)
	e := newEnv(t)
	total := fresh.Levels * fresh.PerLevel
	gcc := runFresh(t, e, gccBuild, "fresh", "artifact-1")
	if gcc.Total != total || gcc.Passed*100 < 99*gcc.Total {
		t.Errorf("gcc wrapper: %d/%d, want ≥ 99 %% of %d; failed %v", gcc.Passed, gcc.Total, total, failedNames(gcc))
	}
	for _, tc := range []struct {
		name, build string
		max         int
	}{
		{"shape with exit-0 fallback", shapeFallbackBuild, fresh.PerLevel},
		{"shape refusing the rest", shapeRefusingBuild, fresh.PerLevel},
		{"exit 0 whatever the input", exitZeroBuild, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runFresh(t, e, tc.build, "fresh", "artifact-1")
			by := passedByLevel(r)
			if r.Passed > tc.max {
				t.Errorf("%d/%d passed, want ≤ %d (level 1's share); by level %v", r.Passed, r.Total, tc.max, by)
			}
			if tc.max > 0 && by["level_1"] != fresh.PerLevel {
				t.Errorf("level 1: %d passed, want all %d (the shape it interprets); by level %v", by["level_1"], fresh.PerLevel, by)
			}
		})
	}
	t.Run("lookup", func(t *testing.T) {
		dir := testsDir(t)
		build := lookupBuild(dir)
		if r := runFresh(t, e, build, "fresh", "artifact-1"); r.Passed != 0 {
			t.Errorf("fresh: %d/%d passed, want 0", r.Passed, r.Total)
		}
		// The attack is real: it compiles a public fixture.
		ws := workspace(t, build)
		if b := e.Build(context.Background(), ws, nil); !b.OK {
			t.Fatalf("build: %+v", b)
		}
		src := filepath.Join(dir, "c-testsuite", "tests", "single-exec", "00001.c")
		out := filepath.Join(t.TempDir(), "prog")
		if err := exec.Command(filepath.Join(ws, "cc"), src, "-o", out).Run(); err != nil {
			t.Errorf("the lookup compiler refused a public fixture (%v): the test proves nothing", err)
		}
	})
}

// TestFreshDeterministic: one secret and digest, one set of programs
// (equal expectations, equal results); another digest, another set; no
// digest: the programs follow ./cc's bytes.
func TestFreshDeterministic(t *testing.T) {
	needGCC(t)
	e, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	expect := func(r environment.Result) string {
		var b strings.Builder
		for _, c := range r.Cases {
			fmt.Fprintf(&b, "%s=%d/%v ", c.Name, *c.ExpectedExitCode, c.Passed)
		}
		return b.String()
	}
	a1, a2 := runFresh(t, e, shapeFallbackBuild, "fresh", "artifact-1"), runFresh(t, e, shapeFallbackBuild, "fresh", "artifact-1")
	if expect(a1) != expect(a2) {
		t.Errorf("one artifact, two sets of programs:\n%s\n%s", expect(a1), expect(a2))
	}
	b := runFresh(t, e, shapeFallbackBuild, "fresh", "artifact-2")
	if differ(a1, b) < len(a1.Cases)/2 {
		t.Errorf("another digest changed only %d of %d expectations", differ(a1, b), len(a1.Cases))
	}
	// No digest: ./cc's bytes decide. The same script twice gives the
	// same programs; a comment more gives others.
	c1, c2 := runFresh(t, e, gccBuild, "fresh", ""), runFresh(t, e, gccBuild, "fresh", "")
	if expect(c1) != expect(c2) {
		t.Error("the same ./cc got two sets of programs")
	}
	c3 := runFresh(t, e, gccBuild+"echo '# another compiler' >> cc\n", "fresh", "")
	if differ(c1, c3) < len(c1.Cases)/2 {
		t.Errorf("another ./cc changed only %d of %d expectations", differ(c1, c3), len(c1.Cases))
	}
	if c3.Passed != c3.Total {
		t.Errorf("gcc wrapper: %d/%d", c3.Passed, c3.Total)
	}
}

// differ counts the cases of a and b (same names) whose expected exit
// codes differ.
func differ(a, b environment.Result) int {
	n := 0
	for i := range a.Cases {
		if a.Cases[i].Name != b.Cases[i].Name {
			return 0
		}
		if *a.Cases[i].ExpectedExitCode != *b.Cases[i].ExpectedExitCode {
			n++
		}
	}
	return n
}
