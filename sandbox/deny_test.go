package sandbox

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

// TestDenyCCompilerAgentRoom: with DenyCCompiler the agent's room shows
// no C compiler to run or to copy (gcc, cc, cpp and cc1 fail or read
// empty, wherever a scan of the room looks), while the assembler and the
// linker still work; without it, gcc compiles (the control).
func TestDenyCCompilerAgentRoom(t *testing.T) {
	const probe = `cd /tmp
printf 'int main(void){return 0;}\n' > t.c
gcc -w t.c -o t 2>/dev/null && echo "gcc: compiles"
cc -w t.c -o t 2>/dev/null && echo "cc: compiles"
cpp t.c >/dev/null 2>&1 && echo "cpp: runs"
for f in $(find / \( -path /proc -o -path /sys \) -prune -o -type f -perm /111 \( -name cc1 -o -name cc1plus -o -name lto1 -o -name 'gcc-[0-9]*' -o -name 'x86_64-linux-gnu-gcc-[0-9]*' \) -print 2>/dev/null) /usr/lib/gcc/*/*/cc1; do
  [ -s "$f" ] && echo "readable compiler: $f"
done
printf '.globl _start\n_start: mov $60, %%eax\n xor %%edi, %%edi\n syscall\n' > s.s
as s.s -o s.o && ld s.o -o s && ./s && echo "as and ld: ok"
`
	for _, p := range isolated() {
		t.Run(p, func(t *testing.T) {
			out := runShell(t, newProvider(t, p, Options{Network: NetworkNone, DenyCCompiler: true}), "deny", probe)
			for _, bad := range []string{"gcc: compiles", "cc: compiles", "cpp: runs", "readable compiler"} {
				if strings.Contains(out, bad) {
					t.Errorf("deny_c_compiler room: %q\n%s", bad, out)
				}
			}
			if !strings.Contains(out, "as and ld: ok") {
				t.Errorf("the assembler and linker must stay:\n%s", out)
			}
			control := runShell(t, newProvider(t, p, Options{Network: NetworkNone}), "control", probe)
			if !strings.Contains(control, "gcc: compiles") || !strings.Contains(control, "readable compiler") {
				t.Errorf("control room (no deny): gcc must compile and cc1 be readable:\n%s", control)
			}
		})
	}
}

// TestDenyFilter: the seccomp program is whole instructions, ends every
// path in a return, and refuses memfd_create.
func TestDenyFilter(t *testing.T) {
	b := denyFilter()
	if len(b)%8 != 0 || len(b) == 0 {
		t.Fatalf("%d bytes: not whole sock_filter instructions", len(b))
	}
	k := make([]byte, 4)
	binary.LittleEndian.PutUint32(k, sysMemfdCreate)
	if !bytes.Contains(b, k) {
		t.Error("the filter does not name memfd_create")
	}
	if last := binary.LittleEndian.Uint16(b[len(b)-8:]); last != 0x06 {
		t.Errorf("the last instruction is %#x, want a return", last)
	}
}
