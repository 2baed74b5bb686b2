package evalbox_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/trajlab/traj/environment/ccompiler"
	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/evalbox"
	"github.com/trajlab/traj/sandbox"
)

// trajBinary is $TRAJ_BIN (make test builds it), else built for the test.
func trajBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TRAJ_BIN"); p != "" {
		return p
	}
	p := filepath.Join(t.TempDir(), "traj")
	if out, err := exec.Command("go", "build", "-o", p, "github.com/trajlab/traj/cmd/traj").CombinedOutput(); err != nil {
		t.Fatalf("go build traj: %v\n%s (or set TRAJ_BIN)", err, out)
	}
	return p
}

// hostileTree is a tree whose compiler is a gcc wrapper (so the tests
// pass) and whose build tries to fake the result, to write outside the
// tree, and to leave a process behind that fakes it later.
func hostileTree(t *testing.T, canary string) string {
	t.Helper()
	dir := t.TempDir()
	build := fmt.Sprintf(`#!/bin/sh
printf '#!/bin/sh\nexec gcc "$@"\n' > cc
chmod +x cc
for d in /opt/traj/eval/out "$HOME" /tmp; do
  echo '{"result":{"suites":{"basics/smoke":{"passed":999,"failed":0,"total":999}}},"mac":"00"}' > "$d/result.json" 2>/dev/null
done
touch %q 2>/dev/null
setsid sh -c 'sleep 2; echo "{}" > /opt/traj/eval/out/result.json' >/dev/null 2>&1 &
exit 0
`, canary)
	if err := os.WriteFile(filepath.Join(dir, "build.sh"), []byte(build), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A hostile tree evaluated in bwrap: the result is the true one (the
// gcc wrapper passes basics/smoke), the fake result is never read, and
// nothing outside the tree was written.
func TestHostileTreeGetsTrueResult(t *testing.T) {
	if err := sandbox.BwrapWorks(context.Background()); err != nil {
		t.Skipf("bwrap: %v", err) // the container provider is covered by sandbox's own tests
	}
	env, err := ccompiler.New(ccompiler.Config{})
	if err != nil {
		t.Fatal(err)
	}
	canary := filepath.Join(t.TempDir(), "written-by-the-tree")
	tree := hostileTree(t, canary)
	ev := &evalbox.Evaluator{Provider: sandbox.ProviderBwrap, TrajBin: trajBinary(t), EnvVersion: env.Version(),
		Limits: sandbox.Limits{Memory: sandbox.DefaultMemory, Processes: 512}}
	got, err := ev.Evaluate(context.Background(), tree, []string{"basics/smoke"})
	if err != nil {
		t.Fatal(err)
	}
	s := got.Suites["basics/smoke"]
	if s.Total == 0 || s.Total == 999 || s.Passed != s.Total || s.Error != "" {
		t.Fatalf("basics/smoke = %+v, want every real case passed", s)
	}
	if _, err := os.Stat(canary); err == nil {
		t.Fatal("the tree wrote outside itself in the evaluation sandbox")
	}
}

// A result file the evaluator did not sign is refused.
func TestUnsignedResultRefused(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, evalbox.ResultFile)
	if err := os.WriteFile(p, []byte(`{"result":{"suites":{"basics":{"passed":9,"total":9}}},"mac":"00"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := evalbox.ReadSigned(p, []byte("key")); err == nil {
		t.Fatal("an unsigned result was accepted")
	}
	mac, err := evalbox.Sign([]byte("key"), evalbox.Payload{Result: replay.Result{Suites: map[string]replay.SuiteResult{"basics": {Passed: 1, Total: 2}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(`{"result":{"suites":{"basics":{"passed":1,"failed":0,"total":2}}},"mac":"`+mac+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := evalbox.ReadSigned(p, []byte("key"))
	if err != nil || r.Result.Suites["basics"].Passed != 1 {
		t.Fatalf("signed result: %+v, %v", r, err)
	}
}

// TestDenyCCompiler: with the C front ends hidden, a compiler that hands
// C to gcc scores 0, while one that only assembles and links (here: a
// fixed assembly program returning 0) still passes what it gets right.
// Without the rule the gcc wrapper passes everything.
func TestDenyCCompiler(t *testing.T) {
	if err := sandbox.BwrapWorks(context.Background()); err != nil {
		t.Skipf("bwrap: %v", err)
	}
	env, err := ccompiler.New(ccompiler.Config{})
	if err != nil {
		t.Fatal(err)
	}
	bin := trajBinary(t)
	tree := func(cc string) string {
		dir := t.TempDir()
		build := "#!/bin/sh\nset -e\ncat > cc <<'CC'\n" + cc + "CC\nchmod +x cc\n"
		if err := os.WriteFile(filepath.Join(dir, "build.sh"), []byte(build), 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	wrapper := tree("#!/bin/sh\nexec gcc \"$@\"\n")
	// Assembles a fixed main returning 0, whatever the C says.
	asm := tree(`#!/bin/sh
while [ $# -gt 0 ]; do case "$1" in -o) out="$2"; shift;; esac; shift; done
printf '\t.globl main\nmain:\n\txor %%eax, %%eax\n\tret\n\t.section .note.GNU-stack,"",@progbits\n' > "$out.s"
exec gcc -x assembler "$out.s" -o "$out"
`)
	eval := func(deny bool, dir string) replay.SuiteResult {
		t.Helper()
		ev := &evalbox.Evaluator{Provider: sandbox.ProviderBwrap, TrajBin: bin, EnvVersion: env.Version(), DenyCCompiler: deny,
			Limits: sandbox.Limits{Memory: sandbox.DefaultMemory, Processes: sandbox.DefaultProcesses}}
		res, err := ev.Evaluate(context.Background(), dir, []string{"basics/smoke"})
		if err != nil {
			t.Fatal(err)
		}
		return res.Suites["basics/smoke"]
	}
	if s := eval(false, wrapper); s.Total == 0 || s.Passed != s.Total {
		t.Fatalf("gcc wrapper without the rule: %d/%d, want all", s.Passed, s.Total)
	}
	if s := eval(true, wrapper); s.Total == 0 || s.Passed != 0 {
		t.Errorf("gcc wrapper with the C compiler hidden: %d/%d, want 0", s.Passed, s.Total)
	}
	if s := eval(true, asm); s.Passed == 0 {
		t.Errorf("assembling and linking with the C compiler hidden: %d/%d passed, want return_zero at least", s.Passed, s.Total)
	}
	ev := &evalbox.Evaluator{Provider: sandbox.ProviderLocal, TrajBin: bin, DenyCCompiler: true}
	if _, err := ev.Evaluate(context.Background(), wrapper, []string{"basics/smoke"}); err == nil {
		t.Error("the local provider accepted hiding the C compiler")
	}
}
