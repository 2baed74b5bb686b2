package sandbox

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/trajlab/traj/sandbox/image"
)

// What a task that denies the C compiler (deny_c_compiler) takes out of
// every room of it, the agent's and each evaluation action's:
//
//   - every C (and C++) compiler the room would show: the gcc, cc, c89,
//     c99, cpp and g++ drivers, gcc's front ends and helpers (cc1,
//     cc1plus, lto1, lto-wrapper, collect2, …), clang, tcc: each real
//     file is shown empty (/dev/null bound over it), whatever link names
//     it. The assembler, the linker and what they link (as, ld, crt*.o,
//     libgcc, libc) stay: a compiler the agent writes needs them.
//   - in evaluation actions, a carried copy's ways to run: every place
//     an action can write is noexec (its /tmp, HOME, /dev/shm and its
//     writable mounts; /dev is read-only), so a front end written out at
//     compile time can neither be executed nor mapped executable by
//     ld.so; and memfd_create (an anonymous file to execute) is refused
//     by a seccomp filter (bwrap --seccomp; the container engine's
//     default profile without it).
//
// compilerGlobs are the compilers' names, relative to a root.
var compilerGlobs = []string{
	"usr/bin/gcc", "usr/bin/gcc-[0-9]*", "usr/bin/*-gcc", "usr/bin/*-gcc-[0-9]*",
	"usr/bin/cc", "usr/bin/c89", "usr/bin/c89-gcc", "usr/bin/c99", "usr/bin/c99-gcc",
	"usr/bin/cpp", "usr/bin/cpp-[0-9]*", "usr/bin/*-cpp", "usr/bin/*-cpp-[0-9]*",
	"usr/bin/g++", "usr/bin/g++-[0-9]*", "usr/bin/*-g++", "usr/bin/*-g++-[0-9]*", "usr/bin/c++",
	"usr/bin/clang*", "usr/bin/tcc", "usr/bin/*-tcc", "usr/bin/pcc",
	"usr/lib/llvm-*/bin/clang*", "usr/local/bin/tcc", "usr/local/bin/clang*", "usr/local/bin/gcc*",
}

// frontEndNames are gcc's programs beneath lib/gcc or libexec/gcc.
var frontEndNames = []string{"cc1", "cc1plus", "cc1obj", "cc1objplus", "lto1", "lto-wrapper", "collect2", "f951", "d21", "go1", "gnat1", "cc1gm2", "g++-mapper-server"}

// compilerPatterns are compilerGlobs and gcc's front ends, relative.
func compilerPatterns() []string {
	p := append([]string(nil), compilerGlobs...)
	for _, dir := range []string{"usr/lib/gcc/*/*/", "usr/libexec/gcc/*/*/", "usr/local/libexec/gcc/*/*/", "usr/local/lib/gcc/*/*/"} {
		for _, n := range frontEndNames {
			p = append(p, dir+n)
		}
	}
	return p
}

// HostCompilers lists the real files of the C compilers this machine
// shows a bwrap room (it binds the host's /usr), links resolved.
func HostCompilers() []string {
	var out []string
	for _, pat := range compilerPatterns() {
		m, _ := filepath.Glob("/" + pat)
		for _, f := range m {
			real, err := filepath.EvalSymlinks(f)
			if err != nil {
				continue
			}
			if fi, err := os.Stat(real); err == nil && fi.Mode().IsRegular() {
				out = append(out, real)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// imageCompilers lists the C compilers of a container image, links
// resolved, by listing them in a container of it (no network).
func imageCompilers(ctx context.Context, e image.Engine, img string) ([]string, error) {
	script := `for p in ` + strings.Join(prefixed(compilerPatterns()), " ") + `; do [ -f "$p" ] && readlink -f "$p"; done; true`
	out, err := e.Run(ctx, 2*time.Minute, nil, "run", "--rm", "--network", "none", "--entrypoint", "/bin/sh", img, "-c", script)
	if err != nil {
		return nil, fmt.Errorf("list the C compilers of image %s: %w", img, err)
	}
	var files []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "/") {
			files = append(files, l)
		}
	}
	slices.Sort(files)
	return slices.Compact(files), nil
}

func prefixed(p []string) []string {
	out := make([]string, len(p))
	for i, s := range p {
		out[i] = "/" + s
	}
	return out
}

// Syscalls the deny filter refuses (x86_64 numbers).
const (
	sysMemfdCreate = 319
	sysMemfdSecret = 447
)

// denyFilter is the classic BPF program bwrap --seccomp installs in a
// room that denies the C compiler: memfd_create and memfd_secret fail
// with EPERM (no anonymous file to execute), and so does every system
// call of another ABI (i386 through int 0x80, x32), whose numbers this
// filter does not check. Everything else is allowed.
func denyFilter() []byte {
	const (
		ldW   = 0x20 // BPF_LD|BPF_W|BPF_ABS
		jeq   = 0x15 // BPF_JMP|BPF_JEQ|BPF_K
		jge   = 0x35 // BPF_JMP|BPF_JGE|BPF_K
		ret   = 0x06 // BPF_RET|BPF_K
		allow = 0x7fff0000
		eperm = 0x00050000 | 1 // SECCOMP_RET_ERRNO | EPERM
		arch  = 0xc000003e     // AUDIT_ARCH_X86_64
		x32   = 0x40000000
	)
	type insn struct {
		code   uint16
		jt, jf uint8
		k      uint32
	}
	prog := []insn{
		{ldW, 0, 0, 4},              // 0: arch
		{jeq, 1, 0, arch},           // 1: x86_64 → 3
		{ret, 0, 0, eperm},          // 2
		{ldW, 0, 0, 0},              // 3: nr
		{jge, 3, 0, x32},            // 4: x32 → 8
		{jeq, 2, 0, sysMemfdCreate}, // 5 → 8
		{jeq, 1, 0, sysMemfdSecret}, // 6 → 8
		{ret, 0, 0, allow},          // 7
		{ret, 0, 0, eperm},          // 8
	}
	b := make([]byte, 0, 8*len(prog))
	for _, in := range prog {
		b = binary.LittleEndian.AppendUint16(b, in.code)
		b = append(b, in.jt, in.jf)
		b = binary.LittleEndian.AppendUint32(b, in.k)
	}
	return b
}

// defaultSeccompProfile is where Debian's containers-common keeps the
// engines' default seccomp profile.
const defaultSeccompProfile = "/usr/share/containers/seccomp.json"

// denyProfile writes the container engine's default seccomp profile with
// memfd_create and memfd_secret taken out of every rule that allows them
// (the profile refuses what no rule allows) to path.
func denyProfile(path string) error {
	b, err := os.ReadFile(defaultSeccompProfile)
	if err != nil {
		return fmt.Errorf("seccomp profile: %w (Debian's containers-common has it)", err)
	}
	var prof map[string]any
	if err := json.Unmarshal(b, &prof); err != nil {
		return fmt.Errorf("seccomp profile %s: %w", defaultSeccompProfile, err)
	}
	if prof["defaultAction"] != "SCMP_ACT_ERRNO" {
		return fmt.Errorf("seccomp profile %s: default action %v, want SCMP_ACT_ERRNO", defaultSeccompProfile, prof["defaultAction"])
	}
	rules, _ := prof["syscalls"].([]any)
	for _, r := range rules {
		rule, _ := r.(map[string]any)
		if rule == nil || rule["action"] != "SCMP_ACT_ALLOW" {
			continue
		}
		names, _ := rule["names"].([]any)
		kept := names[:0]
		for _, n := range names {
			if n != "memfd_create" && n != "memfd_secret" {
				kept = append(kept, n)
			}
		}
		rule["names"] = kept
	}
	out, err := json.Marshal(prof)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}
