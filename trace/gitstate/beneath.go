package gitstate

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// The agent works in the workspace while checkpoints read it (a tool still
// running, a daemon it left). Between the walk's lstat and the read, it can
// swap a file or a folder for a symlink to anything on the host, which the
// recorder would then read into the history. So the recorder opens what it
// reads under the workspace with openat2: beneath the workspace root, no
// symlink followed on the way or at the end. A path that became a symlink
// fails with errMoved, and the checkpoint takes the file as gone; the next
// one records the symlink itself.

// errMoved says a path under the workspace changed kind (to a symlink, or a
// folder to a file) after the walk saw it.
var errMoved = errors.New("changed while the checkpoint read it")

const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// openChain opens rel from dirfd one component at a time, each with
// O_NOFOLLOW, the folders on the way with O_DIRECTORY: no symlink is
// followed and no component leaves the folder ("..").
func openChain(dirfd int, rel string, flags int) (int, error) {
	parts := strings.Split(rel, "/")
	fd, owned := dirfd, false
	defer func() {
		if owned {
			unix.Close(fd)
		}
	}()
	for i, p := range parts {
		if p == ".." {
			return -1, unix.EXDEV
		}
		if i == len(parts)-1 {
			return unix.Openat(fd, p, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		}
		if p == "." || p == "" {
			continue
		}
		next, err := unix.Openat(fd, p, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, err
		}
		if owned {
			unix.Close(fd)
		}
		fd, owned = next, true
	}
	return -1, unix.EINVAL // not reached: the last component returns
}

// workspace is the workspace root, open: everything a checkpoint reads
// under it is opened beneath it.
type workspace struct {
	dir  string // its path, for messages
	root *os.File
}

func openWorkspace(dir string) (*workspace, error) {
	root, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	return &workspace{dir: dir, root: root}, nil
}

func (ws *workspace) Close() error { return ws.root.Close() }

// open opens the workspace path rel (slash-separated) with flags,
// following no symlink. Where openat2 is missing or refused (kernels
// before 5.6, older container seccomp profiles) it walks rel a component
// at a time with O_NOFOLLOW, which refuses the same paths.
func (ws *workspace) open(rel string, flags int) (*os.File, error) {
	dirfd := int(ws.root.Fd())
	fd, err := unix.Openat2(dirfd, rel, &unix.OpenHow{Flags: uint64(flags | unix.O_NOFOLLOW | unix.O_CLOEXEC), Resolve: beneath})
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
		fd, err = openChain(dirfd, rel, flags)
	}
	name := filepath.Join(ws.dir, filepath.FromSlash(rel))
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ENOTDIR) {
			err = errMoved
		}
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}

// readLink reads the target of the workspace symlink rel.
func (ws *workspace) readLink(rel string) (string, error) {
	parent, err := ws.open(path.Dir(rel), unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return "", err
	}
	defer parent.Close()
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(int(parent.Fd()), path.Base(rel), buf)
		if err != nil {
			if errors.Is(err, unix.EINVAL) {
				err = errMoved // no longer a symlink
			}
			return "", &os.PathError{Op: "readlink", Path: filepath.Join(ws.dir, filepath.FromSlash(rel)), Err: err}
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}
