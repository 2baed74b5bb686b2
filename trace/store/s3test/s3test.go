// Package s3test starts a real S3 server (versitygw, a production S3
// gateway that enforces SigV4 and strict multipart checksums) on 127.0.0.1
// for tests, with a fresh bucket. The binary comes from TRAJ_VERSITYGW_BIN,
// PATH, or .tools/bin/versitygw in the module root (installed by
// `make setup`). A missing binary fails the test; only TRAJ_SKIP_S3_TESTS=1
// turns that into a skip, and CI never sets it.
package s3test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	s3store "github.com/trajlab/traj/trace/store/s3"
)

// Server is a running versitygw with one bucket.
type Server struct {
	// Endpoint is http://127.0.0.1:PORT.
	Endpoint string
	Bucket   string
	Region   string
	// AccessKey and SecretKey are the server's random root credentials.
	AccessKey, SecretKey string

	prefixMu sync.Mutex
	prefixN  int
}

// URL is an s3:// store URL for the bucket under prefix (may be empty),
// carrying the endpoint, path style and region; credentials come from Env
// or Credentials.
func (s *Server) URL(prefix string) string {
	q := url.Values{"endpoint": {s.Endpoint}, "path_style": {"true"}, "region": {s.Region}}
	u := "s3://" + s.Bucket
	if prefix != "" {
		u += "/" + prefix
	}
	return u + "?" + q.Encode()
}

// Env is the environment a child process (or t.Setenv) needs to reach the
// server through the standard credential chain.
func (s *Server) Env() []string {
	return []string{
		"AWS_ACCESS_KEY_ID=" + s.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + s.SecretKey,
		"AWS_REGION=" + s.Region,
		"AWS_EC2_METADATA_DISABLED=true",
	}
}

// SetEnv puts Env into the test's environment (not for parallel tests).
func (s *Server) SetEnv(t testing.TB) {
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// Credentials is a static provider for the server's root user.
func (s *Server) Credentials() aws.CredentialsProvider {
	return credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, "")
}

// Config is an s3 store config for a new, unique prefix in the bucket, so
// each caller sees an empty store.
func (s *Server) Config() s3store.Config {
	s.prefixMu.Lock()
	s.prefixN++
	n := s.prefixN
	s.prefixMu.Unlock()
	return s3store.Config{
		Bucket:      s.Bucket,
		Prefix:      fmt.Sprintf("t%04d/", n),
		Endpoint:    s.Endpoint,
		Region:      s.Region,
		PathStyle:   true,
		Credentials: s.Credentials(),
	}
}

// Binary finds versitygw, or says how to install it.
func Binary() (string, error) {
	if p := os.Getenv("TRAJ_VERSITYGW_BIN"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	dir, err := os.Getwd()
	for err == nil {
		p := filepath.Join(dir, ".tools", "bin", "versitygw")
		if _, serr := os.Stat(filepath.Join(dir, "go.mod")); serr == nil {
			if _, serr := os.Stat(p); serr == nil {
				return p, nil
			}
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "", errors.New("versitygw not found (TRAJ_VERSITYGW_BIN, PATH, .tools/bin): run `make setup`")
}

// Start runs versitygw on a free 127.0.0.1 port with random root
// credentials and a fresh bucket; it stops when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		if os.Getenv("TRAJ_SKIP_S3_TESTS") == "1" {
			t.Skipf("TRAJ_SKIP_S3_TESTS=1: %v", err)
		}
		t.Fatal(err)
	}
	srv := &Server{
		Bucket:    "traj-test",
		Region:    "us-east-1",
		AccessKey: "AK" + randHex(t, 8),
		SecretKey: "SK" + randHex(t, 16),
	}
	root := t.TempDir()
	var lastErr error
	for range 3 { // a free port can be taken between probe and bind
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		srv.Endpoint = fmt.Sprintf("http://127.0.0.1:%d", port)
		if lastErr = run(t, bin, srv, root, port); lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		t.Fatalf("start versitygw: %v", lastErr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := s3.New(s3.Options{
		Region:       srv.Region,
		BaseEndpoint: aws.String(srv.Endpoint),
		UsePathStyle: true,
		Credentials:  srv.Credentials(),
	})
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(srv.Bucket)}); err != nil {
		t.Fatalf("create bucket %s on versitygw: %v", srv.Bucket, err)
	}
	return srv
}

func run(t testing.TB, bin string, srv *Server, root string, port int) error {
	args := []string{
		"--port", fmt.Sprintf("127.0.0.1:%d", port),
		"--access", srv.AccessKey, "--secret", srv.SecretKey,
		"--region", srv.Region, "--quiet",
		"posix",
	}
	if !xattrSupported(root) {
		sidecar := filepath.Join(t.TempDir(), "sidecar")
		if err := os.MkdirAll(sidecar, 0o755); err != nil {
			return err
		}
		args = append(args, "--sidecar", sidecar)
	}
	args = append(args, root)
	cmd := exec.Command(bin, args...)
	// Credentials go on the command line of a loopback test server only;
	// keep the child's environment free of the caller's AWS settings.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("run %s: %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		select {
		case err := <-exited:
			exited <- err
			return fmt.Errorf("versitygw exited: %v: %s", err, stderr.String())
		default:
		}
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 200*time.Millisecond)
		if err == nil {
			c.Close()
			t.Cleanup(stop)
			return nil
		}
		if time.Now().After(deadline) {
			stop()
			return fmt.Errorf("versitygw did not listen on port %d within 15s: %s", port, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func xattrSupported(dir string) bool {
	err := syscall.Setxattr(dir, "user.traj-probe", []byte("1"), 0)
	if err == nil {
		syscall.Removexattr(dir, "user.traj-probe")
	}
	return err == nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randHex(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
