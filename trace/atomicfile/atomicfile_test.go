package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "run.json")
	if err := WriteBytes(path, []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := WriteBytes(path, []byte("two")); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "two" {
		t.Fatalf("read %q, %v; want two", b, err)
	}
	// A failed fill leaves the old file and no temp file.
	boom := errors.New("boom")
	err := Write(path, func(w io.Writer) error {
		_, _ = w.Write([]byte("half"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want boom", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "two" {
		t.Fatalf("after a failed write: %q, want two", b)
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Fatalf("folder holds %d entries, want only the file", len(ents))
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
}

// TestWriteFile: the filler writes the temp file itself, a listing can
// tell it is a temp file, and the result carries the requested time.
func TestWriteFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent_trace.json")
	mtime := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var tmp string
	if err := WriteFile(path, mtime, func(f *os.File) error {
		tmp = f.Name()
		_, err := f.WriteString("trace")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if !IsTemp(filepath.Base(tmp)) || IsTemp("agent_trace.json") {
		t.Errorf("IsTemp(%q) = false or IsTemp(agent_trace.json) = true", filepath.Base(tmp))
	}
	fi, err := os.Stat(path)
	if err != nil || !fi.ModTime().Equal(mtime) || fi.Mode().Perm() != 0o644 {
		t.Errorf("stat = %v, %v; want mtime %v, mode 0644", fi, err, mtime)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temp file %s left behind: %v", tmp, err)
	}
}

// TestPending: a file written across calls appears only on Commit; Abort
// leaves the old content and no temp file.
func TestPending(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "parts", "t1.parquet")
	for _, commit := range []bool{true, false} {
		p, err := Create(path)
		if err != nil {
			t.Fatal(err)
		}
		want := "committed"
		if !commit {
			want = "aborted"
		}
		if _, err := p.File().WriteString(want); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(path); commit && !errors.Is(err, os.ErrNotExist) || !commit && string(b) != "committed" {
			t.Fatalf("before the end: %q, %v", b, err)
		}
		if commit {
			if err := p.Commit(); err != nil {
				t.Fatal(err)
			}
		}
		p.Abort() // after Commit: a no-op
		b, err := os.ReadFile(path)
		if err != nil || string(b) != "committed" {
			t.Fatalf("commit %v: read %q, %v; want committed", commit, b, err)
		}
		if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
			t.Fatalf("commit %v: folder holds %d entries, want only the file", commit, len(ents))
		}
	}
}
