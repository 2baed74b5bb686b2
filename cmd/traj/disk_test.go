package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trajlab/traj/orchestrator/folder"
	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/sandbox/disk"
	"github.com/trajlab/traj/sandbox/opencode"
)

// TestDiskCap attacks the sandbox's disk cap (--disk), in bwrap and in a
// container: the scripted agent writes 200 MiB of random bytes into a
// 64 MiB workspace (OpenCode then snapshots them), makes room and writes
// a small file, then writes 200 MiB into OpenCode's own state folder; a
// resume finds the small file again. Both writes must fail inside the
// sandbox with ENOSPC, the disk that holds the store must never grow by
// more than the cap and what a run writes besides (sampled during the
// run), the trace must be valid with every later part recorded, and no
// mount may outlive a run.
func TestDiskCap(t *testing.T) {
	t.Parallel() // with the other recording tests: see main_test.go
	if err := disk.Available(); err != nil {
		if os.Geteuid() != 0 && os.Getenv("CI") == "" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	traj := trajExe(t)
	bin, err := opencode.ResolveBinary("")
	if err != nil {
		t.Fatalf("%v (make setup)", err)
	}
	for _, provider := range []string{sandbox.ProviderBwrap, sandbox.ProviderContainer} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			requireSandbox(t, provider)
			diskCap(t, traj, bin, provider)
		})
	}
}

// diskCap is TestDiskCap in one provider.
func diskCap(t *testing.T, traj, bin, provider string) {
	const capBytes = 64 << 20
	// What else a run writes beside the sandbox's image: trace, logs, the
	// checkpoint history (the big file is a stub there). OpenCode's state
	// (its snapshots copy the workspace) is in the image.
	const besides = 16 << 20
	root := t.TempDir()
	store := filepath.Join(root, "store")
	id := "disk-" + provider
	ws := filepath.Join(store, "sandboxes", id, "workspace")
	shell := func(cmd string) string {
		b, _ := json.Marshal(map[string]any{"text": "Run it.", "tools": []any{map[string]any{"name": "bash",
			"args": map[string]any{"command": cmd, "description": "shell"}}}})
		return string(b) + "\n"
	}
	first := filepath.Join(root, "first.jsonl")
	// Incompressible bytes (a git snapshot of them is as big), into the
	// workspace and then into the harness's own state folder, which the
	// agent's sandbox shows writable.
	write(t, first, shell("echo FILL; dd if=/dev/urandom of=big bs=1M count=200 2>&1; echo dd status=$?; sleep 1")+
		shell("echo ROOM; rm -f big && echo small > small.txt && echo SMALL-WRITTEN")+
		shell("echo STATE; dd if=/dev/urandom of=/opt/opencode/xdg/data/junk bs=1M count=200 2>&1; echo dd status=$?; rm -f /opt/opencode/xdg/data/junk")+
		`{"text":"Done."}`+"\n")
	again := filepath.Join(root, "again.jsonl")
	write(t, again, shell("echo RESUMED; cat small.txt; df -k . | tail -1")+`{"text":"Done."}`+"\n")

	run := func(args ...string) {
		t.Helper()
		args = append([]string{"run", "--store", store, "--agent-bin", bin, "--sandbox", provider, "--quiet"}, args...)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var peak, freeDrop int64
		wg.Add(1)
		go func() {
			defer wg.Done()
			before := freeBytes(t, root)
			for {
				peak = max(peak, hostUse(store))
				freeDrop = max(freeDrop, before-freeBytes(t, root))
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
				}
			}
		}()
		cmd := exec.Command(traj, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		close(stop)
		wg.Wait()
		// 3 is agent_error: the script ran out of answers, its end.
		if ee, ok := err.(*exec.ExitError); err != nil && !(ok && ee.ExitCode() == 3) {
			t.Fatalf("traj %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
		t.Logf("traj %s:\n%s", strings.Join(args, " "), out.String())
		// The free space of the whole filesystem moves with everything
		// else this machine does: logged, not asserted.
		t.Logf("store's disk use at its peak %d MiB (cap %d MiB); the filesystem's free space dropped by up to %d MiB",
			peak>>20, capBytes>>20, freeDrop>>20)
		if peak > capBytes+besides {
			t.Errorf("the store's disk grew to %d MiB with a %d MiB workspace cap", peak>>20, capBytes>>20)
		}
		if m, err := disk.Mounted(ws); err != nil || m {
			t.Errorf("the workspace is still mounted after the run (%v)", err)
		}
	}
	run("--trajectory-id", id, "--task", "testdata/tasks/adversarial", "--model", "scripted/demo",
		"--script", first, "--max-parts", "20", "--timeout", "5m", "--disk", "64MiB")
	run("--resume", id, "--script", again, "--max-parts", "40")

	dir := filepath.Join(store, "trajectories", id)
	tr := validatedTrace(t, traj, dir)
	outputs := map[string]string{}
	var bigSize int64 = -1
	for _, turn := range tr.Turns {
		for _, p := range turn.Parts {
			var content any
			_ = json.Unmarshal(p.Content, &content)
			for _, m := range []string{"FILL", "ROOM", "STATE", "RESUMED"} {
				if o := longestWithPrefix(content, m+"\n"); o != "" {
					outputs[m] = o
				}
			}
			if p.RepoCheckpoint == nil {
				continue
			}
			for _, s := range p.RepoCheckpoint.StubbedFiles {
				if s.Path == "big" {
					bigSize = s.Size
				}
			}
		}
	}
	if !strings.Contains(outputs["FILL"], "No space left on device") || !strings.Contains(outputs["FILL"], "dd status=1") {
		t.Errorf("the 200 MiB write did not fail with ENOSPC inside the sandbox: %q", outputs["FILL"])
	}
	if bigSize <= 0 || bigSize > capBytes {
		t.Errorf("the checkpoint recorded big at %d bytes; want some, at most the cap %d", bigSize, capBytes)
	}
	if !strings.Contains(outputs["STATE"], "No space left on device") || !strings.Contains(outputs["STATE"], "dd status=1") {
		t.Errorf("the 200 MiB write into OpenCode's state folder did not fail with ENOSPC: %q", outputs["STATE"])
	}
	if !strings.Contains(outputs["ROOM"], "SMALL-WRITTEN") {
		t.Errorf("the part after the full disk did not go on: %q", outputs["ROOM"])
	}
	if !strings.Contains(outputs["RESUMED"], "RESUMED\nsmall\n") {
		t.Errorf("the resumed run does not see the workspace it left: %q", outputs["RESUMED"])
	}
	if tr.SessionEnd == nil || len(tr.Turns) < 2 {
		t.Errorf("session_end %+v after %d turns; want a finished trace of both runs", tr.SessionEnd, len(tr.Turns))
	}
	if a := hostUse(filepath.Join(store, "sandboxes", id, folder.DiskImageName)); a > capBytes {
		t.Errorf("the sandbox's image holds %d bytes, over the cap %d", a, capBytes)
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mounts), root) {
		t.Errorf("a mount under the test's folder is left:\n%s", mounts)
	}
}

// hostUse is the disk space (allocated blocks) of the files under p on
// p's own filesystem: a mounted workspace counts by its image's blocks.
func hostUse(p string) int64 {
	var rootSt syscall.Stat_t
	if syscall.Lstat(p, &rootSt) != nil {
		return 0
	}
	var n int64
	_ = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		var st syscall.Stat_t
		if syscall.Lstat(path, &st) != nil {
			return nil
		}
		if st.Dev != rootSt.Dev {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		n += st.Blocks * 512
		return nil
	})
	return n
}

// freeBytes is the free space of the filesystem holding p.
func freeBytes(t *testing.T, p string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(p, &st); err != nil {
		t.Error(fmt.Errorf("statfs %s: %w", p, err))
		return 0
	}
	return int64(st.Bavail) * st.Bsize
}
