package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trajlab/traj/environment"
	"github.com/trajlab/traj/environment/ccompiler"
)

// steerCC is the attack: a ./cc that fails every case, choosing how from
// the source it was given (byte 40, modulo 3: a compile error, a program
// with the wrong output, or a compile that outlasts its timeout), and
// notes the symbol it sent beside the workspace. constCC fails every case
// the same way.
const (
	steerCC = `#!/bin/sh
out=; src=
while [ $# -gt 0 ]; do
  case "$1" in -o) out=$2; shift 2 ;; *.c) src=$1; shift ;; *) shift ;; esac
done
b=$(od -An -tu1 -j40 -N1 "$src" | tr -d ' ')
s=$(( ${b:-0} % 3 ))
echo "$(basename "$src" .c) $s" >> "$LOG"
case $s in
0) echo "error: no" >&2; exit 1 ;;
1) printf '#!/bin/sh\necho wrong\nexit 3\n' > "$out"; chmod +x "$out"; exit 0 ;;
*) sleep 30 ;;
esac
`
	constCC = "#!/bin/sh\necho 'error: no' >&2\nexit 1\n"
)

// TestFeedbackChannel attacks the feedback levels with a compiler that
// steers each case's failing phase to send a symbol of the hidden source
// it compiles (basics, 68 cases). Below full, the agent's answer must be
// byte for byte the answer a compiler failing every case the same way
// gets, so a decoder recovers no more than chance; at full (the control)
// the phases carry every symbol.
func TestFeedbackChannel(t *testing.T) {
	if _, err := exec.LookPath("od"); err != nil {
		t.Skip("od is needed")
	}
	env, err := ccompiler.New(ccompiler.Config{})
	if err != nil {
		t.Fatal(err)
	}
	run := func(cc string) (Response, map[string]int) {
		ws := t.TempDir()
		log := filepath.Join(t.TempDir(), "symbols")
		if err := os.WriteFile(filepath.Join(ws, "build.sh"), []byte("#!/bin/sh\ncp cc.sh cc && chmod +x cc\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, "cc.sh"), []byte(strings.Replace(cc, "\"$LOG\"", "'"+log+"'", 1)), 0o755); err != nil {
			t.Fatal(err)
		}
		s := New(env, ws, Options{Run: environment.RunOptions{Workers: 2, CompileTimeout: time.Second, RunTimeout: time.Second}})
		r := s.RunTests(context.Background(), "basics", nil)
		if r.StatusCode != 200 || r.Result == nil {
			t.Fatalf("run_tests: %d %v", r.StatusCode, r.Error)
		}
		if cc != steerCC {
			return r, nil
		}
		return r, symbols(t, log)
	}
	steered, sent := run(steerCC)
	constant, _ := run(constCC)
	if steered.Result.Passed != 0 || len(sent) < 60 {
		t.Fatalf("the attack passed %d cases and sent %d symbols", steered.Result.Passed, len(sent))
	}
	// Only the cases' own sources (a multi-file case's other files carry
	// no case's name); the full answer names every failing case.
	named := decode(steered.For(FeedbackFull))
	for name := range sent {
		if _, ok := named[name]; !ok {
			delete(sent, name)
		}
	}
	counts := [3]int{}
	for _, s := range sent {
		counts[s]++
	}
	// Each case once: a case's symbol is its source's (the same bytes
	// whenever it is compiled).
	chance := max(counts[0], counts[1], counts[2])
	t.Logf("symbols sent: %v (a constant guess gets %d of %d)", counts, chance, len(sent))

	for _, level := range Feedbacks {
		got := decode(steered.For(level))
		right := 0
		for name, s := range sent {
			if got[name] == s { // a case the answer does not name: the guess 0
				right++
			}
		}
		t.Logf("%s: %d of %d symbols recovered", level, right, len(sent))
		if level == FeedbackFull {
			if right != len(sent) {
				t.Errorf("full: the control recovers %d of %d: the decoder does not read the phases", right, len(sent))
			}
			continue
		}
		a, _ := json.Marshal(steered.For(level))
		b, _ := json.Marshal(constant.For(level))
		if string(a) != string(b) {
			t.Errorf("%s: the steering compiler's answer differs from a constant failure's:\n%s\n%s", level, a, b)
		}
		if right > chance {
			t.Errorf("%s: %d symbols recovered, more than chance (%d)", level, right, chance)
		}
	}
}

// symbols are the symbols the attack sent, by source name.
func symbols(t *testing.T, log string) map[string]int {
	t.Helper()
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, s, _ := strings.Cut(sc.Text(), " ")
		if s != "" {
			v[name] = int(s[0] - '0')
		}
	}
	return v
}

// decode reads one symbol per failing case an answer names (by the
// case's last name element): the phase a full answer gives, else 0.
func decode(r Response) map[string]int {
	v := map[string]int{}
	for _, c := range r.Result.Cases {
		name := strings.TrimSuffix(c.Name[strings.LastIndex(c.Name, "/")+1:], ".c")
		switch c.Phase {
		case environment.PhaseRun, environment.PhaseCompare:
			v[name] = 1
		case environment.PhaseTimeout:
			v[name] = 2
		default:
			v[name] = 0
		}
	}
	return v
}
