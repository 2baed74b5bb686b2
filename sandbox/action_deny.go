package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// actionDeny is what Actions add to every action when the task denies
// the C compiler (ActionOptions.DenyCCompiler; see deny.go): the
// compilers shown empty, every writable place noexec, memfd_create
// refused.
type actionDeny struct {
	hide []string
	// bwrap: scratch is a noexec tmpfs on the host holding each action's
	// /tmp, HOME and /dev/shm; filter is the seccomp program's file.
	scratch, filter string
	// container: the seccomp profile's file.
	profile string
}

// scratchSize caps the noexec tmpfs of a denying Actions (all its
// actions' /tmp, HOME and /dev/shm at once).
const scratchSize = "1g"

func newActionDeny(ctx context.Context, a *Actions) (*actionDeny, error) {
	d := &actionDeny{}
	switch a.provider {
	case ProviderBwrap:
		d.hide = HostCompilers()
		if len(d.hide) == 0 {
			return nil, fmt.Errorf("deny the C compiler: no compiler found under /usr to hide (is gcc installed?)")
		}
		// bwrap cannot mount noexec itself; a bind keeps the flags of the
		// mount it comes from, and a user namespace cannot clear them.
		d.scratch = filepath.Join(a.dir, "noexec")
		if err := os.MkdirAll(d.scratch, 0o700); err != nil {
			return nil, fmt.Errorf("deny the C compiler: %w", err)
		}
		if err := unix.Mount("tmpfs", d.scratch, "tmpfs", unix.MS_NOEXEC|unix.MS_NOSUID|unix.MS_NODEV, "mode=0700,size="+scratchSize); err != nil {
			return nil, fmt.Errorf("deny the C compiler: a noexec scratch space needs root (mount tmpfs): %w", err)
		}
		d.filter = filepath.Join(a.dir, "deny.bpf")
		if err := os.WriteFile(d.filter, denyFilter(), 0o644); err != nil {
			d.close()
			return nil, fmt.Errorf("deny the C compiler: %w", err)
		}
	case ProviderContainer:
		var err error
		if d.hide, err = imageCompilers(ctx, a.engine, a.image); err != nil {
			return nil, fmt.Errorf("deny the C compiler: %w", err)
		}
		if len(d.hide) == 0 {
			return nil, fmt.Errorf("deny the C compiler: image %s shows no compiler to hide", a.image)
		}
		d.profile = filepath.Join(a.dir, "seccomp-deny.json")
		if err := denyProfile(d.profile); err != nil {
			return nil, fmt.Errorf("deny the C compiler: %w", err)
		}
	}
	return d, nil
}

// bwrap returns the bwrap options of one action (the scratch binds, the
// hidden files, /dev read-only, the seccomp filter on fd 9) and its
// mounts with each writable one replaced by a noexec view of it; done
// undoes what it made.
func (d *actionDeny) bwrap(mounts []Mount) (args []string, out []Mount, done func(), err error) {
	own, err := os.MkdirTemp(d.scratch, "a-")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("deny the C compiler: %w", err)
	}
	var views []string
	done = func() {
		for _, v := range views {
			if err := unix.Unmount(v, unix.MNT_DETACH); err != nil {
				return // never remove through a view still bound to the host's folder
			}
		}
		_ = os.RemoveAll(own)
	}
	for _, sub := range []string{"tmp", "home", "shm"} {
		if err := os.Mkdir(filepath.Join(own, sub), 0o777); err != nil {
			done()
			return nil, nil, nil, fmt.Errorf("deny the C compiler: %w", err)
		}
	}
	out = make([]Mount, len(mounts))
	for i, m := range mounts {
		out[i] = m
		if !m.Writable {
			continue
		}
		// A noexec view of the writable folder: the action writes
		// through it, and nothing it writes there runs.
		v := filepath.Join(own, fmt.Sprintf("view%d", i))
		mounted, err := noexecView(m.Host, v)
		if mounted {
			views = append(views, v)
		}
		if err != nil {
			done()
			return nil, nil, nil, fmt.Errorf("deny the C compiler: noexec view of %s: %w", m.Host, err)
		}
		out[i].Host = v
	}
	args = []string{"--bind", filepath.Join(own, "tmp"), "/tmp", "--bind", filepath.Join(own, "home"), InsideHome,
		"--bind", filepath.Join(own, "shm"), "/dev/shm", "--remount-ro", "/dev", "--seccomp", "9"}
	return append(args, hideArgs(d.hide)...), out, done, nil
}

// container rewrites a container action's engine arguments: tmpfs and
// writable volumes noexec, the hidden files, the seccomp profile.
func (d *actionDeny) container(args []string) []string {
	out := make([]string, 0, len(args)+2*len(d.hide)+4)
	for i := 0; i < len(args); i++ {
		a := args[i]
		out = append(out, a)
		if i+1 >= len(args) {
			break
		}
		switch a {
		case "--tmpfs":
			i++
			out = append(out, strings.Replace(args[i], ",exec,", ",noexec,nosuid,nodev,", 1))
		case "-v":
			i++
			v := args[i]
			if strings.HasSuffix(v, ":rw") {
				v += ",noexec,nosuid,nodev"
			}
			out = append(out, v)
		}
	}
	// --read-only still gives /run and /var/tmp writable, exec tmpfs.
	out = append(out, "--tmpfs", "/run:rw,noexec,nosuid,nodev,mode=0755", "--tmpfs", "/var/tmp:rw,noexec,nosuid,nodev,mode=1777")
	out = append(out, "--security-opt", "seccomp="+d.profile)
	for _, h := range d.hide {
		out = append(out, "-v", os.DevNull+":"+h+":ro")
	}
	return out
}

// noexecView binds src at v (made here) and remounts the bind noexec;
// mounted says whether v must be unmounted.
func noexecView(src, v string) (mounted bool, err error) {
	if err := os.Mkdir(v, 0o700); err != nil {
		return false, err
	}
	if err := unix.Mount(src, v, "", unix.MS_BIND, ""); err != nil {
		return false, err
	}
	return true, unix.Mount("", v, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_NOEXEC|unix.MS_NOSUID|unix.MS_NODEV, "")
}

func (d *actionDeny) close() {
	if d != nil && d.scratch != "" {
		_ = unix.Unmount(d.scratch, unix.MNT_DETACH)
	}
}

// hideArgs shows each file empty (bwrap).
func hideArgs(hide []string) []string {
	var a []string
	for _, h := range hide {
		a = append(a, "--ro-bind", os.DevNull, h)
	}
	return a
}
