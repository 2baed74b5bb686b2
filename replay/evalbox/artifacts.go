package evalbox

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// artifactsVersion starts every artifacts digest: it changes when what
// the digest covers changes.
const artifactsVersion = "traj-artifacts-v1"

// collectArtifacts copies the declared artifacts of the built tree into
// dst and returns their digest: SHA-256 over each entry's kind, name,
// executable bit and bytes (a symbolic link's target text), in name
// order, and a mark for each declared name that is missing or unreadable.
//
// The tree was built by untrusted code: it is read through an os.Root,
// so no symbolic link (an artifact, or a folder on its way) reaches a
// host file, and links are copied as links, never followed. Everything
// that ran the build is gone by now (a sandbox per action), so nothing
// changes the tree while it is read. Files are copied sparse (a hole
// stays a hole), and artifacts whose sizes (holes included) add up to
// more than limit bytes are refused (a *tooLargeError) before that much
// is copied. Only that and an error on dst's side are returned.
func collectArtifacts(tree, dst string, names []string, limit int64) (string, error) {
	root, err := os.OpenRoot(tree)
	if err != nil {
		return "", fmt.Errorf("read the build's artifacts: %w", err)
	}
	defer root.Close()
	c := &artifactCopy{root: root, dst: dst, limit: limit}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", artifactsVersion)
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	for _, n := range sorted {
		name := strings.TrimSuffix(n, "/")
		fi, err := root.Lstat(name)
		if errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(h, "missing %q\n", name)
			continue
		}
		if err != nil {
			fmt.Fprintf(h, "unreadable %q\n", name)
			continue
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.FromSlash(path.Dir(name))), 0o755); err != nil {
			return "", fmt.Errorf("copy the build's artifacts: %w", err)
		}
		if !fi.IsDir() {
			if err := c.copy(name, fi.Mode(), h); err != nil {
				return "", err
			}
			continue
		}
		werr := fs.WalkDir(root.FS(), name, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				fmt.Fprintf(h, "unreadable %q\n", p)
				return nil
			}
			return c.copy(p, d.Type(), h)
		})
		if werr != nil {
			return "", werr
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// tooLargeError refuses artifacts above the room's cap: the build fails
// with it.
type tooLargeError struct {
	name        string
	size, limit int64
}

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("the build's artifacts are too large: %s brings them to %s, above the cap of %s",
		e.name, mib(e.size), mib(e.limit))
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// artifactCopy copies a built tree's artifacts out of root into dst,
// counting their sizes against limit.
type artifactCopy struct {
	root  *os.Root
	dst   string
	limit int64
	total int64
}

// copy copies one entry of root (mode: its type from Lstat) into dst and
// adds it to the digest h.
func (c *artifactCopy) copy(name string, mode fs.FileMode, h io.Writer) error {
	root := c.root
	to := filepath.Join(c.dst, filepath.FromSlash(name))
	switch {
	case mode.IsDir():
		fmt.Fprintf(h, "dir %q\n", name)
		if err := os.MkdirAll(to, 0o755); err != nil {
			return fmt.Errorf("copy the build's artifacts: %w", err)
		}
	case mode&fs.ModeSymlink != 0:
		target, err := root.Readlink(name)
		if err != nil {
			fmt.Fprintf(h, "unreadable %q\n", name)
			return nil
		}
		fmt.Fprintf(h, "link %q %q\n", name, target)
		if err := os.Symlink(target, to); err != nil {
			return fmt.Errorf("copy the build's artifacts: %w", err)
		}
	case mode.IsRegular():
		f, err := root.Open(name)
		if err != nil {
			fmt.Fprintf(h, "unreadable %q\n", name)
			return nil
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			fmt.Fprintf(h, "unreadable %q\n", name)
			return nil
		}
		if c.total += fi.Size(); c.limit > 0 && c.total > c.limit {
			return &tooLargeError{name: name, size: c.total, limit: c.limit}
		}
		perm := fs.FileMode(0o644)
		if fi.Mode()&0o111 != 0 {
			perm = 0o755
		}
		out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if err != nil {
			return fmt.Errorf("copy the build's artifacts: %w", err)
		}
		sum := sha256.New()
		err = copySparse(out, f, fi.Size(), sum)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("copy the build's artifact %s: %w", name, err)
		}
		fmt.Fprintf(h, "file %q %o %x\n", name, perm, sum.Sum(nil))
	default:
		// A fifo, socket or device: never copied, marked.
		fmt.Fprintf(h, "special %q\n", name)
	}
	return nil
}

// copyTree copies an exported tree (written by traj, nothing ran in it
// yet) into dst, links as links: the second build of a reproducibility
// check starts from the same files as the first.
func copyTree(src, dst string) error {
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		return fmt.Errorf("copy the tree for a second build: %w", err)
	}
	return nil
}

// copySparse copies size bytes of in to out and into sum: the data
// regions only (SEEK_DATA, SEEK_HOLE), so a hole stays a hole in out and
// costs the host nothing; sum sees the holes as the zeros they read as.
func copySparse(out, in *os.File, size int64, sum io.Writer) error {
	var zeros [64 << 10]byte
	hole := func(n int64) error {
		for n > 0 {
			k := min(n, int64(len(zeros)))
			if _, err := sum.Write(zeros[:k]); err != nil {
				return err
			}
			n -= k
		}
		return nil
	}
	var off int64
	for off < size {
		data, err := in.Seek(off, seekData)
		if err != nil {
			// ENXIO: no data past off, the rest is a hole.
			data = size
		}
		data = min(data, size)
		if err := hole(data - off); err != nil {
			return err
		}
		if data >= size {
			break
		}
		end, err := in.Seek(data, seekHole)
		if err != nil || end > size {
			end = size
		}
		if _, err := in.Seek(data, io.SeekStart); err != nil {
			return err
		}
		if _, err := out.Seek(data, io.SeekStart); err != nil {
			return err
		}
		if _, err := io.CopyN(io.MultiWriter(out, sum), in, end-data); err != nil {
			return err
		}
		off = end
	}
	// A trailing hole: the length, no blocks.
	return out.Truncate(size)
}

// Whence values of lseek for sparse files (Linux).
const (
	seekData = 3
	seekHole = 4
)
