// Package image builds the container sandbox's image offline from Debian
// packages: mmdebstrap makes a root file system (variant essential, plus
// the packages below) and the container engine imports it. The harness
// binaries and traj itself are not in the image: the container provider
// mounts them read-only, so one image serves every harness version.
//
// The image's tag is a digest of the recipe (suite, packages), so
// changing the recipe builds a new image and an existing one is reused:
// Ensure costs one `image exists` call when the image is there. Measured
// here: about 60 s for mmdebstrap and 8 s for `podman import`.
package image

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/trajlab/traj/sandbox/xec"
)

// Suite is the Debian release the image is built from.
const Suite = "bookworm"

// Packages are installed on top of the essential set: a C toolchain,
// git, and CA certificates for harnesses that reach HTTPS endpoints.
var Packages = []string{"gcc", "libc6-dev", "make", "git", "ca-certificates", "procps"}

// Repository is the image's name without the tag.
const Repository = "localhost/traj-sandbox"

// Name is the image with its recipe tag, e.g. localhost/traj-sandbox:1a2b3c4d5e6f.
func Name() string {
	h := sha256.Sum256([]byte(Suite + "\n" + strings.Join(Packages, ",")))
	return Repository + ":" + hex.EncodeToString(h[:6])
}

// Engine is how to run a container engine's CLI: its binary and the
// global arguments and environment it needs on this machine.
type Engine struct {
	Bin  string
	Args []string
	Env  []string
}

// Run runs `engine <Args> args…` through sandbox/xec (its own process
// group, killed whole at timeout) and returns its output, stdout and
// stderr interleaved; with log set the output streams there instead. An
// exit status other than 0 is an error carrying the output.
func (e Engine) Run(ctx context.Context, timeout time.Duration, log io.Writer, args ...string) (string, error) {
	return run(ctx, xec.Command{Path: e.Bin, Args: append(append([]string(nil), e.Args...), args...),
		Env: append(os.Environ(), e.Env...), Timeout: timeout, OutputLimit: 64 << 10, CombineOutput: true, Output: log})
}

// run runs c and turns a failure into an error with its output.
func run(ctx context.Context, c xec.Command) (string, error) {
	res, err := xec.Run(ctx, c)
	out := strings.TrimSpace(res.Stdout)
	switch {
	case err != nil:
		return out, err
	case res.TimedOut:
		return out, fmt.Errorf("%s %s: no answer in %s", c.Path, strings.Join(c.Args, " "), c.Timeout)
	case res.ExitCode != 0:
		return out, fmt.Errorf("%s %s: exit status %d: %s", c.Path, strings.Join(c.Args, " "), res.ExitCode, out)
	}
	return out, nil
}

// Exists reports whether the engine has image name.
func Exists(ctx context.Context, e Engine, name string) bool {
	_, err := e.Run(ctx, time.Minute, nil, "image", "inspect", "--format", "{{.Id}}", name)
	return err == nil
}

// Ensure returns Name(), building it first when the engine does not have
// it. Builds are serialised by a lock file in cacheDir (parallel test
// packages and trajectories share one build); progress goes to log.
func Ensure(ctx context.Context, e Engine, cacheDir string, log io.Writer) (string, error) {
	name := Name()
	if Exists(ctx, e, name) {
		return name, nil
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", fmt.Errorf("build image: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(cacheDir, "image.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("build image: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("build image: lock: %w", err)
	}
	if Exists(ctx, e, name) { // built while we waited
		return name, nil
	}
	if err := Build(ctx, e, cacheDir, log); err != nil {
		return "", err
	}
	return name, nil
}

// buildTimeout bounds mmdebstrap and the import (measured: about 60 s
// and 8 s; a slow mirror takes longer).
const buildTimeout = 30 * time.Minute

// Build makes the root file system with mmdebstrap and imports it as
// Name(), whether or not it exists.
func Build(ctx context.Context, e Engine, cacheDir string, log io.Writer) error {
	if _, err := exec.LookPath("mmdebstrap"); err != nil {
		return fmt.Errorf("build image: mmdebstrap not found (Debian: apt-get install mmdebstrap; `make setup` does it)")
	}
	tmp, err := os.MkdirTemp(cacheDir, "rootfs-")
	if err != nil {
		return fmt.Errorf("build image: %w", err)
	}
	defer os.RemoveAll(tmp)
	tar := filepath.Join(tmp, "rootfs.tar")
	fmt.Fprintf(log, "building %s: mmdebstrap %s with %s (about a minute)\n", Name(), Suite, strings.Join(Packages, ", "))
	_, err = run(ctx, xec.Command{Path: "mmdebstrap", Args: []string{"--variant=essential", "--include=" + strings.Join(Packages, ","),
		"--quiet", Suite, tar}, Timeout: buildTimeout, Output: log})
	if err != nil {
		return fmt.Errorf("build image: %w", err)
	}
	fmt.Fprintf(log, "importing %s\n", Name())
	if _, err := e.Run(ctx, buildTimeout, log, "import", "--change", `CMD ["/bin/sh"]`, tar, Name()); err != nil {
		return fmt.Errorf("build image: import: %w", err)
	}
	return nil
}
