package orchestrator_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trajlab/traj/orchestrator"
	"github.com/trajlab/traj/orchestrator/folder"
	"github.com/trajlab/traj/orchestrator/launch"
	"github.com/trajlab/traj/orchestrator/progress"
	"github.com/trajlab/traj/orchestrator/secret"
	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/local"
	"github.com/trajlab/traj/trace/store/location"
	"github.com/trajlab/traj/trace/store/retry"
	"github.com/trajlab/traj/trace/store/s3test"
	"github.com/trajlab/traj/trace/store/storefault"
)

// syncBuffer is a bytes.Buffer safe to read while a run writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var partEvent = regexp.MustCompile(`"type":"part",[^\n]*"part":(\d+)`)

// maxPart is the highest part event in JSON progress output.
func (s *syncBuffer) maxPart() int {
	max := 0
	for _, m := range partEvent.FindAllStringSubmatch(s.String(), -1) {
		if n, _ := strconv.Atoi(m[1]); n > max {
			max = n
		}
	}
	return max
}

// storeObjects reads every object under prefix.
func storeObjects(t *testing.T, st store.Store, prefix string) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	out := map[string][]byte{}
	var keys []string
	if err := st.List(ctx, prefix, func(fi store.FileInfo) error { keys = append(keys, fi.Key); return nil }); err != nil {
		t.Fatalf("list %s: %v", prefix, err)
	}
	for _, k := range keys {
		err := st.Load(ctx, k, func(r io.Reader) error {
			b, err := io.ReadAll(r)
			out[k] = b
			return err
		})
		if err != nil {
			t.Fatalf("load %s: %v", k, err)
		}
	}
	return out
}

// folderObjects maps what a trajectory folder holds for the store to
// store keys (as `traj sync` does), with the local content.
func folderObjects(t *testing.T, id, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	add := func(key, path string) {
		if b, err := os.ReadFile(path); err == nil {
			out[key] = b
		} else if !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
	}
	add(store.TraceKey(id), filepath.Join(dir, store.TraceName))
	add(store.BundleKey(id), filepath.Join(dir, store.BundleName))
	add(store.LogKey(id, store.RunStateName), filepath.Join(dir, store.RunStateName))
	for _, sub := range []string{"history", "logs"} {
		ents, _ := os.ReadDir(filepath.Join(dir, sub))
		for _, e := range ents {
			if !strings.HasPrefix(e.Name(), ".") && e.Type().IsRegular() {
				add(store.TrajectoryPrefix(id)+sub+"/"+e.Name(), filepath.Join(dir, sub, e.Name()))
			}
		}
	}
	return out
}

// checkUploaded: every object of the trajectory folder is in the store
// with the same bytes. It returns how many.
func checkUploaded(t *testing.T, st store.Store, id, dir string) int {
	t.Helper()
	local := folderObjects(t, id, dir)
	remote := storeObjects(t, st, store.TrajectoryPrefix(id))
	for k, b := range local {
		r, ok := remote[k]
		if !ok {
			t.Errorf("%s: not in the store", k)
		} else if !bytes.Equal(r, b) {
			t.Errorf("%s: the store's copy differs from the local file (%d vs %d bytes)", k, len(r), len(b))
		}
	}
	return len(local)
}

// grepSecrets fails the test if any secret value occurs in the bytes.
func grepSecrets(t *testing.T, where string, data []byte, secrets map[string]string) {
	t.Helper()
	for name, s := range secrets {
		if bytes.Contains(data, []byte(s)) {
			t.Errorf("%s appears in %s", name, where)
		}
	}
}

// findOpenCode returns the pid of the OpenCode server running in
// workspace, or 0.
func findOpenCode(workspace string) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cwd, _ := os.Readlink("/proc/" + e.Name() + "/cwd")
		cmd, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if cwd == workspace && bytes.Contains(cmd, []byte("opencode")) && bytes.Contains(cmd, []byte("serve")) {
			return pid
		}
	}
	return 0
}

var fastRetry = retry.Policy{BaseDelay: 5 * time.Millisecond, MaxDelay: 50 * time.Millisecond, AttemptTimeout: 500 * time.Millisecond}

// TestFourAtOnce runs four trajectories at the same time on this machine,
// each with the scripted model and its own OpenCode, each exercising one
// failure:
//
//   - flaky: every third store call fails (connection reset, 503 SlowDown,
//     a hang until the attempt times out); the run completes and every
//     object reaches the store.
//   - down: the store is down for the whole run; the run still completes
//     locally, lists what it could not upload, and `traj sync` uploads it
//     all once the store is back.
//   - secrets: an S3 store (versitygw) with credentials in the environment,
//     an API key passed by name, and an agent that prints its environment
//     and hunts for the server password; no secret value appears in the
//     trajectory folder, the logs, the progress output or any object in
//     the store.
//   - agentdies: the OpenCode process group is killed mid-turn; the run
//     ends agent_error within seconds with its trace intact.
//
// And isolation: four distinct ports, workspaces and OpenCode state
// folders, and all four traces validate.
func TestFourAtOnce(t *testing.T) {
	bin := needOpenCode(t)
	traj := needTraj(t)
	srv := s3test.Start(t)
	srv.SetEnv(t)
	apiKey := "key-" + randomHex(t)
	t.Setenv("TRAJ_TEST_API_KEY", apiKey)
	root := t.TempDir()

	type runCase struct {
		name, script string
		storeURL     string
		st           store.Store // injected store (faults), else nil
		fault        *storefault.FailingStore
		res          *orchestrator.Result
		err          error
		events, logs syncBuffer
		dur          time.Duration
		killedAt     time.Time
		password     string // the OpenCode server's, read from its environment
	}
	mkFault := func(name string) (*storefault.FailingStore, store.Store) {
		base, err := local.Open(filepath.Join(root, name, "store"))
		if err != nil {
			t.Fatal(err)
		}
		f := storefault.New(base)
		return f, retry.Wrap(f, fastRetry)
	}
	flakyF, flakyS := mkFault("flaky")
	flakyF.FailEvery(3)
	downF, downS := mkFault("down")
	downF.SetDown(true)
	cases := []*runCase{
		{name: "flaky", script: "testdata/crash.jsonl", st: flakyS, fault: flakyF},
		{name: "down", script: "testdata/crash.jsonl", st: downS, fault: downF},
		{name: "secrets", script: "testdata/secrets.jsonl", storeURL: srv.URL("secrets")},
		{name: "agentdies", script: "testdata/crash.jsonl", storeURL: filepath.Join(root, "agentdies", "store")},
	}
	start := time.Now()
	var wg sync.WaitGroup
	for _, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			opts := orchestrator.Options{
				Task: "testdata/tasks/e2e", Model: "scripted/demo", Script: c.script, MaxParts: 40,
				Timeout: 3 * time.Minute, TrajectoryID: "four-" + c.name, Store: c.storeURL, StoreImpl: c.st,
				WorkDir: filepath.Join(root, c.name, "work"), AgentBin: bin, TrajBin: traj,
				APIKeyEnvs: []string{"TRAJ_TEST_API_KEY"}, AbortGrace: 5 * time.Second,
				// Local: the test finds each OpenCode by its host working
				// folder (in bwrap every one works in /workspace).
				Sandbox:  launch.SandboxOptions{Provider: sandbox.ProviderLocal},
				Reporter: progress.NewJSON(&c.events),
				Logger:   slog.New(slog.NewTextHandler(&c.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
			}
			stop := make(chan struct{})
			running := func() bool {
				select {
				case <-stop:
					return false
				default:
					return true
				}
			}
			var watch sync.WaitGroup
			defer watch.Wait()
			defer close(stop)
			if c.name == "secrets" {
				ws := filepath.Join(opts.WorkDir, folder.SandboxesDir, opts.TrajectoryID, "workspace")
				watch.Add(1)
				go func() {
					defer watch.Done()
					for running() && c.password == "" {
						if pid := findOpenCode(ws); pid > 0 {
							env, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
							for _, kv := range bytes.Split(env, []byte{0}) {
								if v, ok := bytes.CutPrefix(kv, []byte("OPENCODE_SERVER_PASSWORD=")); ok {
									c.password = string(v)
								}
							}
						}
						time.Sleep(20 * time.Millisecond)
					}
				}()
			}
			if c.name == "agentdies" {
				ws := filepath.Join(opts.WorkDir, folder.SandboxesDir, opts.TrajectoryID, "workspace")
				watch.Add(1)
				go func() {
					defer watch.Done()
					for running() {
						if c.events.maxPart() >= 3 {
							if pid := findOpenCode(ws); pid > 0 {
								c.killedAt = time.Now()
								syscall.Kill(-pid, syscall.SIGKILL)
								return
							}
						}
						time.Sleep(20 * time.Millisecond)
					}
				}()
			}
			t0 := time.Now()
			c.res, c.err = orchestrator.Run(context.Background(), opts)
			c.dur = time.Since(t0)
		}()
	}
	wg.Wait()
	t.Logf("four trajectories at once in %s", time.Since(start).Round(time.Second))

	ports := map[string]string{}
	attach := regexp.MustCompile(`127\.0\.0\.1:(\d+)`)
	for _, c := range cases {
		if c.err != nil || c.res == nil {
			t.Fatalf("%s: run: %v\nlogs:\n%s", c.name, c.err, tail([]byte(c.logs.String()), 4000))
		}
		t.Logf("%s: %s after %d parts in %s", c.name, c.res.End.Reason, c.res.End.TotalParts, c.dur.Round(time.Second))
		raw, err := os.ReadFile(filepath.Join(c.res.Dir, store.TraceName))
		if err != nil {
			t.Fatal(err)
		}
		if probs := trace.Validate(bytes.NewReader(raw)); len(probs) > 0 {
			t.Errorf("%s: trace does not validate: %v", c.name, probs)
		}
		if m := attach.FindStringSubmatch(c.events.String()); m != nil {
			if other, dup := ports[m[1]]; dup {
				t.Errorf("%s and %s both used port %s", c.name, other, m[1])
			}
			ports[m[1]] = c.name
		} else {
			t.Errorf("%s: no OpenCode address in the progress events", c.name)
		}
	}
	// Isolation: distinct workspaces and OpenCode state, nothing shared.
	seen := map[string]string{}
	for _, c := range cases {
		for _, p := range []string{c.res.Workspace, filepath.Join(filepath.Dir(c.res.Workspace), "opencode")} {
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			if other, dup := seen[p]; dup {
				t.Errorf("%s and %s share %s", c.name, other, p)
			}
			seen[p] = c.name
		}
	}

	t.Run("flaky store", func(t *testing.T) {
		c := cases[0]
		if len(c.res.NotUploaded) > 0 {
			t.Fatalf("not uploaded despite retries: %v", c.res.NotUploaded)
		}
		inj := c.fault.Injected()
		c.fault.FailEvery(0) // read back without faults
		n := checkUploaded(t, c.fault, c.res.TrajectoryID, c.res.Dir)
		if c.fault.TotalInjected() == 0 || inj[storefault.SlowDown] == 0 || inj[storefault.Hang] == 0 {
			t.Fatalf("faults injected %v, want every kind", inj)
		}
		t.Logf("%d faults injected (%v); %d objects uploaded, all %d objects of the folder in the store", c.fault.TotalInjected(), inj, len(c.fault.Saved()), n)
	})

	t.Run("store down, then traj sync", func(t *testing.T) {
		c := cases[1]
		if c.res.End.Reason != trace.EndSolved {
			t.Errorf("reason %s, want solved: the run must not suffer from the store", c.res.End.Reason)
		}
		if len(c.res.NotUploaded) == 0 {
			t.Fatal("no object reported as not uploaded while the store was down")
		}
		if _, err := os.Stat(filepath.Join(c.res.Dir, store.PendingName)); err != nil {
			t.Fatalf("no record of the objects not uploaded: %v", err)
		}
		injected := c.fault.TotalInjected()
		c.fault.SetDown(false)
		if saved := c.fault.Saved(); len(saved) != 0 {
			t.Fatalf("objects reached a store that was down: %v", saved)
		}
		// The store is back: `traj sync` (the real binary) uploads it all.
		storeDir := filepath.Join(root, "down", "store")
		out, err := exec.Command(traj, "sync", c.res.TrajectoryID, "--work-dir", filepath.Join(root, "down", "work"), "--store", storeDir).CombinedOutput()
		if err != nil {
			t.Fatalf("traj sync: %v\n%s", err, out)
		}
		n := checkUploaded(t, c.fault, c.res.TrajectoryID, c.res.Dir)
		if _, err := os.Stat(filepath.Join(c.res.Dir, store.PendingName)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s still there after a complete sync (%v)", store.PendingName, err)
		}
		// A second sync finds nothing missing and succeeds.
		if out2, err := exec.Command(traj, "sync", c.res.TrajectoryID, "--work-dir", filepath.Join(root, "down", "work"), "--store", storeDir).CombinedOutput(); err != nil {
			t.Fatalf("second traj sync: %v\n%s", err, out2)
		}
		t.Logf("store down: %d faults injected, %d objects not uploaded by the run; traj sync uploaded all %d: %s",
			injected, len(c.res.NotUploaded), n, strings.TrimSpace(string(out)))
	})

	t.Run("secrets", func(t *testing.T) {
		c := cases[2]
		if c.password == "" {
			t.Fatal("could not read the OpenCode server password from its environment")
		}
		secrets := map[string]string{"server password": c.password, "API key": apiKey,
			"S3 access key": srv.AccessKey, "S3 secret key": srv.SecretKey}
		raw, _ := os.ReadFile(filepath.Join(c.res.Dir, store.TraceName))
		if !bytes.Contains(raw, []byte("PATH=")) || !bytes.Contains(raw, []byte(secret.Redacted)) {
			t.Fatalf("the agent's env output is not in the trace, or nothing was redacted")
		}
		filepath.WalkDir(c.res.Dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				b, _ := os.ReadFile(p)
				grepSecrets(t, p, b, secrets)
			}
			return err
		})
		grepSecrets(t, "the run's log", []byte(c.logs.String()), secrets)
		grepSecrets(t, "the progress events", []byte(c.events.String()), secrets)
		st, err := location.Open(context.Background(), srv.URL("secrets"), location.Options{})
		if err != nil {
			t.Fatal(err)
		}
		objs := storeObjects(t, st, "")
		if len(objs) == 0 {
			t.Fatal("nothing uploaded to S3")
		}
		for k, b := range objs {
			grepSecrets(t, "s3 object "+k, b, secrets)
		}
		t.Logf("%d secrets absent from the trajectory folder, logs, progress and %d S3 objects", len(secrets), len(objs))
	})

	t.Run("agent dies mid-turn", func(t *testing.T) {
		c := cases[3]
		if c.killedAt.IsZero() {
			t.Fatalf("OpenCode was never killed (run ended %s after %d parts)", c.res.End.Reason, c.res.End.TotalParts)
		}
		if c.res.End.Reason != trace.EndAgentError {
			t.Fatalf("reason %s (%s), want agent_error", c.res.End.Reason, c.res.End.Detail)
		}
		tr := readTraceFile(t, filepath.Join(c.res.Dir, store.TraceName))
		if tr.SessionEnd == nil || tr.SessionEnd.TotalParts < 3 || tr.SessionEnd.Detail == "" {
			t.Fatalf("session_end %+v, want the recorded parts and a detail", tr.SessionEnd)
		}
		ended := time.Time{}
		for _, line := range strings.Split(c.events.String(), "\n") {
			if strings.Contains(line, `"type":"run_ended"`) {
				ended = time.Now() // events carry their own time; parse it
				if i := strings.Index(line, `"time":"`); i >= 0 {
					if ts, err := time.Parse(time.RFC3339Nano, line[i+8:i+8+strings.Index(line[i+8:], `"`)]); err == nil {
						ended = ts
					}
				}
			}
		}
		took := ended.Sub(c.killedAt)
		// Noticed, not stalled: far under the stall watchdog's 30 minutes
		// (the final tree's ground truth still lands first; 25 s on a
		// loaded CI machine).
		if took > 2*time.Minute {
			t.Errorf("the run ended %s after OpenCode died, want seconds", took)
		}
		t.Logf("OpenCode killed after part %d: agent_error %s later (%s), %d parts intact", tr.SessionEnd.TotalParts, took.Round(time.Millisecond), tr.SessionEnd.Detail, tr.SessionEnd.TotalParts)
		// Every write of the run (header, turns, parts, session_end)
		// reached the store as a chunk the recorder handed to its
		// publisher: the chunks alone put the final trace back together.
		raw, err := os.ReadFile(filepath.Join(c.res.Dir, store.TraceName))
		if err != nil {
			t.Fatal(err)
		}
		checkChunks(t, filepath.Join(root, "agentdies", "store"), c.res.TrajectoryID, raw)
		waitNoProcessesUnder(t, filepath.Join(root, "agentdies"), 5*time.Second)
	})
}
