package harbor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeTask makes a task folder in a temporary folder from files (path →
// content; "" content skips the file).
func writeTask(t *testing.T, name string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	for p, body := range files {
		if body == "" {
			continue
		}
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func goodFiles() map[string]string {
	return map[string]string{
		TaskFile:        "version = \"1.0\"\n[metadata]\nauthor_name = \"x\"\n[agent]\ntimeout_sec = 30.0\n[verifier]\ntimeout_sec = 20\nenv = {A = \"1\"}\n[environment]\ncpus = 2\nmemory = \"2G\"\nstorage_mb = 512\nallow_internet = false\nworkdir = \"/work\"\n",
		InstructionFile: "Do it.\n",
		DockerfilePath:  "FROM debian:bookworm\n",
		TestScript:      "echo 1 > /logs/verifier/reward.txt\n",
	}
}

func TestLoad(t *testing.T) {
	tk, err := Load(writeTask(t, "good", goodFiles()))
	if err != nil {
		t.Fatal(err)
	}
	want := Settings{BuildTimeout: DefaultBuildTimeout, CPUs: 2, Memory: 2 << 30, Storage: 512 << 20, Workdir: "/work"}
	if tk.Environment != want || tk.AgentTimeout != 30*time.Second || tk.VerifierTimeout != 20*time.Second ||
		tk.VerifierEnv["A"] != "1" || tk.HasSolution || tk.Instruction != "Do it.\n" || tk.Name != "good" {
		t.Fatalf("loaded %+v", tk)
	}
	for _, dir := range []string{"shell-topwords", "python-stats", "c-fizzbuzz"} {
		tk, err := Load(filepath.Join("testdata", dir))
		if err != nil {
			t.Fatal(err)
		}
		if !tk.HasSolution || tk.Environment.AllowInternet {
			t.Errorf("%s: %+v: want a solution and no internet", dir, tk)
		}
	}
}

func TestLoadRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(map[string]string)
		want string
	}{
		{"no task.toml", func(f map[string]string) { delete(f, TaskFile) }, "task.toml: no such file"},
		{"bad toml", func(f map[string]string) { f[TaskFile] = "[agent\n" }, "task.toml:"},
		{"unknown key", func(f map[string]string) { f[TaskFile] = "[agent]\ntimeout = 3\n" }, "unknown keys agent.timeout"},
		{"no instruction", func(f map[string]string) { delete(f, InstructionFile) }, "instruction.md: no such file"},
		{"empty instruction", func(f map[string]string) { f[InstructionFile] = " \n" }, "instruction.md is empty"},
		{"no test.sh", func(f map[string]string) { delete(f, TestScript) }, "tests/test.sh: no such file"},
		{"no Dockerfile", func(f map[string]string) { delete(f, DockerfilePath) }, "environment/Dockerfile: no such file"},
		{"compose", func(f map[string]string) {
			delete(f, DockerfilePath)
			f["environment/docker-compose.yaml"] = "services: {}\n"
		}, "compose environments are not supported"},
		{"bad memory", func(f map[string]string) { f[TaskFile] = "[environment]\nmemory = \"lots\"\n" }, `environment.memory "lots"`},
		{"both memories", func(f map[string]string) { f[TaskFile] = "[environment]\nmemory = \"1G\"\nmemory_mb = 5\n" }, "both environment.memory and environment.memory_mb"},
		{"relative workdir", func(f map[string]string) { f[TaskFile] = "[environment]\nworkdir = \"app\"\n" }, "environment.workdir"},
		{"zero timeout", func(f map[string]string) { f[TaskFile] = "[verifier]\ntimeout_sec = 0\n" }, "verifier.timeout_sec 0"},
		{"gpus", func(f map[string]string) { f[TaskFile] = "[environment]\ngpus = 1\n" }, "no GPU"},
		{"mcp servers", func(f map[string]string) {
			f[TaskFile] = "[[environment.mcp_servers]]\nname = \"m\"\ntransport = \"sse\"\nurl = \"http://m\"\n"
		}, "mcp_servers: not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := goodFiles()
			tc.edit(f)
			_, err := Load(writeTask(t, "bad", f))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "load Harbor task") {
				t.Fatalf("Load: %v, want an error containing %q", err, tc.want)
			}
		})
	}
	t.Run("folder name", func(t *testing.T) {
		if _, err := Load(writeTask(t, "Bad Name", goodFiles())); err == nil || !strings.Contains(err.Error(), "folder name") {
			t.Fatalf("Load: %v, want the folder name refused", err)
		}
	})
	t.Run("linked test.sh", func(t *testing.T) {
		f := goodFiles()
		delete(f, TestScript)
		dir := writeTask(t, "linked", f)
		if err := os.MkdirAll(filepath.Join(dir, "tests"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/etc/passwd", filepath.Join(dir, TestScript)); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("Load: %v, want a linked test.sh refused", err)
		}
	})
}

func TestVerdictResult(t *testing.T) {
	v := Verdict{Reward: 1, RewardText: "1", Tests: []CTRFTest{{Name: "test_b", Status: "passed"}, {Name: "test_a", Status: "failed"},
		{Name: "reward", Status: "passed"}}}
	res := v.Result("t")
	var names []string
	for _, c := range res.Cases {
		names = append(names, c.Name)
	}
	if got := strings.Join(names, ","); got != "t/reward,t/reward #1,t/test_a,t/test_b" {
		t.Fatalf("cases %s", got)
	}
	if res.Passed != 3 || res.Failed != 1 || res.Total != 4 {
		t.Fatalf("counts %d/%d/%d", res.Passed, res.Failed, res.Total)
	}
	if r := (Verdict{Reward: 1, Problem: "ctrf.json: bad"}).Result("t"); r.Passed != 0 || r.Cases[0].Error != "ctrf.json: bad" {
		t.Fatalf("a problem must void the reward: %+v", r)
	}
}

func TestReadVerdict(t *testing.T) {
	for _, tc := range []struct {
		name   string
		files  map[string]string
		reward float64
		solved bool
		tests  int
	}{
		{"txt", map[string]string{"reward.txt": "1\n"}, 1, true, 0},
		{"partial", map[string]string{"reward.txt": "0.75"}, 0.75, false, 0},
		{"json", map[string]string{"reward.json": `{"reward": 1, "details": {}}`}, 1, true, 0},
		{"none", map[string]string{}, 0, false, 0},
		{"garbage", map[string]string{"reward.txt": "yes"}, 0, false, 0},
		{"nan", map[string]string{"reward.txt": "NaN"}, 0, false, 0},
		{"ctrf", map[string]string{"reward.txt": "1", "ctrf.json": `{"results":{"tests":[{"name":"a","status":"passed"},{"name":"b","status":"skipped"}]}}`}, 1, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for n, b := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, n), []byte(b), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var v Verdict
			readVerdict(dir, &v)
			if v.Reward != tc.reward || v.Solved() != tc.solved || len(v.Tests) != tc.tests {
				t.Fatalf("verdict %+v", v)
			}
		})
	}
	t.Run("link out", func(t *testing.T) {
		// A room's reward.txt linking to a host file is not followed out.
		dir := t.TempDir()
		secret := filepath.Join(t.TempDir(), "one")
		if err := os.WriteFile(secret, []byte("1"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(secret, filepath.Join(dir, "reward.txt")); err != nil {
			t.Fatal(err)
		}
		var v Verdict
		readVerdict(dir, &v)
		if v.Solved() || v.Reward != 0 {
			t.Fatalf("verdict %+v: a link out of the logs folder was followed", v)
		}
	})
}

func TestDataset(t *testing.T) {
	list, ok := Dataset("testdata")
	if !ok || len(list) != 3 || filepath.Base(list[0]) != "c-fizzbuzz" {
		t.Fatalf("Dataset(testdata) = %v %v", list, ok)
	}
	if _, ok := Dataset("testdata/c-fizzbuzz"); ok {
		t.Fatal("a task folder is not a dataset")
	}
	if _, ok := Dataset(t.TempDir()); ok {
		t.Fatal("an empty folder is not a dataset")
	}
}
