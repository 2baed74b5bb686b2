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
