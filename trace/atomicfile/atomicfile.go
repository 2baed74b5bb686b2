// Package atomicfile is traj's one way to replace a file other than the
// trace (which trace.Writer keeps complete part by part): write a temp
// file in the same folder, sync it, rename it over the target, sync the
// folder. A reader, or an upload, sees the old file or the whole new one;
// a failed write leaves nothing behind.
package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Write replaces path (mode 0644, its folder made if missing) with what
// fill writes. fill gets a buffered writer; it must not keep it.
func Write(path string, fill func(io.Writer) error) error {
	return WriteFile(path, time.Time{}, func(f *os.File) error {
		bw := bufio.NewWriterSize(f, 64<<10)
		if err := fill(bw); err != nil {
			return err
		}
		return bw.Flush()
	})
}

// WriteBytes replaces path with data.
func WriteBytes(path string, data []byte) error {
	return Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteFile is Write for a filler that needs the temp file itself (a
// retried download seeks back and truncates); mtime, when set, stamps the
// file before it replaces path, so a cache check on size and time never
// sees the new content with the old time.
func WriteFile(path string, mtime time.Time, fill func(*os.File) error) error {
	if err := write(path, mtime, fill); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func write(path string, mtime time.Time, fill func(*os.File) error) (err error) {
	p, err := create(path)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			p.Abort()
		}
	}()
	if err := fill(p.f); err != nil {
		return err
	}
	return p.commit(mtime)
}

// Pending is a replacement of a file still being written, for a writer
// that outlives one call (an export streams several files and puts them
// in place only when all are complete). Commit or Abort ends it.
type Pending struct {
	path    string
	f       *os.File
	renamed bool
}

// Create starts replacing path (its folder made if missing): write the
// new content into File, then Commit.
func Create(path string) (*Pending, error) {
	p, err := create(path)
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return p, nil
}

func create(path string) (*Pending, error) {
	f, err := createTemp(filepath.Dir(path), "."+filepath.Base(path)+tempMark+"*")
	if err != nil {
		return nil, err
	}
	return &Pending{path: path, f: f}, nil
}

// File is the temp file that becomes path on Commit.
func (p *Pending) File() *os.File { return p.f }

// Commit makes the file complete at its path (mode 0644, synced, renamed
// over the target, folder synced). After an error, Abort cleans up.
func (p *Pending) Commit() error {
	if err := p.commit(time.Time{}); err != nil {
		return fmt.Errorf("write %s: %w", p.path, err)
	}
	return nil
}

// Abort drops the temp file; path keeps what it had. Safe after Commit
// (it does nothing then) and more than once.
func (p *Pending) Abort() {
	p.f.Close()
	if !p.renamed {
		os.Remove(p.f.Name())
	}
}

func (p *Pending) commit(mtime time.Time) error {
	f := p.f
	if err := f.Chmod(0o644); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if !mtime.IsZero() {
		if err := os.Chtimes(f.Name(), mtime, mtime); err != nil {
			return err
		}
	}
	if err := os.Rename(f.Name(), p.path); err != nil {
		return err
	}
	p.renamed = true
	d, err := os.Open(filepath.Dir(p.path))
	if err != nil {
		return nil // renamed; only the folder's own durability is unknown
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync folder: %w", err)
	}
	return nil
}

const tempMark = ".tmp-"

// IsTemp reports whether a file name is one of Write's temp files, which a
// folder listing (the local store's) must not show.
func IsTemp(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, tempMark)
}

// createTemp makes the folder and a temp file in it, again if a concurrent
// remover (a store's Remove prunes empty folders) took the folder in between.
func createTemp(dir, pattern string) (*os.File, error) {
	for range 3 {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		f, err := os.CreateTemp(dir, pattern)
		if !errors.Is(err, fs.ErrNotExist) {
			return f, err
		}
	}
	return nil, fmt.Errorf("create temp file in %s: folder keeps disappearing", dir)
}
