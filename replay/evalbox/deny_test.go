package evalbox_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trajlab/traj/sandbox"
)

// carriedCC is the attack on deny_c_compiler: a ./cc carrying gcc's
// driver, cc1 and collect2 (a gzip tar after its __PAYLOAD__ line) runs
// them at compile time wherever it can: unpacked into every place it may
// write (then `gcc -B`), through ld.so, or from memfd_create files (perl's
// syscall). ROUTE=dir or ROUTE=memfd tries one route only (the control).
const carriedCC = `#!/bin/sh
out=; src=
for a; do case "$prev" in -o) out=$a ;; esac; case "$a" in *.c) src=$a ;; esac; prev=$a; done
[ -n "$out" ] && [ -n "$src" ] || { echo "usage: cc input.c -o output" >&2; exit 1; }
self=$0
sys=$(dirname "$(ls /usr/lib/gcc/*/*/crtbeginS.o | head -n1)")/
skip=$(grep -a -n -m1 '^__PAYLOAD__$' "$self" | cut -d: -f1)
unpack() { mkdir -p "$1" 2>/dev/null && tail -n +$((skip+1)) "$self" | tar xzf - -C "$1" 2>/dev/null; }
if [ "${ROUTE:-dir}" = dir ]; then
  for base in "${TMPDIR:-/tmp}" /tmp /dev/shm "$HOME" "$(dirname "$out")" "$PWD" /var/tmp /run /dev; do
    d=$base/.carried$$
    unpack "$d" || continue
    if "$d/gcc" -B"$d/" -B"$sys" -fno-use-linker-plugin -w "$src" -o "$out" 2>/dev/null; then echo "carried copy ran from $base" >&2; exit 0; fi
    if /lib64/ld-linux-x86-64.so.2 "$d/gcc" -B"$d/" -B"$sys" -fno-use-linker-plugin -w "$src" -o "$out" 2>/dev/null; then echo "carried copy ran through ld.so from $base" >&2; exit 0; fi
    echo "route $base: no" >&2
  done
fi
if [ "${ROUTE:-memfd}" = memfd ]; then
  for base in "${TMPDIR:-/tmp}" /dev/shm "$HOME" "$(dirname "$out")"; do
    d=$base/.memfd$$
    unpack "$d" || continue
    perl -e '
      my ($d, $src, $out, $sys) = @ARGV;
      $^F = 1000; # keep the memfds open across exec
      my (%fd, @keep);
      for my $n ("gcc", "cc1", "collect2") {
        my $label = "carried"; my $fd = syscall(319, $label, 0);
        die "memfd_create: $!\n" if $fd < 0;
        open(my $w, ">&=", $fd) or die; open(my $r, "<", "$d/$n") or die; binmode $r; binmode $w;
        local $/; print {$w} <$r>; close $r; $w->flush; $fd{$n} = $fd; push @keep, $w;
        unlink "$d/$n"; symlink("/proc/$$/fd/$fd", "$d/$n") or die;
      }
      exec("/proc/$$/fd/$fd{gcc}", "-B$d/", "-B$sys", "-fno-use-linker-plugin", "-w", $src, "-o", $out) or die "exec: $!\n";' "$d" "$src" "$out" "$sys" && { echo "carried copy ran from memfd" >&2; exit 0; }
    echo "route memfd ($base): no" >&2
  done
fi
echo "no route ran the carried compiler" >&2
exit 1
__PAYLOAD__
`

// TestDenyCCompilerCarriedCopy: a ./cc carrying a copy of gcc's front end
// (committed into the tree; build.sh first tries to copy one from the
// build's room) scores 0 under deny_c_compiler in bwrap and in a
// container: no room shows a compiler to copy, nothing written can be
// executed or mapped executable, and memfd_create is refused. The
// control: the same ./cc on the host compiles and runs a case by each
// route.
func TestDenyCCompilerCarriedCopy(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc is needed")
	}
	payload := filepath.Join(t.TempDir(), "payload")
	if err := os.Mkdir(payload, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, prog := range map[string]string{"gcc": "", "cc1": "cc1", "collect2": "collect2"} {
		src := gcc
		if prog != "" {
			out, err := exec.Command(gcc, "-print-prog-name="+prog).Output()
			if err != nil {
				t.Fatal(err)
			}
			src = strings.TrimSpace(string(out))
		}
		if src, err = filepath.EvalSymlinks(src); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("cp", src, filepath.Join(payload, name)).CombinedOutput(); err != nil {
			t.Fatalf("cp %s: %v\n%s", src, err, out)
		}
	}
	dir := tree(t, "#!/bin/sh\nfor f in /usr/lib/gcc/*/*/cc1; do [ -s \"$f\" ] && echo \"the build room shows $f\"; done\ncat cc.sh payload.tgz > cc && chmod +x cc\n")
	if err := os.WriteFile(filepath.Join(dir, "cc.sh"), []byte(carriedCC), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("tar", "czf", filepath.Join(dir, "payload.tgz"), "-C", payload, ".").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}

	// The control, on the host: each route compiles a program that runs.
	host := t.TempDir()
	if out, err := exec.Command("sh", "-c", "cd "+dir+" && cat cc.sh payload.tgz > "+host+"/cc && chmod +x "+host+"/cc").CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(host, "t.c"), []byte("int main(void){return 42;}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, route := range []string{"dir", "memfd"} {
		cmd := exec.Command(filepath.Join(host, "cc"), filepath.Join(host, "t.c"), "-o", filepath.Join(host, route))
		cmd.Env = append(os.Environ(), "ROUTE="+route, "TMPDIR="+host)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("control: route %s did not compile on the host: %v\n%s", route, err, out)
		}
		if err := exec.Command(filepath.Join(host, route)).Run(); err == nil || err.(*exec.ExitError).ExitCode() != 42 {
			t.Fatalf("control: route %s's program: %v, want exit 42", route, err)
		}
	}

	for _, provider := range []string{sandbox.ProviderBwrap, sandbox.ProviderContainer} {
		t.Run(provider, func(t *testing.T) {
			needProvider(t, provider)
			ev := evaluator(t, provider, "")
			ev.DenyCCompiler = true
			r := run(t, ev, dir, "basics/smoke")[0]
			if !r.Build.OK || strings.Contains(r.Build.StderrTail, "the build room shows") {
				t.Fatalf("build: %+v", r.Build)
			}
			if r.Passed != 0 {
				t.Errorf("the carried copy passed %d of %d", r.Passed, r.Total)
			}
			for _, c := range r.Cases {
				if strings.Contains(c.StderrTail, "carried copy ran") {
					t.Errorf("%s: %s", c.Name, c.StderrTail)
				}
			}
			if len(r.Cases) > 0 {
				t.Logf("%s: %s", r.Cases[0].Name, r.Cases[0].StderrTail)
			}
		})
	}
}

// needProvider skips without the provider's sandbox.
func needProvider(t *testing.T, provider string) {
	t.Helper()
	switch provider {
	case sandbox.ProviderBwrap:
		needBwrap(t)
	case sandbox.ProviderContainer:
		if _, err := sandbox.ContainerWorks(context.Background(), "", ""); err != nil {
			t.Skipf("container: %v", err)
		}
	}
}
