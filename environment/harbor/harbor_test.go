package harbor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trajlab/traj/environment"
	"github.com/trajlab/traj/sandbox"
)

// The container tests build each testdata task's image once (cached by
// the engine under its context's digest) and run real rooms: the agent's
// (Room) and the verifier's (Verify).

var (
	envMu   sync.Mutex
	envs    = map[string]*Env{}
	openErr = map[string]error{}
)

func openTask(t *testing.T, name string) *Env {
	t.Helper()
	if testing.Short() {
		t.Skip("container test")
	}
	ctx := context.Background()
	if _, _, err := sandbox.FindEngine(ctx, ""); err != nil {
		t.Skipf("no container engine: %v", err)
	}
	envMu.Lock()
	defer envMu.Unlock()
	if e, ok := envs[name]; ok {
		return e
	}
	if err := openErr[name]; err != nil {
		t.Fatal(err)
	}
	tk, err := Load(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	e, err := Open(ctx, tk, Options{Log: &log})
	if err != nil {
		openErr[name] = err
		t.Fatalf("%v\n%s", err, log.String())
	}
	envs[name] = e
	return e
}

// seeded is a new workspace holding the image's workdir.
func seeded(t *testing.T, e *Env) string {
	t.Helper()
	ws := filepath.Join(t.TempDir(), "ws")
	if err := e.Seed(context.Background(), ws); err != nil {
		t.Fatal(err)
	}
	return ws
}

func verify(t *testing.T, e *Env, ws string) Verdict {
	t.Helper()
	v, err := e.Verify(context.Background(), ws, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestOracleAndNoop: on each testdata task the oracle (solution/solve.sh
// in the agent's room) scores 1 and the workspace as seeded (a no-op
// agent) 0, through Run as ground truth and replay evaluate call it.
func TestOracleAndNoop(t *testing.T) {
	for _, name := range []string{"shell-topwords", "python-stats", "c-fizzbuzz"} {
		t.Run(name, func(t *testing.T) {
			e := openTask(t, name)
			ctx := context.Background()
			ws := seeded(t, e)
			noop, err := e.Run(ctx, ws, name, environment.RunOptions{TempDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Oracle(ctx, ws); err != nil {
				t.Fatal(err)
			}
			oracle, err := e.Run(ctx, ws, name, environment.RunOptions{TempDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if rewardCase(noop).Passed || noop.Passed == noop.Total {
				t.Errorf("no-op agent: %+v, want reward 0", noop)
			}
			if !rewardCase(oracle).Passed || oracle.Passed != oracle.Total || rewardCase(oracle).ActualStdout != "1" {
				t.Errorf("oracle: %+v, want reward 1", oracle)
			}
			if name == "python-stats" && oracle.Total != 5 {
				t.Errorf("python-stats: %d cases, want the 4 CTRF tests and the reward", oracle.Total)
			}
			if _, err := e.Run(ctx, ws, "other", environment.RunOptions{}); !environment.IsUsageError(err) {
				t.Errorf("unknown path: %v", err)
			}
		})
	}
}

func rewardCase(r environment.Result) environment.CaseResult {
	for _, c := range r.Cases {
		if c.Name == r.Path+"/"+RewardCase {
			return c
		}
	}
	return environment.CaseResult{}
}

// attack runs script in an agent's room on a seeded workspace (optional
// files written into the workspace first) and verifies the workspace
// while the room is still running. shared is the control: the reward
// test.sh leaves when it runs in the agent's own room afterwards, as in
// Harbor's default mode ("" without a script).
func attack(t *testing.T, e *Env, files map[string]string, script string) (v Verdict, shared string) {
	t.Helper()
	ctx := context.Background()
	ws := seeded(t, e)
	for p, body := range files {
		full := filepath.Join(ws, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if script != "" {
		r, err := e.OpenRoom(ctx, ws)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		res, err := r.Exec(ctx, script, 0)
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("attack script: %v %+v", err, res)
		}
		v = verify(t, e, ws)
		if err := r.Upload(ctx, filepath.Join(e.Task.Dir, "tests"), "/tests"); err != nil {
			t.Fatal(err)
		}
		res, err = r.Exec(ctx, "mkdir -p /logs/verifier; bash /tests/test.sh >/dev/null 2>&1; sleep 0.5; cat /logs/verifier/reward.txt", 0)
		if err != nil {
			t.Fatal(err)
		}
		return v, strings.TrimSpace(res.Stdout)
	}
	return verify(t, e, ws), ""
}

const forge = "#!/bin/sh\nmkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt; exit 0\n"

// TestAttacks: each way an agent forges Harbor's reward in its own
// container scores 0 here, where the verifier is a room of its own.
func TestAttacks(t *testing.T) {
	t.Run("pre-written reward", func(t *testing.T) {
		e := openTask(t, "shell-topwords")
		v, _ := attack(t, e, map[string]string{"logs/verifier/reward.txt": "1\n", "reward.txt": "1\n"},
			"mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt && echo '{\"reward\": 1}' > /logs/verifier/reward.json")
		if v.Solved() || v.Reward != 0 {
			t.Fatalf("verdict %+v", v)
		}
	})
	t.Run("background writer in the agent's room", func(t *testing.T) {
		e := openTask(t, "shell-topwords")
		v, shared := attack(t, e, nil,
			"nohup bash -c 'while :; do mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt; echo 1 > /app/reward.txt; sleep 0.05; done' >/dev/null 2>&1 &")
		if v.Solved() || v.Reward != 0 {
			t.Fatalf("verdict %+v", v)
		}
		if shared != "1" {
			t.Fatalf("control: the daemon did not forge the reward in the agent's own room (%q)", shared)
		}
	})
	t.Run("background writer the tests start", func(t *testing.T) {
		// fizz.c leaves a daemon that rewrites the reward after test.sh
		// wrote 0; it dies with the verifier's container (and runs as
		// nobody, test.sh's own guard).
		e := openTask(t, "c-fizzbuzz")
		v, _ := attack(t, e, map[string]string{"fizz.c": `#include <stdio.h>
#include <unistd.h>
int main(void) {
	if (fork() == 0) {
		setsid();
		for (int i = 0; i < 200; i++) {
			FILE *f = fopen("/logs/verifier/reward.txt", "w");
			if (f) { fputs("1\n", f); fclose(f); }
			usleep(20000);
		}
		return 0;
	}
	return 0;
}
`}, "")
		if v.Solved() || v.Reward != 0 {
			t.Fatalf("verdict %+v", v)
		}
	})
	t.Run("python3 and pytest shims", func(t *testing.T) {
		e := openTask(t, "python-stats")
		v, shared := attack(t, e, map[string]string{
			"python3": forge, "pytest": forge, "bin/python3": forge, "bin/pytest": forge,
			"pytest.py":               "import os\nos.makedirs('/logs/verifier', exist_ok=True)\nopen('/logs/verifier/reward.txt', 'w').write('1')\nraise SystemExit(0)\n",
			"sitecustomize.py":        "import sys\nsys.exit(0)\n",
			"conftest.py":             "def pytest_collection_modifyitems(items):\n    items.clear()\n",
			".bashrc":                 "exit 0\n",
			"usr/bin/python3":         forge,
			"logs/verifier/ctrf.json": `{"results":{"tests":[{"name":"test_mean","status":"passed"}]}}`,
		}, "for b in python3 pytest py.test; do printf '#!/bin/sh\\nmkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt\\n' > /usr/local/bin/$b; chmod +x /usr/local/bin/$b; done")
		if v.Solved() || v.Reward != 0 {
			t.Fatalf("verdict %+v", v)
		}
		if shared != "1" {
			t.Fatalf("control: the shims did not forge the reward in the agent's own room (%q)", shared)
		}
		if len(v.Tests) != 4 {
			t.Fatalf("tests %+v: want the 4 real tests run", v.Tests)
		}
	})
	t.Run("tests edited or deleted", func(t *testing.T) {
		e := openTask(t, "shell-topwords")
		v, _ := attack(t, e, map[string]string{"tests/test.sh": forge},
			"mkdir -p /tests && printf 'echo 1 > /logs/verifier/reward.txt\\n' > /tests/test.sh; rm -rf /solution")
		if v.Solved() || v.Reward != 0 {
			t.Fatalf("verdict %+v", v)
		}
		// The tests' code the tree runs cannot rewrite them mid-run:
		// /tests is read-only in the verifier's room.
		c := openTask(t, "c-fizzbuzz")
		v, _ = attack(t, c, map[string]string{"fizz.c": `#include <stdio.h>
int main(void) {
	FILE *f = fopen("/tests/test.sh", "a");
	if (f) { fputs("\nreward=1\n", f); fclose(f); }
	f = fopen("/tests/test.sh", "w");
	if (f) { fputs("echo 1 > /logs/verifier/reward.txt\n", f); fclose(f); }
	return 0;
}
`}, "")
		if v.Solved() || v.Reward != 0 || !strings.Contains(v.Output, "wrong output") {
			t.Fatalf("verdict %+v", v)
		}
		b, err := os.ReadFile(filepath.Join(c.Task.Dir, "tests", "test.sh"))
		if err != nil || strings.Contains(string(b), "echo 1 >") {
			t.Fatalf("the task's test.sh changed: %v", err)
		}
	})
}

// TestStagedCurve: a tree solving the Python task function by function
// scores more CTRF cases at each stage, and 1 at the last.
func TestStagedCurve(t *testing.T) {
	e := openTask(t, "python-stats")
	stages := []string{
		"",
		"def mean(xs):\n    return sum(xs) / len(xs)\n",
		"def median(xs):\n    s = sorted(xs)\n    n = len(s)\n    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2\n",
		"def mode(xs):\n    c = {}\n    for x in xs:\n        c[x] = c.get(x, 0) + 1\n    return min(c, key=lambda x: (-c[x], x))\n",
	}
	ws := seeded(t, e)
	src := "def mean(xs):\n    raise NotImplementedError\n\n\ndef median(xs):\n    raise NotImplementedError\n\n\ndef mode(xs):\n    raise NotImplementedError\n"
	var curve []int
	for i, s := range stages {
		if s != "" {
			name := strings.TrimPrefix(strings.SplitN(s, "(", 2)[0], "def ")
			old := "def " + name + "(xs):\n    raise NotImplementedError\n"
			src = strings.Replace(src, old, s, 1)
		}
		if err := os.WriteFile(filepath.Join(ws, "stats.py"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := e.Run(context.Background(), ws, e.Task.Name, environment.RunOptions{TempDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		curve = append(curve, res.Passed)
		if last := i == len(stages)-1; rewardCase(res).Passed != last {
			t.Fatalf("stage %d: reward case %+v", i, rewardCase(res))
		}
	}
	for i := 1; i < len(curve); i++ {
		if curve[i] <= curve[i-1] {
			t.Fatalf("curve %v: want it rising at each stage", curve)
		}
	}
	if curve[len(curve)-1] != 5 {
		t.Fatalf("curve %v: want 5/5 at the end", curve)
	}
}

// TestDockerImage: a task naming a docker_image on this machine runs
// from it without a Dockerfile; one naming an image that would need a
// registry is refused before anything runs, naming the image.
func TestDockerImage(t *testing.T) {
	openTask(t, "shell-topwords") // the engine, and debian:bookworm built
	ctx := context.Background()
	files := map[string]string{
		TaskFile:        "[verifier]\ntimeout_sec = 30\n[environment]\ndocker_image = \"debian:bookworm\"\nallow_internet = false\n",
		InstructionFile: "Write ok into /app/ok.\n",
		TestScript:      "if [ \"$(cat /app/ok)\" = ok ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n",
	}
	tk, err := Load(writeTask(t, "prebuilt", files))
	if err != nil {
		t.Fatal(err)
	}
	e, err := Open(ctx, tk, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if e.Workdir != DefaultWorkdir {
		t.Errorf("workdir %q, want %q (the image names none)", e.Workdir, DefaultWorkdir)
	}
	ws := t.TempDir()
	if v := verify(t, e, ws); v.Reward != 0 {
		t.Fatalf("empty workspace: %+v", v)
	}
	if err := os.WriteFile(filepath.Join(ws, "ok"), []byte("ok"), 0o644); err != nil {
		t.Fatal(err)
	}
	if v := verify(t, e, ws); !v.Solved() {
		t.Fatalf("solved workspace: %+v", v)
	}
	files[TaskFile] = "[environment]\ndocker_image = \"ghcr.io/example/none:1\"\n"
	tk, err = Load(writeTask(t, "remote", files))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, tk, Options{}); err == nil || !strings.Contains(err.Error(), "ghcr.io/example/none:1 is not on this machine") {
		t.Fatalf("Open: %v, want the remote image refused", err)
	}
}

// TestVerifierTimeout: a test.sh that does not finish within the
// verifier timeout scores 0, saying so, and leaves no container behind.
func TestVerifierTimeout(t *testing.T) {
	openTask(t, "shell-topwords") // the engine, and debian:bookworm built
	ctx := context.Background()
	tk, err := Load(writeTask(t, "slow", map[string]string{
		TaskFile:        "[verifier]\ntimeout_sec = 2\n[environment]\ndocker_image = \"debian:bookworm\"\n",
		InstructionFile: "Nothing.\n",
		TestScript:      "echo 1 > /logs/verifier/reward.txt\nsleep 300\n",
	}))
	if err != nil {
		t.Fatal(err)
	}
	e, err := Open(ctx, tk, Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := verify(t, e, t.TempDir())
	if !v.TimedOut || v.Solved() || !strings.Contains(v.Problem, "verifier timeout") {
		t.Fatalf("verdict %+v, want a timeout and reward 0", v)
	}
	out, err := e.Engine.Run(ctx, time.Minute, nil, "ps", "-a", "--filter", "name=traj-verify-slow-", "--format", "{{.Names}}")
	if err != nil || strings.TrimSpace(out) != "" {
		t.Fatalf("containers left: %q %v", out, err)
	}
}

// TestNetworkPolicy: allow_internet = false leaves the verifier's room
// and the agent's room (Room) no network interface but loopback; true
// gives them the host's.
func TestNetworkPolicy(t *testing.T) {
	openTask(t, "shell-topwords") // the engine, and debian:bookworm built
	ctx := context.Background()
	for _, allow := range []bool{false, true} {
		toml := "[environment]\ndocker_image = \"debian:bookworm\"\nallow_internet = " + map[bool]string{false: "false", true: "true"}[allow] + "\n"
		tk, err := Load(writeTask(t, "net", map[string]string{TaskFile: toml, InstructionFile: "x\n",
			TestScript: "ls /sys/class/net | tr '\\n' ' '; echo 1 > /logs/verifier/reward.txt\n"}))
		if err != nil {
			t.Fatal(err)
		}
		e, err := Open(ctx, tk, Options{})
		if err != nil {
			t.Fatal(err)
		}
		v := verify(t, e, t.TempDir())
		r, err := e.OpenRoom(ctx, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.Exec(ctx, "ls /sys/class/net | tr '\\n' ' '", time.Minute)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		for room, nets := range map[string]string{"verifier": v.Output, "agent": res.Stdout} {
			if only := strings.TrimSpace(nets) == "lo"; only == allow {
				t.Errorf("allow_internet %v: the %s's room has interfaces %q", allow, room, nets)
			}
		}
	}
}
