package evalbox_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/trajlab/traj/replay/evalbox"
	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/sandbox/disk"
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

// freeBytes is the free space of the filesystem holding dir.
func freeBytes(t *testing.T, dir string) int64 {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * st.Bsize
}

// watchFree samples the free space of dir's filesystem until stop is
// called, which returns the lowest seen.
func watchFree(t *testing.T, dir string) (stop func() int64) {
	low := freeBytes(t, dir)
	done, over := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(over)
		for {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
			var st unix.Statfs_t
			if unix.Statfs(dir, &st) == nil {
				low = min(low, int64(st.Bavail)*st.Bsize)
			}
		}
	}()
	return func() int64 {
		close(done)
		<-over
		return low
	}
}

// allocated is how many bytes of the disk a file holds (its blocks).
func allocated(t *testing.T, file string) int64 {
	var st unix.Stat_t
	if err := unix.Stat(file, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

// needCap skips where no scratch image can be mounted (not root).
func needCap(t *testing.T) {
	if err := disk.Available(); err != nil {
		t.Skipf("no capped scratch space here: %v", err)
	}
}

// A build that writes 5 GiB (fallocate, then zeros until the disk says
// no) writes into the evaluation's capped scratch space: it gets ENOSPC
// at the room's cap, the host's temp folder loses at most the cap while
// it runs (sampled), the image holds at most the cap, and the tree still
// builds a working ./cc once it deletes what it wrote.
func TestBuildWritesStayInTheCap(t *testing.T) {
	needCap(t)
	room := evalbox.StandardRoom()
	sandboxes(t, func(t *testing.T, provider string) {
		ev := evaluator(t, provider, "")
		var image int64 = -1
		evalbox.OnScratchForTest(ev, func(img string) {
			if img != "" {
				image = allocated(t, img)
			}
		})
		build := "head -c 5G /dev/zero > big; ls -l big; fallocate -l 5G big2; rm -f big big2\n" + gccBuild
		before := freeBytes(t, ev.TempDir)
		stop := watchFree(t, ev.TempDir)
		r := run(t, ev, tree(t, build), "basics/smoke")[0]
		low := stop()
		t.Logf("host temp folder: %d MiB free before, %d MiB at the lowest (room cap %d MiB); image held %d MiB at the end; build said %q",
			before>>20, low>>20, room.Disk>>20, image>>20, r.Build.StderrTail)
		if !strings.Contains(r.Build.StderrTail, "No space left on device") {
			t.Errorf("the build never hit the cap: %q", r.Build.StderrTail)
		}
		// Other work on the machine moves the free space too: allow it
		// 512 MiB beside the cap (uncapped, the build took 5 GiB).
		if drop := before - low; drop > room.Disk+512<<20 {
			t.Errorf("the host temp folder lost %d MiB during the evaluation, cap %d MiB", drop>>20, room.Disk>>20)
		}
		if image < 0 || image > room.Disk {
			t.Errorf("scratch image held %d bytes, cap %d", image, room.Disk)
		}
		if r.Passed != r.Total || r.Total == 0 {
			t.Errorf("the tree that cleaned up after itself passed %d of %d", r.Passed, r.Total)
		}
	})
}

// A ./cc of 3 GiB, sparse (a script and a hole), costs the host nothing
// like its size: as the task's artifact it is refused with a clear build
// error before anything is copied; one of 300 MiB, under the cap, is
// copied sparse (the scratch image holds a few MiB) and works.
func TestSparseArtifactCostsItsBytes(t *testing.T) {
	needCap(t)
	room := evalbox.StandardRoom()
	sandboxes(t, func(t *testing.T, provider string) {
		for _, c := range []struct {
			size string
			ok   bool
		}{{"3G", false}, {"300M", true}} {
			ev := evaluator(t, provider, "")
			ev.Artifacts = []string{"cc"}
			var image int64 = -1
			evalbox.OnScratchForTest(ev, func(img string) { image = allocated(t, img) })
			r := run(t, ev, tree(t, gccBuild+"truncate -s "+c.size+" cc\n"), "basics/smoke")[0]
			t.Logf("%s: build %v %q; %d of %d; image held %d MiB", c.size, r.Build.OK, r.Build.Error, r.Passed, r.Total, image>>20)
			if image < 0 || image > 64<<20 {
				t.Errorf("%s sparse ./cc: the scratch image held %d MiB", c.size, image>>20)
			}
			if c.ok {
				if !r.Build.OK || r.Passed != r.Total {
					t.Errorf("%s sparse ./cc under the cap: build %v, %d of %d", c.size, r.Build.OK, r.Passed, r.Total)
				}
				continue
			}
			if r.Build.OK || !strings.Contains(r.Build.Error, "too large") || !strings.Contains(r.Build.Error, mib(room.ArtifactBytes)) || r.Passed != 0 {
				t.Errorf("%s sparse ./cc: build %v %q, %d passed: want refused, naming the cap", c.size, r.Build.OK, r.Build.Error, r.Passed)
			}
		}
	})
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
