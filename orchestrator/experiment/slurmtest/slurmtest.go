// Package slurmtest starts a real single-node Slurm for tests: its own
// munged, slurmctld and slurmd in a temporary folder, on free ports.
package slurmtest

import (
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Cluster is a single-node Slurm (slurmctld, slurmd) with its own
// munged, all configured in a temporary folder, on free ports. Measured
// settings (DESIGN.md, Experiments): proctrack/linuxproc, task/none,
// select/cons_tres; munged runs as user munge with a socket folder every
// user can traverse.
type Cluster struct {
	dir  string
	conf string
	// Env holds SLURM_CONF for commands that talk to this cluster.
	Env []string
}

// Need fails when Slurm or munge are missing (make setup installs
// them); outside CI, TRAJ_SKIP_SLURM=1 skips instead.
func Need(t *testing.T) {
	t.Helper()
	var missing []string
	for _, b := range []string{"slurmctld", "slurmd", "munged", "sbatch", "squeue", "scancel", "setpriv"} {
		if _, err := exec.LookPath(b); err != nil {
			if _, err := os.Stat("/usr/sbin/" + b); err != nil {
				missing = append(missing, b)
			}
		}
	}
	if _, err := user.Lookup("munge"); err != nil {
		missing = append(missing, "user munge")
	}
	if os.Geteuid() != 0 {
		missing = append(missing, "root (slurmd and munged need it)")
	}
	if len(missing) == 0 {
		return
	}
	if os.Getenv("CI") == "" && os.Getenv("TRAJ_SKIP_SLURM") == "1" {
		t.Skipf("TRAJ_SKIP_SLURM=1: missing %v", missing)
	}
	t.Fatalf("Slurm test needs %v (make setup installs slurm-wlm and munge)", missing)
}

func sbin(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return "/usr/sbin/" + name
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startDaemon starts a foreground daemon that dies with the test process
// and is stopped (SIGTERM, then SIGKILL) at cleanup.
func startDaemon(t *testing.T, logPath string, name string, args ...string) {
	t.Helper()
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done); logf.Close() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
}

// Start starts the cluster; everything stops at the test's cleanup, jobs
// first.
func Start(t *testing.T) *Cluster {
	t.Helper()
	dir, err := os.MkdirTemp("", "traj-slurm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// munged refuses a socket folder others cannot traverse, and runs as munge.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	mu, err := user.Lookup("munge")
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(mu.Uid)
	gid, _ := strconv.Atoi(mu.Gid)
	keyDir, sockDir := filepath.Join(dir, "munge"), filepath.Join(dir, "munge-socket")
	for d, mode := range map[string]os.FileMode{keyDir: 0o700, sockDir: 0o755} {
		if err := os.Mkdir(d, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	key := make([]byte, 1024)
	_, _ = rand.Read(key)
	keyPath := filepath.Join(keyDir, "munge.key")
	if err := os.WriteFile(keyPath, key, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(keyPath, uid, gid); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(sockDir, "munge.socket")
	startDaemon(t, filepath.Join(dir, "munged.out"), "setpriv", "--reuid=munge", "--regid=munge", "--clear-groups",
		sbin("munged"), "-F", "--socket="+sock, "--key-file="+keyPath, "--log-file="+filepath.Join(keyDir, "munged.log"),
		"--pid-file="+filepath.Join(keyDir, "munged.pid"), "--seed-file="+filepath.Join(keyDir, "munged.seed"))
	WaitFor(t, 15*time.Second, "munged socket", func() bool { _, err := os.Stat(sock); return err == nil })

	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"state", "spool"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c := &Cluster{dir: dir, conf: filepath.Join(dir, "slurm.conf")}
	conf := fmt.Sprintf(`ClusterName=trajtest
SlurmctldHost=%[1]s(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=%[2]d
SlurmdPort=%[3]d
AuthType=auth/munge
AuthInfo=socket=%[4]s
CredType=cred/munge
StateSaveLocation=%[5]s/state
SlurmdSpoolDir=%[5]s/spool
SlurmctldPidFile=%[5]s/slurmctld.pid
SlurmdPidFile=%[5]s/slurmd.pid
SlurmctldLogFile=%[5]s/slurmctld.log
SlurmdLogFile=%[5]s/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
MpiDefault=none
MailProg=/bin/true
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
KillWait=15
NodeName=%[1]s NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
`, host, freePort(t), freePort(t), sock, dir)
	if err := os.WriteFile(c.conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	c.Env = []string{"SLURM_CONF=" + c.conf}
	startDaemon(t, filepath.Join(dir, "slurmctld.out"), sbin("slurmctld"), "-D", "-i", "-f", c.conf)
	startDaemon(t, filepath.Join(dir, "slurmd.out"), sbin("slurmd"), "-D", "-f", c.conf, "-N", host)
	t.Cleanup(func() {
		// Jobs first, so no task outlives the cluster.
		_, _ = c.Run("scancel", "--full", "-u", "root")
	})
	WaitFor(t, 60*time.Second, "an idle Slurm node", func() bool {
		out, err := c.Run("sinfo", "-h", "-o", "%T")
		return err == nil && strings.Contains(out, "idle")
	})
	return c
}

// Run runs a Slurm command against the cluster.
func (c *Cluster) Run(name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), c.Env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Queue is squeue's view of every job: "id_index STATE" lines.
func (c *Cluster) Queue(t *testing.T) string {
	out, err := c.Run("squeue", "-h", "-r", "-o", "%i %T")
	if err != nil {
		t.Fatalf("squeue: %v: %s", err, out)
	}
	return strings.TrimSpace(out)
}

// Logs are the tails of the daemons' logs, for a failed test.
func (c *Cluster) Logs() string {
	var b strings.Builder
	for _, f := range []string{"slurmctld.log", "slurmd.log", "munged.out"} {
		data, _ := os.ReadFile(filepath.Join(c.dir, f))
		if len(data) > 3000 {
			data = data[len(data)-3000:]
		}
		fmt.Fprintf(&b, "--- %s\n%s\n", f, data)
	}
	return b.String()
}

// WaitFor polls ok every 250 ms for up to d.
func WaitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
