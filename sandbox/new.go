package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/trajlab/traj/sandbox/xec"
)

// Providers, in the order Default tries them.
const (
	ProviderBwrap     = "bwrap"
	ProviderContainer = "container"
	ProviderLocal     = "local"
)

// installAdvice is what to do when no isolating provider works.
const installAdvice = "install bubblewrap (Debian: apt-get install bubblewrap; `make setup` does it) " +
	"or podman and build the image (`make image`), or pass --sandbox local to run the agent uncontained"

// ErrNoProvider: neither bwrap nor a container engine works here.
var ErrNoProvider = errors.New("no sandbox provider works on this machine: " + installAdvice)

// New makes a sandbox of the named provider ("" picks Default).
func New(ctx context.Context, provider string, opts Options) (Sandbox, error) {
	if provider == "" {
		p, err := Default(ctx)
		if err != nil {
			return nil, err
		}
		provider = p
	}
	switch provider {
	case ProviderBwrap:
		if err := BwrapWorks(ctx); err != nil {
			return nil, err
		}
		return NewBwrap(ctx, opts)
	case ProviderContainer:
		return NewContainer(ctx, opts)
	case ProviderLocal:
		return NewLocal(ctx, opts)
	}
	return nil, fmt.Errorf("sandbox %q: want bwrap, container or local", provider)
}

// Default is bwrap when it works here, else container when an engine and
// the image are there; otherwise ErrNoProvider (local is never chosen
// silently).
func Default(ctx context.Context) (string, error) {
	bwErr := BwrapWorks(ctx)
	if bwErr == nil {
		return ProviderBwrap, nil
	}
	_, ctErr := ContainerWorks(ctx, "", "")
	if ctErr == nil {
		return ProviderContainer, nil
	}
	return "", fmt.Errorf("%w\n  bwrap: %v\n  container: %v", ErrNoProvider, bwErr, ctErr)
}

// BwrapWorks runs `true` in a bwrap with the namespaces a sandbox uses:
// bwrap can be installed and still refused (no unprivileged user
// namespaces, a seccomp profile of a container traj runs in).
//
// The probe runs without a guard, so it is built to end by itself when
// traj dies: no --die-with-parent and no Pdeathsig, since an outer bwrap
// killed before it releases the namespace's init leaves that init
// blocked for good (sandbox/xec/guard.go); unkilled, the probe exits in
// milliseconds. A timeout kills its process group, the init included.
func BwrapWorks(ctx context.Context) error {
	bin, err := exec.LookPath("bwrap")
	if err != nil {
		return fmt.Errorf("bwrap not found: %s", installAdvice)
	}
	args := []string{"--unshare-all", "--unshare-user", "--uid", InsideUID, "--gid", InsideGID,
		"--ro-bind", "/usr", "/usr"}
	for _, d := range []string{"/bin", "/lib", "/lib64"} {
		if t, err := os.Readlink(d); err == nil {
			args = append(args, "--symlink", t, d)
		} else if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			args = append(args, "--ro-bind", d, d)
		}
	}
	args = append(args, "--proc", "/proc", "--dev", "/dev", "--", "/bin/sh", "-c", "exit 0")
	res, err := xec.Run(ctx, xec.Command{Path: bin, Args: args, Timeout: 10 * time.Second, OutputLimit: 16 << 10, CombineOutput: true})
	switch {
	case err != nil:
		return fmt.Errorf("bwrap does not work here: %w", err)
	case res.TimedOut:
		return fmt.Errorf("bwrap does not work here: no exit in 10s")
	case res.ExitCode != 0:
		return fmt.Errorf("bwrap does not work here: exit status %d: %s", res.ExitCode, strings.TrimSpace(res.Stdout))
	}
	return nil
}

func randomSuffix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
