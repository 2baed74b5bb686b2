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

	"github.com/trajlab/traj/sandbox/xec"
)

// debianSuites maps the tags of Debian's official images traj can build
// locally to their suite ("-slim" variants map like their full tag).
var debianSuites = map[string]string{
	"bookworm": "bookworm", "12": "bookworm",
	"trixie": "trixie", "13": "trixie",
	"bullseye": "bullseye", "11": "bullseye",
}

// DebianRef says whether ref names one of Debian's official images
// (debian:<release>[-slim], with or without docker.io/library/), and
// returns its canonical name and the suite it is built from. A ref
// without a release tag (or "latest") is refused by the caller: which
// release it means changes over time.
func DebianRef(ref string) (canonical, suite string, ok bool) {
	r := ref
	for _, p := range []string{"docker.io/library/", "docker.io/", "library/", "index.docker.io/library/"} {
		r = strings.TrimPrefix(r, p)
	}
	name, tag, found := strings.Cut(r, ":")
	if name != "debian" || !found || strings.Contains(tag, "@") {
		return "", "", false
	}
	suite, ok = debianSuites[strings.TrimSuffix(tag, "-slim")]
	if !ok {
		return "", "", false
	}
	return "docker.io/library/debian:" + tag, suite, true
}

// debianRepository holds the locally built Debian images, tagged by recipe.
const debianRepository = "localhost/traj-debian"

// debianRecipe is the local image of suite: mmdebstrap's minbase variant
// (apt, bash, coreutils: what Debian's official image holds).
func debianRecipe(suite string) string {
	h := sha256.Sum256([]byte("minbase\n" + suite))
	return debianRepository + ":" + suite + "-" + hex.EncodeToString(h[:6])
}

// EnsureDebian makes ref (a Debian official image, DebianRef) available
// to the engine without a registry: built offline from Debian's packages
// (mmdebstrap --variant=minbase, the engine's import), kept under a
// recipe tag and tagged as ref's canonical name, so a Dockerfile's FROM
// finds it with --pull=never. An image of that name already present
// (pulled, or built before) is used as it is. Builds are serialised by a
// lock in cacheDir. Measured here: about 25 s for bookworm.
func EnsureDebian(ctx context.Context, e Engine, ref, cacheDir string, log io.Writer) error {
	if log == nil {
		log = io.Discard
	}
	canonical, suite, ok := DebianRef(ref)
	if !ok {
		return fmt.Errorf("build %s: not a Debian release image traj can build (debian:bookworm, trixie, bullseye, 11-13, -slim)", ref)
	}
	if Exists(ctx, e, canonical) {
		return nil
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return fmt.Errorf("build %s: %w", ref, err)
	}
	lock, err := os.OpenFile(filepath.Join(cacheDir, "debian-"+suite+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("build %s: %w", ref, err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("build %s: lock: %w", ref, err)
	}
	recipe := debianRecipe(suite)
	if !Exists(ctx, e, recipe) {
		if _, err := exec.LookPath("mmdebstrap"); err != nil {
			return fmt.Errorf("build %s: mmdebstrap not found (Debian: apt-get install mmdebstrap; `make setup` does it)", ref)
		}
		tmp, err := os.MkdirTemp(cacheDir, "rootfs-")
		if err != nil {
			return fmt.Errorf("build %s: %w", ref, err)
		}
		defer os.RemoveAll(tmp)
		tar := filepath.Join(tmp, "rootfs.tar")
		fmt.Fprintf(log, "building %s as %s: mmdebstrap --variant=minbase %s (about 30 s)\n", canonical, recipe, suite)
		if _, err := run(ctx, xec.Command{Path: "mmdebstrap", Args: []string{"--variant=minbase", "--quiet", suite, tar},
			Timeout: buildTimeout, Output: log}); err != nil {
			return fmt.Errorf("build %s: %w", ref, err)
		}
		if _, err := e.Run(ctx, buildTimeout, log, "import", "--change", `CMD ["bash"]`, tar, recipe); err != nil {
			return fmt.Errorf("build %s: import: %w", ref, err)
		}
	}
	if _, err := e.Run(ctx, buildTimeout, log, "tag", recipe, canonical); err != nil {
		return fmt.Errorf("build %s: tag: %w", ref, err)
	}
	return nil
}
