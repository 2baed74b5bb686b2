package fresh

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func needGCC(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
}

func generateT(t testing.TB, seed []byte, o Options) []Program {
	t.Helper()
	ps, err := Generate(context.Background(), seed, o)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

func TestSeed(t *testing.T) {
	a := Seed([]byte("secret"), "digest-1")
	for _, tc := range []struct {
		name   string
		secret string
		digest string
		same   bool
	}{
		{"same inputs", "secret", "digest-1", true},
		{"other digest", "secret", "digest-2", false},
		{"other secret", "secret2", "digest-1", false},
		{"no secret", "", "digest-1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := bytes.Equal(Seed([]byte(tc.secret), tc.digest), a); got != tc.same {
				t.Errorf("Seed(%q, %q) equal to Seed(secret, digest-1): %v, want %v", tc.secret, tc.digest, got, tc.same)
			}
		})
	}
}

// TestDeterministic: the same seed gives the same programs and
// expectations; another seed gives other programs under the same names.
func TestDeterministic(t *testing.T) {
	needGCC(t)
	s1, s2 := Seed([]byte("k"), "tree-a"), Seed([]byte("k"), "tree-b")
	a, b, c := generateT(t, s1, Options{}), generateT(t, s1, Options{}), generateT(t, s2, Options{})
	if len(a) != Levels*PerLevel {
		t.Fatalf("%d programs, want %d", len(a), Levels*PerLevel)
	}
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Error("the same seed gave other programs")
	}
	same := 0
	for i := range a {
		if a[i].Name != c[i].Name {
			t.Fatalf("program %d: name %s, another seed's %s", i, a[i].Name, c[i].Name)
		}
		if a[i].Source == c[i].Source {
			same++
		}
	}
	// Two level-1 programs may coincide by chance; more is a seed not used.
	if same > 2 {
		t.Errorf("%d of %d programs are the same for two seeds", same, len(a))
	}
}

// TestProgramsAreDefined compiles many seeds' programs with gcc's
// undefined-behaviour and address sanitizers (every program of a seed in
// one executable, as the oracle does) and runs them: a generator rule
// that lets an overflow, a bad shift, a division by zero or an
// out-of-bounds index through fails here.
func TestProgramsAreDefined(t *testing.T) {
	needGCC(t)
	dir := t.TempDir()
	for n := range 6 {
		seed := Seed(nil, fmt.Sprintf("ub-%d", n))
		var srcs []string
		var live []int
		for l := 1; l <= Levels; l++ {
			for i := range PerLevel {
				srcs = append(srcs, candidate(seed, slot{level: l, index: i}))
				live = append(live, len(live))
			}
		}
		src := filepath.Join(dir, fmt.Sprintf("ub%d.c", n))
		if err := os.WriteFile(src, []byte(batchSource(srcs, live)), 0o644); err != nil {
			t.Fatal(err)
		}
		bin := strings.TrimSuffix(src, ".c")
		out, err := exec.Command("gcc", "-w", "-O1", "-fsanitize=undefined,address", "-fno-sanitize-recover=all", "-o", bin, src).CombinedOutput()
		if err != nil {
			t.Fatalf("seed %d: gcc: %v\n%s", n, err, out)
		}
		run := exec.Command(bin)
		var stdout, stderr bytes.Buffer
		run.Stdout, run.Stderr = &stdout, &stderr
		if err := run.Run(); err != nil {
			t.Fatalf("seed %d: a program is not well defined: %v\n%s", n, err, stderr.String())
		}
		if got := len(parseBatch(stdout.String())); got != len(live) {
			t.Errorf("seed %d: %d programs finished, want %d", n, got, len(live))
		}
	}
}

// TestOracleMatchesStandalone: what the oracle's batch says a program
// gives is what the program gives compiled alone, as ./cc sees it.
func TestOracleMatchesStandalone(t *testing.T) {
	needGCC(t)
	dir := t.TempDir()
	ps := generateT(t, Seed([]byte("k"), "standalone"), Options{})
	for i, p := range ps {
		if i%3 != 0 {
			continue // a third of them: gcc per program is slow here
		}
		src := filepath.Join(dir, fmt.Sprintf("p%d.c", i))
		if err := os.WriteFile(src, []byte(p.Source), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("gcc", "-o", src+".bin", src).CombinedOutput(); err != nil {
			t.Fatalf("%s: gcc: %v\n%s", p.Name, err, out)
		}
		cmd := exec.Command(src + ".bin")
		out, _ := cmd.Output()
		if code := cmd.ProcessState.ExitCode(); code != p.ExitCode || string(out) != p.Stdout {
			t.Errorf("%s: alone exit %d stdout %q, oracle %d %q", p.Name, code, out, p.ExitCode, p.Stdout)
		}
		if p.ExitCode == 0 && p.Stdout == "" {
			t.Errorf("%s: expects what a program ignoring its input does (exit 0, no output)", p.Name)
		}
	}
}

// TestLevelFeatures: each level uses only its features.
func TestLevelFeatures(t *testing.T) {
	level1 := regexp.MustCompile(`^int main\(void\) \{\n    return [0-9 ()+\-*/%<>=!&|^~?:]+;\n\}\n$`)
	for n := range 20 {
		seed := Seed(nil, fmt.Sprintf("features-%d", n))
		for l := 1; l <= Levels; l++ {
			src := render(candidate(seed, slot{level: l, index: n % PerLevel}), "")
			has := func(s string) bool { return strings.Contains(src, s) }
			var bad []string
			switch l {
			case 1:
				if !level1.MatchString(src) {
					bad = append(bad, "not one return of a constant expression")
				}
				if !strings.ContainsAny(strings.Split(src, "\n")[1], "+-*/%<>=!&|^~") {
					bad = append(bad, "no operator")
				}
			case 2:
				if has("[") || has("struct") || strings.Count(src, "(void) {") != 1 || strings.Count(src, "int main") != 1 {
					bad = append(bad, "arrays, structs or functions")
				}
				if !has("int v") {
					bad = append(bad, "no local")
				}
			case 3:
				if has("struct") || has("->") || has("int *") {
					bad = append(bad, "structs or pointers")
				}
				if !has("[") {
					bad = append(bad, "no array")
				}
			case 4:
				if !has("struct") || !has("->") || !has("int *") {
					bad = append(bad, "no struct or pointer")
				}
			}
			if has("?") && l == 1 {
				bad = append(bad, "a conditional at level 1")
			}
			if len(bad) > 0 {
				t.Errorf("level %d (seed %d): %v\n%s", l, n, bad, src)
			}
		}
	}
}

// TestOracleDropsRefused: a program gcc refuses is dropped and its slot
// generated again. The refusal is injected by a gcc wrapper (a fake for
// failure injection) that fails any file holding that program's return
// line.
func TestOracleDropsRefused(t *testing.T) {
	needGCC(t)
	dir := t.TempDir()
	seed := Seed(nil, "refused")
	first := render(candidate(seed, slot{level: 1, index: 3}), "")
	ret := strings.Split(first, "\n")[1]
	if err := os.WriteFile(filepath.Join(dir, "refuse.txt"), []byte(ret+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fake := filepath.Join(dir, "gcc-refusing-one-program")
	script := `#!/bin/sh
for a in "$@"; do
  case "$a" in
    *.c) if grep -qFf ` + filepath.Join(dir, "refuse.txt") + ` "$a"; then echo refused >&2; exit 1; fi ;;
  esac
done
exec gcc "$@"
`
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	got := generateT(t, seed, Options{GCC: fake})
	want := generateT(t, seed, Options{})
	if len(got) != len(want) {
		t.Fatalf("%d programs, want %d", len(got), len(want))
	}
	for i := range got {
		switch {
		case got[i].Name == "level_1/prog_04.c":
			if got[i].Source == first || got[i].Source == want[i].Source && want[i].Source == first {
				t.Error("the refused program was kept")
			}
		case got[i].Source != want[i].Source:
			t.Errorf("%s changed though gcc refused another program", got[i].Name)
		}
	}
}
