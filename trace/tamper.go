package trace

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/trajlab/traj/trace/atomicfile"
)

// ErrTampered is returned by every mutation once the writer found its
// files changed by someone else: a file truncated, rewritten, touched,
// deleted or replaced since its last write. The writer then writes nothing
// more; the last good copy is kept at ShadowPath (see Writer.checkIntact)
// and OpenForAppend (traj trace finalize) continues from it.
var ErrTampered = errors.New("trace changed behind the writer")

// fileStamp is what a writer remembers of one of its files after writing
// it: a later write by anyone else changes the size, mtime or ctime (ctime
// cannot be set back by a user), a replacement changes the file the name
// points to.
type fileStamp struct {
	info  os.FileInfo // of the open file, for os.SameFile
	size  int64
	mtime time.Time
	ctime int64
}

func stampOf(fi os.FileInfo) fileStamp {
	return fileStamp{info: fi, size: fi.Size(), mtime: fi.ModTime(), ctime: ctimeOf(fi)}
}

func (s fileStamp) same(fi os.FileInfo) bool {
	return s.info != nil && fi.Size() == s.size && fi.ModTime().Equal(s.mtime) && ctimeOf(fi) == s.ctime
}

// stampFiles records the state of both files and of the two names after
// a write of ours.
func (w *Writer) stampFiles() error {
	for i, f := range w.files {
		w.stamps[i] = fileStamp{}
		if f == nil {
			continue
		}
		fi, err := f.Stat()
		if err != nil {
			return fmt.Errorf("stat trace: %w", err)
		}
		w.stamps[i] = stampOf(fi)
	}
	if !w.exchange {
		// The canonical name is a fresh copy each time: remember it.
		fi, err := os.Lstat(w.path)
		if err != nil {
			return fmt.Errorf("stat trace: %w", err)
		}
		w.pathStamp = stampOf(fi)
	}
	return nil
}

// checkIntact verifies that nobody changed the trace since the writer's
// last write: both files have the size and times it left them with and
// both names still point to them. On a change it keeps the last good copy
// at ShadowPath (the intact one of the two files, written there through
// the writer's open descriptor if its name is gone) and returns an error
// wrapping ErrTampered that says what changed.
func (w *Writer) checkIntact() error {
	var problems []string
	intact := -1
	for i, f := range w.files {
		if f == nil {
			continue
		}
		name := w.nameOf(i)
		// A shadow left stale by a failed write of ours has unknown bytes
		// (the next mutation rebuilds it): only its name is checked.
		stale := w.shadowStale && w.exchange && i != w.canon
		fi, err := f.Stat()
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s: %v", filepath.Base(name), err))
			continue
		case !stale && !w.stamps[i].same(fi):
			problems = append(problems, fmt.Sprintf("%s was written by someone else (%d bytes, want %d)", filepath.Base(name), fi.Size(), w.stamps[i].size))
			continue
		}
		if nfi, err := os.Lstat(name); err != nil || !os.SameFile(nfi, fi) {
			problems = append(problems, fmt.Sprintf("%s was deleted or replaced", filepath.Base(name)))
		}
		if stale {
			continue // never the intact copy
		}
		if intact < 0 || name == w.shadowPath {
			intact = i
		}
	}
	if !w.exchange {
		if fi, err := os.Lstat(w.path); err != nil || !os.SameFile(fi, w.pathStamp.info) || !w.pathStamp.same(fi) {
			problems = append(problems, fmt.Sprintf("%s was changed, deleted or replaced", filepath.Base(w.path)))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	err := fmt.Errorf("%w: %s", ErrTampered, joinProblems(problems))
	if intact < 0 {
		return fmt.Errorf("%w; no intact copy is left on disk", err)
	}
	if kerr := w.keepGoodCopy(intact); kerr != nil {
		return fmt.Errorf("%w; keep the last good copy: %v", err, kerr)
	}
	return fmt.Errorf("%w; the last good copy (%d parts) is kept at %s", err, w.lastPart, w.shadowPath)
}

func joinProblems(ps []string) string {
	s := ps[0]
	for _, p := range ps[1:] {
		s += "; " + p
	}
	return s
}

// nameOf is the path file i is (supposed to be) at.
func (w *Writer) nameOf(i int) string {
	if i == w.canon && w.exchange {
		return w.path
	}
	return w.shadowPath
}

// keepGoodCopy makes ShadowPath hold the content of file i, unless it is
// that file already.
func (w *Writer) keepGoodCopy(i int) error {
	f := w.files[i]
	if fi, err := os.Lstat(w.shadowPath); err == nil && w.stamps[i].info != nil && os.SameFile(fi, w.stamps[i].info) {
		return nil
	}
	return atomicfile.WriteFile(w.shadowPath, time.Time{}, func(tmp *os.File) error {
		_, err := io.Copy(tmp, io.NewSectionReader(f, 0, w.stamps[i].size))
		return err
	})
}
