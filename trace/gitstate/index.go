package gitstate

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"golang.org/x/sys/unix"
)

// loadedIndex is the index as read at the start of a checkpoint.
type loadedIndex struct {
	entries map[string]*index.Entry
	// mtime of the index file: entries modified at or after it are racily
	// clean and must be hashed (git's racy-git rule).
	mtime time.Time
}

// readIndex returns the index as the last checkpoint left it: the copy
// kept in memory when the index file is still the one it wrote, else the
// file decoded. A missing or unreadable index yields an empty one: every
// file is then hashed, which is slower but correct.
func (r *Repo) readIndex() loadedIndex {
	li := loadedIndex{entries: map[string]*index.Entry{}}
	path := filepath.Join(r.git, "index")
	fi, err := os.Stat(path)
	if err != nil {
		return li
	}
	if c := r.index; c != nil && c.file != nil && os.SameFile(c.file, fi) && fi.ModTime().Equal(c.file.ModTime()) && fi.Size() == c.file.Size() {
		return c.loadedIndex
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return li
	}
	var idx index.Index
	if err := index.NewDecoder(bytes.NewReader(data)).Decode(&idx); err != nil {
		return li
	}
	li.mtime = fi.ModTime()
	for _, e := range idx.Entries {
		if e.Stage != 0 || e.SkipWorktree || e.IntentToAdd {
			continue
		}
		li.entries[e.Name] = e
	}
	return li
}

// cachedIndex is the index a checkpoint wrote, kept for the next one so
// it does not decode the file again.
type cachedIndex struct {
	loadedIndex
	file os.FileInfo // the index file as written
}

// writeIndex replaces the index (version 2, no extensions, so no stale
// cache-tree) atomically and keeps its entries in memory for the next
// checkpoint. A lost or unreadable index only costs the next checkpoint a
// full rehash.
func (r *Repo) writeIndex(entries []*index.Entry) error {
	path := filepath.Join(r.git, "index")
	r.index = nil
	if err := writeFileAtomic(path, func(w io.Writer) error { return encodeIndex(w, entries) }); err != nil {
		return err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil // only the cache is lost
	}
	m := make(map[string]*index.Entry, len(entries))
	for _, e := range entries {
		m[e.Name] = e
	}
	r.index = &cachedIndex{loadedIndex: loadedIndex{entries: m, mtime: fi.ModTime()}, file: fi}
	return nil
}

// encodeIndex writes entries (sorted by name, stage 0) as a version 2
// index, as git does: go-git's encoder goes through encoding/binary's
// reflection for every field, ~10x slower for a 30,000-file workspace.
func encodeIndex(w io.Writer, entries []*index.Entry) error {
	h := sha1.New()
	bw := bufio.NewWriterSize(io.MultiWriter(w, h), 64<<10)
	var hdr [12]byte
	copy(hdr[:], "DIRC")
	binary.BigEndian.PutUint32(hdr[4:], 2)
	binary.BigEndian.PutUint32(hdr[8:], uint32(len(entries)))
	bw.Write(hdr[:])
	var b [62]byte
	var zeros [8]byte
	for _, e := range entries {
		put := binary.BigEndian.PutUint32
		put(b[0:], uint32(e.CreatedAt.Unix()))
		put(b[4:], uint32(e.CreatedAt.Nanosecond()))
		put(b[8:], uint32(e.ModifiedAt.Unix()))
		put(b[12:], uint32(e.ModifiedAt.Nanosecond()))
		put(b[16:], e.Dev)
		put(b[20:], e.Inode)
		put(b[24:], uint32(e.Mode))
		put(b[28:], e.UID)
		put(b[32:], e.GID)
		put(b[36:], e.Size)
		copy(b[40:60], e.Hash[:])
		n := len(e.Name)
		if n > 0xfff {
			n = 0xfff
		}
		binary.BigEndian.PutUint16(b[60:], uint16(n))
		bw.Write(b[:])
		bw.WriteString(e.Name)
		// NUL-padded to a multiple of 8 bytes, at least one NUL.
		pad := 8 - (62+len(e.Name))%8
		bw.Write(zeros[:pad])
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err := w.Write(h.Sum(nil))
	return err
}

// fileStat is what an index entry keeps of a file's lstat.
type fileStat struct {
	mode         uint32 // st_mode: type and permission bits
	size         int64
	mtime, ctime time.Time
	dev, ino     uint64
	uid, gid     uint32
}

func statOf(st *unix.Stat_t) fileStat {
	return fileStat{mode: st.Mode, size: st.Size, dev: st.Dev, ino: st.Ino, uid: st.Uid, gid: st.Gid,
		mtime: time.Unix(st.Mtim.Unix()), ctime: time.Unix(st.Ctim.Unix())}
}

// lstat is os.Lstat reduced to what the index keeps.
func lstat(path string) (fileStat, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return fileStat{}, &os.PathError{Op: "lstat", Path: path, Err: err}
	}
	return statOf(&st), nil
}

// modeOf is the git file mode of a regular file (executable when the
// owner may run it) or symlink; other kinds are not recorded.
func modeOf(st fileStat) (filemode.FileMode, bool) {
	switch st.mode & unix.S_IFMT {
	case unix.S_IFREG:
		if st.mode&0o100 != 0 {
			return filemode.Executable, true
		}
		return filemode.Regular, true
	case unix.S_IFLNK:
		return filemode.Symlink, true
	}
	return 0, false
}

// statEntry fills an index entry's stat fields the way git does.
func statEntry(e *index.Entry, st fileStat, mode filemode.FileMode) {
	e.Mode = mode
	e.Size = uint32(st.size)
	e.CreatedAt = st.ctime
	e.ModifiedAt = st.mtime
	e.Dev = uint32(st.dev)
	e.Inode = uint32(st.ino)
	e.UID = st.uid
	e.GID = st.gid
}

// statClean reports whether st still matches the entry's stat data and the
// entry is not racily clean.
func (li loadedIndex) statClean(e *index.Entry, st fileStat, mode filemode.FileMode) bool {
	var s index.Entry
	statEntry(&s, st, mode)
	if e.Mode != s.Mode || e.Size != s.Size || e.Inode != s.Inode ||
		!e.ModifiedAt.Equal(s.ModifiedAt) || !e.CreatedAt.Equal(s.CreatedAt) {
		return false
	}
	return li.mtime.After(e.ModifiedAt)
}
