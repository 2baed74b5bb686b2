package evalbox_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/trajlab/traj/sandbox"
)

var digits = regexp.MustCompile(`[0-9]+`)

// sandboxes are the providers that evaluate untrusted trees here: bwrap
// and container, each skipped where it cannot run.
func sandboxes(t *testing.T, f func(t *testing.T, provider string)) {
	for _, provider := range []string{sandbox.ProviderBwrap, sandbox.ProviderContainer} {
		t.Run(provider, func(t *testing.T) {
			switch provider {
			case sandbox.ProviderBwrap:
				needBwrap(t)
			case sandbox.ProviderContainer:
				if _, err := sandbox.ContainerWorks(context.Background(), "", ""); err != nil {
					t.Skipf("container: %v", err)
				}
			}
			f(t, provider)
		})
	}
}

// A ./cc (or build.sh) that is a link out of the tree is no oracle of
// the host: traj looks at the built tree as root, and a link to an
// existing host file (/etc/shadow, traj's own binary, a folder) gets the
// same build error as a link to a missing one, with and without the
// task's artifacts. A compile that leaves its program as such a link
// fails the same way too.
func TestTreeLinksAreNoHostOracle(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	targets := []string{"/etc/shadow", self, "/etc", "/no/such/file", "/etc/no-such-file",
		"../../../../../../../../etc/shadow", "../../../../../../../../no/such/file"}
	sandboxes(t, func(t *testing.T, provider string) {
		for _, artifacts := range [][]string{nil, {"cc"}} {
			ev := evaluator(t, provider, "")
			ev.Artifacts = artifacts
			errs := map[string][]string{}
			for _, target := range targets {
				for _, what := range []string{"cc", "build.sh"} {
					dir := tree(t, "ln -s '"+target+"' cc\n")
					if what == "build.sh" {
						if err := os.Remove(dir + "/build.sh"); err != nil {
							t.Fatal(err)
						}
						if err := os.Symlink(target, dir+"/build.sh"); err != nil {
							t.Fatal(err)
						}
					}
					r := run(t, ev, dir, "basics/smoke")[0]
					if r.Build.OK || r.Passed != 0 {
						t.Errorf("%s -> %s: built %v, passed %d", what, target, r.Build.OK, r.Passed)
					}
					errs[what] = append(errs[what], r.Build.Error)
				}
			}
			for what, list := range errs {
				for i, e := range list {
					if e != list[0] {
						t.Errorf("artifacts %v: %s -> %s: error %q, but -> %s: %q", artifacts, what, targets[i], e, targets[0], list[0])
					}
				}
			}
			t.Logf("artifacts %v: %q", artifacts, errs)
		}
		// The compile leaves prog as a link to each target: the case fails
		// the same way whatever the link names.
		build := "cat > cc <<'EOF'\n#!/bin/sh\nwhile [ $# -gt 0 ]; do [ \"$1\" = -o ] && o=$2; shift; done\n" +
			"ln -s \"$(cat /workspace/target)\" \"$o\"\nexit 0\nEOF\nchmod +x cc\n"
		var first string
		for i, target := range targets {
			dir := tree(t, build)
			if err := os.WriteFile(dir+"/target", []byte(target), 0o644); err != nil {
				t.Fatal(err)
			}
			r := run(t, evaluator(t, provider, ""), dir, "basics/smoke")[0]
			var got []string
			for _, c := range r.Cases {
				got = append(got, c.Phase+": "+c.Error)
			}
			// The controls' exit codes are drawn per evaluation.
			s := digits.ReplaceAllString(strings.Join(got, "\n"), "#")
			if r.Passed != 0 {
				t.Errorf("prog -> %s: %d passed", target, r.Passed)
			}
			if i == 0 {
				first = s
			} else if s != first {
				t.Errorf("prog -> %s:\n%s\nbut -> %s:\n%s", target, s, targets[0], first)
			}
		}
	})
}
