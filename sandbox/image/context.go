package image

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// ContextBuild is an image built from a folder with a Dockerfile (a
// Harbor task's environment/), offline where the machine is: every FROM
// image must be present or be a Debian release (EnsureDebian), and the
// engine never pulls.
type ContextBuild struct {
	// Dir is the build context; Dockerfile is inside it ("Dockerfile"
	// when empty).
	Dir        string
	Dockerfile string
	// Repository names the image without its tag (the tag is the
	// context's digest).
	Repository string
	// Timeout bounds the build (0: 30 minutes).
	Timeout time.Duration
	// CacheDir holds the locks and the Debian root file systems while
	// they are built.
	CacheDir string
}

// Built is a context's image: Name (repository:digest tag) and the
// engine's image ID (what results are keyed by).
type Built struct {
	Name string
	ID   string
}

// fromRE is a Dockerfile FROM line: flags, the image, an optional stage name.
var fromRE = regexp.MustCompile(`(?i)^\s*FROM\s+((?:--\S+\s+)*)(\S+)(?:\s+AS\s+(\S+))?\s*$`)

// instructionRE is the engine's announcement of a Dockerfile instruction
// (podman: "STEP 2/4: RUN …"; docker's BuildKit: "#6 [2/4] RUN …").
var instructionRE = regexp.MustCompile(`^(STEP \d+/\d+: .*|#\d+ \[[^\]]*\d+/\d+\] .*)$`)

// Bases lists the images a Dockerfile's FROM lines name (stages named by
// an earlier FROM left out), each with its line number.
func Bases(dockerfile []byte) ([]Base, error) {
	var out []Base
	var stages []string
	sc := bufio.NewScanner(strings.NewReader(string(dockerfile)))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		m := fromRE.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		ref := m[2]
		stage := slices.Contains(stages, strings.ToLower(ref))
		if m[3] != "" {
			stages = append(stages, strings.ToLower(m[3]))
		}
		if stage || ref == "scratch" {
			continue
		}
		if strings.Contains(ref, "$") {
			return nil, fmt.Errorf("line %d: FROM %s: a build argument in FROM is not supported (name the image)", n, ref)
		}
		out = append(out, Base{Line: n, Ref: ref})
	}
	return out, sc.Err()
}

// Base is one FROM image of a Dockerfile.
type Base struct {
	Line int
	Ref  string
}

// BuildContext returns b's image, building it when the engine has no
// image tagged with the context's digest: FROM images are found locally
// or built (Debian); a base that needs a registry, and a Dockerfile
// instruction that fails (a RUN reaching PyPI from a machine that cannot),
// fail the build with an error naming the line or the instruction.
func BuildContext(ctx context.Context, e Engine, b ContextBuild, log io.Writer) (Built, error) {
	if log == nil {
		log = io.Discard
	}
	df := b.Dockerfile
	if df == "" {
		df = "Dockerfile"
	}
	raw, err := os.ReadFile(filepath.Join(b.Dir, df))
	if err != nil {
		return Built{}, fmt.Errorf("build image: %w", err)
	}
	bases, err := Bases(raw)
	if err != nil {
		return Built{}, fmt.Errorf("build image: %s %w", df, err)
	}
	if len(bases) == 0 {
		return Built{}, fmt.Errorf("build image: %s has no FROM line", df)
	}
	digest := sha256.New()
	for _, base := range bases {
		if !Exists(ctx, e, base.Ref) {
			if _, _, ok := DebianRef(base.Ref); !ok {
				return Built{}, fmt.Errorf("build image: %s line %d: FROM %s: the image is not on this machine and traj pulls from no registry (traj builds debian:<release> itself; load %s into the engine first)",
					df, base.Line, base.Ref, base.Ref)
			}
			if err := EnsureDebian(ctx, e, base.Ref, b.CacheDir, log); err != nil {
				return Built{}, fmt.Errorf("build image: %s line %d: %w", df, base.Line, err)
			}
		}
		id, err := e.Run(ctx, time.Minute, nil, "image", "inspect", "--format", "{{.Id}}", base.Ref)
		if err != nil {
			return Built{}, fmt.Errorf("build image: inspect %s: %w", base.Ref, err)
		}
		fmt.Fprintf(digest, "from %s %s\n", base.Ref, id)
	}
	if err := DigestTree(digest, b.Dir); err != nil {
		return Built{}, fmt.Errorf("build image: %w", err)
	}
	name := b.Repository + ":" + hex.EncodeToString(digest.Sum(nil)[:6])
	if !Exists(ctx, e, name) {
		timeout := b.Timeout
		if timeout <= 0 {
			timeout = buildTimeout
		}
		fmt.Fprintf(log, "building %s from %s\n", name, df)
		var out strings.Builder
		w := io.MultiWriter(&out, log)
		// The host's network for the build's RUN lines (Debian's
		// mirror); the rooms that run the image get the task's policy.
		if _, err := e.Run(ctx, timeout, w, "build", "--pull=never", "--network=host", "-f", filepath.Join(b.Dir, df),
			"-t", name, b.Dir); err != nil {
			if s := lastInstruction(out.String()); s != "" {
				return Built{}, fmt.Errorf("build image: %s: %s failed: %s", df, s, tail(out.String(), 1500))
			}
			return Built{}, fmt.Errorf("build image: %s: %w", df, err)
		}
	}
	id, err := e.Run(ctx, time.Minute, nil, "image", "inspect", "--format", "{{.Id}}", name)
	if err != nil {
		return Built{}, fmt.Errorf("build image: inspect %s: %w", name, err)
	}
	return Built{Name: name, ID: id}, nil
}

// lastInstruction is the last Dockerfile instruction the engine announced.
func lastInstruction(out string) string {
	last := ""
	for line := range strings.Lines(out) {
		if line = strings.TrimSpace(line); instructionRE.MatchString(line) {
			last = line
		}
	}
	return last
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// DigestTree writes every file of dir (path, mode, content; a link's
// target) into h in a fixed order: the build context's identity.
func DigestTree(h io.Writer, dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "link %q %q\n", rel, target)
		case d.IsDir():
			fmt.Fprintf(h, "dir %q %o\n", rel, info.Mode().Perm())
		case d.Type().IsRegular():
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			fmt.Fprintf(h, "file %q %o %d\n", rel, info.Mode().Perm(), info.Size())
			if _, err := io.Copy(h, f); err != nil {
				return err
			}
		default:
			return errors.New("build context " + rel + ": not a file, folder or link")
		}
		return nil
	})
}
