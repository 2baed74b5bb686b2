package gitstate

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// loadedIndex is the index as read at the start of a checkpoint.
type loadedIndex struct {
	entries map[string]*index.Entry
	// mtime of the index file: entries modified at or after it are racily
	// clean and must be hashed (git's racy-git rule).
	mtime time.Time
}

// readIndex loads .git/index. A missing or unreadable index yields an
// empty one: every file is then hashed, which is slower but correct.
func (r *Repo) readIndex() loadedIndex {
	li := loadedIndex{entries: map[string]*index.Entry{}}
	path := filepath.Join(r.git, "index")
	data, err := os.ReadFile(path)
	if err != nil {
		return li
	}
	fi, err := os.Stat(path)
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

// writeIndex replaces .git/index (version 2, no extensions, so no stale
// cache-tree) atomically. A lost or unreadable index only costs the next
// checkpoint a full rehash.
func (r *Repo) writeIndex(entries []*index.Entry) error {
	idx := &index.Index{Version: 2, Entries: entries}
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	if err := index.NewEncoder(w).Encode(idx); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return atomicWrite(filepath.Join(r.git, "index"), buf.Bytes())
}

// fileMode is git's mode for a file, or false for what git does not track.
func fileMode(m os.FileMode) (filemode.FileMode, bool) {
	switch {
	case m.IsRegular():
		if m&0o100 != 0 {
			return filemode.Executable, true
		}
		return filemode.Regular, true
	case m&os.ModeSymlink != 0:
		return filemode.Symlink, true
	}
	return 0, false
}

// statEntry fills an index entry's stat fields the way git does.
func statEntry(e *index.Entry, fi os.FileInfo, mode filemode.FileMode) {
	e.Mode = mode
	e.Size = uint32(fi.Size())
	e.ModifiedAt = fi.ModTime()
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		e.CreatedAt = time.Unix(int64(st.Ctim.Sec), int64(st.Ctim.Nsec))
		e.ModifiedAt = time.Unix(int64(st.Mtim.Sec), int64(st.Mtim.Nsec))
		e.Dev = uint32(st.Dev)
		e.Inode = uint32(st.Ino)
		e.UID = st.Uid
		e.GID = st.Gid
	}
}

// statClean reports whether fi still matches the entry's stat data and the
// entry is not racily clean.
func (li loadedIndex) statClean(e *index.Entry, fi os.FileInfo, mode filemode.FileMode) bool {
	var s index.Entry
	statEntry(&s, fi, mode)
	if e.Mode != s.Mode || e.Size != s.Size || e.Inode != s.Inode ||
		!e.ModifiedAt.Equal(s.ModifiedAt) || !e.CreatedAt.Equal(s.CreatedAt) {
		return false
	}
	return li.mtime.After(e.ModifiedAt)
}
