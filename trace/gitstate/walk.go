package gitstate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"golang.org/x/sys/unix"
)

// walkFile is one tracked candidate the walk found.
type walkFile struct {
	path string // slash-separated, relative to the workspace
	stat fileStat
}

// walker lists the files a checkpoint records, pruning excluded folders so
// their content is never read.
type walker struct {
	ws      *workspace // folders are opened beneath its root
	exclude gitignore.Matcher
	sem     chan struct{} // bounds the folders read at once
	wg      sync.WaitGroup
	cancel  context.CancelCauseFunc
}

// walkDir is one folder's entries in index order; a subfolder's own
// entries come at its place (sub), filled by another goroutine.
type walkDir struct {
	items []walkItem
}

type walkItem struct {
	file walkFile
	sub  *walkDir // set for a folder
}

// walkers is how many folders are read at once. Reading a folder and
// lstat-ing its files is the floor of every checkpoint (git's too: it
// lstats its index in parallel, preload-index); the syscalls are CPU in
// the kernel, so the walk uses every core, and a few more for a cold
// cache that waits on the disk.
func walkers() int { return min(2*runtime.GOMAXPROCS(0), 16) }

// walk visits every recordable file under the workspace in index order:
// everything but .git entries and what the capture rules exclude. The
// workspace's .gitignore files are not read: they are the agent's, and
// the record must hold what the tests see. Folders are read in parallel;
// fn is called on this goroutine, in order, after the walk.
func (r *Repo) walk(ctx context.Context, ws *workspace, fn func(walkFile) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	w := &walker{ws: ws, exclude: r.exclude, sem: make(chan struct{}, walkers()), cancel: cancel}
	top := &walkDir{}
	w.wg.Add(1)
	go w.read(ctx, nil, top)
	w.wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	return visit(top, fn)
}

func visit(d *walkDir, fn func(walkFile) error) error {
	for _, it := range d.items {
		if it.sub != nil {
			if err := visit(it.sub, fn); err != nil {
				return err
			}
			continue
		}
		if err := fn(it.file); err != nil {
			return err
		}
	}
	return nil
}

// read fills d with the folder parts (relative to the root) and starts
// a goroutine for each subfolder; an error cancels the whole walk.
func (w *walker) read(ctx context.Context, parts []string, d *walkDir) {
	defer w.wg.Done()
	select {
	case w.sem <- struct{}{}:
	case <-ctx.Done():
		return
	}
	subs, err := w.list(parts, d)
	<-w.sem
	if err != nil {
		w.cancel(err)
		return
	}
	for _, s := range subs {
		w.wg.Add(1)
		go w.read(ctx, s.parts, s.dir)
	}
}

type subFolder struct {
	parts []string
	dir   *walkDir
}

// list reads one folder: its entries in git's index order (a folder
// compares as "name/"), each file lstat-ed relative to the open folder
// (no path lookup from the root for every file).
func (w *walker) list(parts []string, d *walkDir) ([]subFolder, error) {
	rel, prefix := ".", "" // the folder, and its files' path prefix
	if len(parts) > 0 {
		prefix = strings.Join(parts, "/") + "/"
		rel = prefix[:len(prefix)-1]
	}
	// Beneath the root, following no symlink: a folder the agent swaps
	// for a symlink after its parent was read is not followed out.
	f, err := w.ws.open(rel, unix.O_RDONLY|unix.O_DIRECTORY)
	if err == nil {
		defer f.Close()
	}
	var ents []os.DirEntry
	if err == nil {
		ents, err = f.ReadDir(-1)
	}
	if err != nil {
		if len(parts) > 0 && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) || errors.Is(err, errMoved)) {
			return nil, nil // removed or swapped while we walked, or unreadable: git skips it too
		}
		return nil, fmt.Errorf("read folder: %w", err)
	}
	type item struct {
		key   string
		name  string
		isDir bool
	}
	items := make([]item, 0, len(ents))
	for _, e := range ents {
		name := e.Name()
		if strings.EqualFold(name, ".git") {
			continue // the workspace's own or a nested repository's metadata
		}
		isDir := e.IsDir()
		if w.exclude.Match(append(parts[:len(parts):len(parts)], name), isDir) {
			continue
		}
		key := name
		if isDir {
			key += "/"
		}
		items = append(items, item{key, name, isDir})
	}
	slices.SortFunc(items, func(a, b item) int { return strings.Compare(a.key, b.key) })
	fd := int(f.Fd())
	var subs []subFolder
	d.items = make([]walkItem, 0, len(items))
	for _, it := range items {
		if it.isDir {
			sub := &walkDir{}
			d.items = append(d.items, walkItem{sub: sub})
			subs = append(subs, subFolder{parts: append(parts[:len(parts):len(parts)], it.name), dir: sub})
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstatat(fd, it.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue // removed while we walked
			}
			return nil, &os.PathError{Op: "lstat", Path: filepath.Join(w.ws.dir, filepath.FromSlash(prefix+it.name)), Err: err}
		}
		fst := statOf(&st)
		if _, ok := modeOf(fst); !ok {
			continue
		}
		d.items = append(d.items, walkItem{file: walkFile{path: prefix + it.name, stat: fst}})
	}
	return subs, nil
}
