package harbor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/trajlab/traj/sandbox/xec"
)

// Where the verifier's room shows what it is given.
const (
	TestsInside = "/tests"
	LogsInside  = "/logs/verifier"
)

// Verdict is what a verifier's room left: the reward and the CTRF
// report's tests, read by traj on the host after the room is gone.
type Verdict struct {
	// Reward is reward.txt's number, else reward.json's "reward"; 0
	// when test.sh wrote neither (Problem says so).
	Reward float64
	// RewardText is the reward file's content, trimmed (up to 64 bytes).
	RewardText string
	// Tests are ctrf.json's results.tests, when test.sh wrote it
	// (skipped and pending tests left out).
	Tests []CTRFTest
	// ExitCode is test.sh's; TimedOut: the verifier timeout ended it.
	ExitCode int
	TimedOut bool
	// Output is the last 2 KiB of test.sh's stdout and stderr.
	Output  string
	Elapsed time.Duration
	// Problem says why the reward is not what test.sh's files say (no
	// reward file, an unreadable one, a timeout).
	Problem string
}

// Solved reports whether the reward is 1 and no problem voids it.
func (v Verdict) Solved() bool { return v.Problem == "" && v.Reward >= 1 }

// CTRFTest is one test of a CTRF report (results.tests[]).
type CTRFTest struct {
	Name       string `json:"name"`
	Status     string `json:"status"`
	Message    string `json:"message,omitempty"`
	DurationMS int64  `json:"duration"`
}

// Verify scores tree (a folder on the host, left as it is) in a fresh
// verifier room: a new container from the task's image, a copy of tree
// at the workdir, a copy of the task's tests/ at /tests (the only room
// that ever shows them), an empty /logs/verifier, the task's network
// policy, CPU and memory; `bash /tests/test.sh` runs there within the
// verifier timeout. When it ends the container is removed (every process
// it started dies with its PID namespace), and only then does traj read
// reward.txt or reward.json and ctrf.json from the host's side of
// /logs/verifier, through an os.Root (a link there cannot lead traj
// elsewhere). tempDir holds the room's folders (os.TempDir when empty).
func (e *Env) Verify(ctx context.Context, tree, tempDir string) (Verdict, error) {
	work, err := os.MkdirTemp(tempDir, "traj-verify-")
	if err != nil {
		return Verdict{}, fmt.Errorf("verify %s: %w", e.Task.Name, err)
	}
	defer os.RemoveAll(work)
	ws, tests, logs := filepath.Join(work, "workdir"), filepath.Join(work, "tests"), filepath.Join(work, "logs")
	for _, c := range []struct{ from, to string }{{tree, ws}, {filepath.Join(e.Task.Dir, "tests"), tests}} {
		if err := copyDir(ctx, c.from, c.to); err != nil {
			return Verdict{}, fmt.Errorf("verify %s: %w", e.Task.Name, err)
		}
	}
	// The image's user may not be root: the room's folders are theirs too.
	if err := os.Mkdir(logs, 0o777); err != nil {
		return Verdict{}, fmt.Errorf("verify %s: %w", e.Task.Name, err)
	}
	if err := os.Chmod(logs, 0o777); err != nil {
		return Verdict{}, fmt.Errorf("verify %s: %w", e.Task.Name, err)
	}
	name := "traj-verify-" + e.Task.Name + "-" + randomSuffix()
	args := e.runArgs(name, []string{ws + ":" + e.Workdir + ":rw", tests + ":" + TestsInside + ":ro", logs + ":" + LogsInside + ":rw"})
	for _, k := range sortedKeys(e.Task.VerifierEnv) {
		args = append(args, "-e", k+"="+e.Task.VerifierEnv[k])
	}
	args = append(args, "-w", e.Workdir, e.Image.ID, "bash", TestsInside+"/test.sh")
	res, err := xec.Run(ctx, xec.Command{Path: e.Engine.Bin, Args: args, Env: append(os.Environ(), e.Engine.Env...),
		Timeout: e.Task.VerifierTimeout, OutputLimit: 64 << 10, CombineOutput: true})
	// Gone before anything is read, whatever happened (a timeout kills
	// the engine's client, not always its container).
	_, rmErr := e.Engine.Run(context.WithoutCancel(ctx), time.Minute, nil, "rm", "-f", "-t", "0", "--ignore", name)
	if err != nil {
		return Verdict{}, fmt.Errorf("verify %s: start the verifier: %w", e.Task.Name, err)
	}
	if err := ctx.Err(); err != nil {
		return Verdict{}, err
	}
	if rmErr != nil {
		return Verdict{}, fmt.Errorf("verify %s: remove the verifier's container: %w", e.Task.Name, rmErr)
	}
	v := Verdict{ExitCode: res.ExitCode, TimedOut: res.TimedOut, Output: tailString(res.Stdout, 2048), Elapsed: res.Elapsed}
	if strings.Contains(res.Stdout, "Error: ") && res.ExitCode == 125 {
		// 125: the engine could not run the container at all.
		return Verdict{}, fmt.Errorf("verify %s: the engine did not run the verifier: %s", e.Task.Name, tailString(res.Stdout, 1024))
	}
	if res.TimedOut {
		v.Problem = fmt.Sprintf("test.sh did not finish within the verifier timeout (%s)", e.Task.VerifierTimeout)
		return v, nil
	}
	readVerdict(logs, &v)
	return v, nil
}

// readVerdict reads what the room left in logs into v.
func readVerdict(logs string, v *Verdict) {
	root, err := os.OpenRoot(logs)
	if err != nil {
		v.Problem = "read the verifier's logs: " + err.Error()
		return
	}
	defer root.Close()
	if b, err := readCapped(root, "ctrf.json", 8<<20); err == nil {
		var rep struct {
			Results struct {
				Tests []CTRFTest `json:"tests"`
			} `json:"results"`
		}
		if err := json.Unmarshal(b, &rep); err != nil {
			v.Problem = "ctrf.json: " + err.Error()
		}
		for _, t := range rep.Results.Tests {
			if t.Status == "skipped" || t.Status == "pending" {
				continue
			}
			t.Message = tailString(t.Message, 1024)
			v.Tests = append(v.Tests, t)
		}
	}
	b, err := readCapped(root, "reward.txt", 4096)
	if errors.Is(err, fs.ErrNotExist) {
		var j []byte
		if j, err = readCapped(root, "reward.json", 1<<20); err == nil {
			v.RewardText = tailString(strings.TrimSpace(string(j)), 64)
			var m map[string]any
			if err := json.Unmarshal(j, &m); err != nil {
				setProblem(v, "reward.json: "+err.Error())
				return
			}
			r, ok := m["reward"].(float64)
			if !ok {
				setProblem(v, `reward.json: no number under "reward"`)
				return
			}
			setReward(v, r, "reward.json")
			return
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		setProblem(v, "test.sh wrote no reward ("+LogsInside+"/reward.txt or reward.json)")
	case err != nil:
		setProblem(v, "read the reward: "+err.Error())
	default:
		v.RewardText = tailString(strings.TrimSpace(string(b)), 64)
		r, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
		if err != nil {
			setProblem(v, fmt.Sprintf("reward.txt %q: not a number", v.RewardText))
			return
		}
		setReward(v, r, "reward.txt")
	}
}

func setReward(v *Verdict, r float64, file string) {
	if math.IsNaN(r) || math.IsInf(r, 0) {
		setProblem(v, file+": not a finite number")
		return
	}
	v.Reward = r
}

func setProblem(v *Verdict, p string) {
	v.Reward = 0
	if v.Problem == "" {
		v.Problem = p
	}
}

// readCapped reads a regular file of root, up to limit bytes.
func readCapped(root *os.Root, name string, limit int64) ([]byte, error) {
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", name)
	}
	return io.ReadAll(io.LimitReader(f, limit))
}

// runArgs are the engine's `run` arguments of a room of the task's: its
// name, network (none unless the task allows the internet), limits and
// the volumes given (host:inside:mode).
func (e *Env) runArgs(name string, volumes []string, extra ...string) []string {
	args := append([]string(nil), e.Engine.Args...)
	args = append(args, "run", "--rm")
	args = append(args, extra...)
	network := "none"
	if e.Task.Environment.AllowInternet {
		network = "host"
	}
	args = append(args, "--name", name, "--network", network, "--pids-limit", "4096", "--security-opt", "no-new-privileges")
	if c := e.Task.Environment.CPUs; c > 0 {
		args = append(args, "--cpus", strconv.FormatFloat(c, 'f', -1, 64))
	}
	if m := e.Task.Environment.Memory; m > 0 {
		s := strconv.FormatInt(m, 10)
		args = append(args, "--memory", s, "--memory-swap", s)
	}
	for _, v := range volumes {
		args = append(args, "-v", v)
	}
	return args
}

// copyDir copies from's contents into to (made), keeping modes and links
// as links (cp -a: a link is followed, if ever, only inside a room).
func copyDir(ctx context.Context, from, to string) error {
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	res, err := xec.Run(ctx, xec.Command{Path: "cp", Args: []string{"-a", "--", from + "/.", to}, Timeout: 10 * time.Minute,
		OutputLimit: 4096, CombineOutput: true})
	switch {
	case err != nil:
		return fmt.Errorf("copy %s: %w", from, err)
	case res.ExitCode != 0:
		return fmt.Errorf("copy %s: %s", from, strings.TrimSpace(res.Stdout))
	}
	return nil
}

func randomSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func tailString(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
