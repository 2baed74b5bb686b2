package disk

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// requireDisk fails where images cannot be mounted, except outside CI
// for a user who is not root (the disk limit is then off; see Available).
func requireDisk(t *testing.T) {
	t.Helper()
	if err := Available(); err != nil {
		if os.Geteuid() != 0 && os.Getenv("CI") == "" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
}

// allocated is the disk space file p holds (its blocks, not its size).
func allocated(t *testing.T, p string) int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

// TestCapHolds writes past the cap: the write fails with ENOSPC inside the
// folder, the image holds no more than its size, and what fit is still
// there after the folder is unmounted and mounted again.
func TestCapHolds(t *testing.T) {
	requireDisk(t)
	root := t.TempDir()
	img, dir := filepath.Join(root, "ws.img"), filepath.Join(root, "ws")
	const size = 32 << 20
	if err := Create(t.Context(), img, size); err != nil {
		t.Fatal(err)
	}
	if err := Create(t.Context(), img, size); err == nil {
		t.Fatal("Create over an existing image: no error")
	}
	if a := allocated(t, img); a > 4<<20 {
		t.Errorf("a new %d MiB image allocates %d bytes", size>>20, a)
	}
	if err := Attach(t.Context(), img, dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = Unmount(dir) })
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("a new mounted folder holds %v", ents)
	}
	f, err := os.Create(filepath.Join(dir, "big"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = byte(i)
	}
	written := 0
	for ; written < 2*size; written += len(chunk) {
		if _, err = f.Write(chunk); err != nil {
			break
		}
	}
	f.Close()
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("writing %d MiB into a %d MiB folder: %v, want ENOSPC", written>>20, size>>20, err)
	}
	if a := allocated(t, img); a > size {
		t.Errorf("the image holds %d bytes, more than its size %d", a, size)
	}
	if err := os.WriteFile(filepath.Join(dir, "small"), []byte("kept\n"), 0o644); err != nil && !errors.Is(err, syscall.ENOSPC) {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "big")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "small"), []byte("kept\n"), 0o644); err != nil {
		t.Fatalf("a small write after the big file is gone: %v", err)
	}
	if err := Unmount(dir); err != nil {
		t.Fatal(err)
	}
	if m, _ := Mounted(dir); m {
		t.Fatal("still mounted after Unmount")
	}
	if _, err := os.Stat(filepath.Join(dir, "small")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the unmounted folder shows the image's files (%v)", err)
	}
	if err := Attach(t.Context(), img, dir); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "small")); err != nil || string(b) != "kept\n" {
		t.Fatalf("after mounting again: %q, %v", b, err)
	}
}

// TestLeftOverAndBusy: a mount left behind (a killed recorder) is replaced
// by the next Attach; a mount held busy is detached; a folder with files of
// its own is never hidden.
func TestLeftOverAndBusy(t *testing.T) {
	requireDisk(t)
	root := t.TempDir()
	img, dir := filepath.Join(root, "ws.img"), filepath.Join(root, "ws")
	if err := Create(t.Context(), img, MinSize); err != nil {
		t.Fatal(err)
	}
	if err := Attach(t.Context(), img, dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = Unmount(dir) })
	// Left behind: Attach again unmounts it first (else the mounts stack).
	if err := Attach(t.Context(), img, dir); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "open"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := Unmount(dir); err != nil {
		t.Fatalf("unmount a busy folder: %v", err)
	}
	if m, _ := Mounted(dir); m {
		t.Fatal("a busy mount is still there")
	}
	if err := os.WriteFile(filepath.Join(dir, "own"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Attach(t.Context(), img, dir); err == nil {
		t.Fatal("Attach over a folder with files of its own: no error")
	}
	if m, _ := Mounted(dir); m {
		t.Fatal("mounted over a folder with files")
	}
	if err := Create(t.Context(), filepath.Join(root, "tiny.img"), MinSize-1); err == nil {
		t.Fatal("Create below MinSize: no error")
	}
}

// TestBindAndUnmountUnder: a folder bound into an image holds its files
// in the image; UnmountUnder takes down every mount beneath a folder, the
// binds and the image, whatever their order.
func TestBindAndUnmountUnder(t *testing.T) {
	requireDisk(t)
	root := t.TempDir()
	sb := filepath.Join(root, "sand box") // a space: mountinfo escapes it
	img, mnt := filepath.Join(root, "sb.img"), filepath.Join(sb, "disk")
	if err := Create(t.Context(), img, MinSize); err != nil {
		t.Fatal(err)
	}
	if err := Attach(t.Context(), img, mnt); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = UnmountUnder(sb) })
	for _, rel := range []string{"workspace", "state/data"} {
		src, dst := filepath.Join(mnt, rel), filepath.Join(sb, "bound", rel)
		if err := os.MkdirAll(src, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := Bind(src, dst); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, "f"), []byte(rel), 0o600); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(filepath.Join(src, "f")); err != nil || string(b) != rel {
			t.Fatalf("%s written through the bind: %q, %v", rel, b, err)
		}
	}
	own := filepath.Join(sb, "own")
	if err := os.MkdirAll(own, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(own, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Bind(filepath.Join(mnt, "workspace"), own); err == nil {
		t.Fatal("Bind over a folder with files of its own: no error")
	}
	if err := UnmountUnder(sb); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{mnt, filepath.Join(sb, "bound", "workspace"), filepath.Join(sb, "bound", "state", "data")} {
		if m, err := Mounted(p); err != nil || m {
			t.Errorf("%s still mounted after UnmountUnder (%v)", p, err)
		}
	}
	b, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(b), strings.ReplaceAll(sb, " ", `\040`)) {
		t.Errorf("a mount under %s is left:\n%s", sb, b)
	}
	if err := UnmountUnder(sb); err != nil {
		t.Errorf("UnmountUnder with nothing mounted: %v", err)
	}
}
