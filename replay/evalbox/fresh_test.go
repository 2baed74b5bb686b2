package evalbox_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/trajlab/traj/environment"
)

// freshExpectations evaluates dir's fresh suite in bwrap, showing each
// compile ./cc alone, and returns each case's expected exit code and
// whether it passed.
func freshExpectations(t *testing.T, secret, build, notes string) (string, environment.Result) {
	t.Helper()
	ev := artifactEvaluator(t, nil)
	ev.Secret = []byte(secret)
	p, err := ev.EvaluateDetailed(context.Background(), artifactTree(t, build, notes), []string{"fresh"})
	if err != nil {
		t.Fatal(err)
	}
	r := p.Runs[0]
	var b strings.Builder
	for _, c := range r.Cases {
		fmt.Fprintf(&b, "%s=%d ", c.Name, *c.ExpectedExitCode)
	}
	return b.String(), r
}

// TestFreshFollowsArtifacts: in bwrap with artifacts, the fresh programs
// follow the secret and the artifacts' digest: trees that build the same
// ./cc get the same programs (one artifact, one score), another ./cc or
// another secret gets others; the gcc wrapper passes them all.
func TestFreshFollowsArtifacts(t *testing.T) {
	needBwrap(t)
	a, ra := freshExpectations(t, "s1", gccBuild, "plan A")
	if ra.Total == 0 || ra.Passed != ra.Total {
		t.Fatalf("gcc wrapper: %d/%d passed: %v", ra.Passed, ra.Total, ra.Cases)
	}
	b, rb := freshExpectations(t, "s1", gccBuild, "plan B, other notes")
	if a != b || rb.Passed != ra.Passed {
		t.Errorf("the same ./cc got other programs or another score (%d, %d)", ra.Passed, rb.Passed)
	}
	other, _ := freshExpectations(t, "s1", strings.Replace(gccBuild, "exec gcc", "true\\nexec gcc", 1), "plan A")
	secret, _ := freshExpectations(t, "s2", gccBuild, "plan A")
	if other == a || secret == a {
		t.Errorf("another ./cc (%v) or another secret (%v) got the same programs", other == a, secret == a)
	}
}

// shapeBuild makes a ./cc that interprets one shape, `int main(void) {
// return <constant integer expression>; }` (gcc stands for its
// evaluator), and emits a program exiting 0 for anything else.
const shapeBuild = `cat > cc <<'EOF'
#!/bin/sh
srcs=""; out=a.out
while [ $# -gt 0 ]; do
  case "$1" in -o) out=$2; shift ;; *) srcs="$srcs $1" ;; esac
  shift
done
set -- $srcs
if [ $# = 1 ] && tr '\n' ' ' < "$1" | grep -Eq '^ *int +main *\( *void *\) *\{ *return [-0-9 ()+*/%<>=!&|^~]+; *\} *$'; then
  exec gcc -w "$1" -o "$out"
fi
printf 'int main(void){return 0;}\n' | gcc -x c - -o "$out"
EOF
chmod +x cc
`

// TestFreshShapeCompilerInSandbox: evaluated as ground truth and replay
// evaluate do (bwrap, ./cc shown alone), the shape compiler with an
// exit-0 fallback passes level 1's programs and nothing else.
func TestFreshShapeCompilerInSandbox(t *testing.T) {
	needBwrap(t)
	_, r := freshExpectations(t, "s1", shapeBuild, "")
	byLevel := map[string]int{}
	for _, c := range r.Cases {
		if c.Passed {
			byLevel[strings.Split(c.Name, "/")[1]]++
		}
	}
	if r.Passed > r.Total/4 || byLevel["level_1"] != r.Total/4 {
		t.Errorf("shape compiler: %d/%d passed (by level %v), want exactly level 1's %d", r.Passed, r.Total, byLevel, r.Total/4)
	}
}
