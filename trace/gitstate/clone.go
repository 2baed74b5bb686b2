package gitstate

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// CloneOptions configure CloneFromBundles.
type CloneOptions struct {
	// Commit to check out (full hex hash); the bundles' HEAD when empty.
	// A commit other than a branch tip is checked out on a detached HEAD.
	Commit string
	// Options of the returned Repo.
	Options Options
}

// CloneFromBundles makes dest (missing or empty) a git repository holding
// the objects and refs of the bundles, read in order (a full bundle, or a
// chain of incremental bundles each needing the ones before), and checks
// out one commit so that `git status` in dest is clean. On error dest is
// left as it was found.
func CloneFromBundles(ctx context.Context, dest string, opts CloneOptions, bundles ...io.Reader) (*Repo, error) {
	r, err := cloneFromBundles(ctx, dest, opts, bundles)
	if err != nil {
		return nil, fmt.Errorf("clone %s from bundles: %w", dest, err)
	}
	return r, nil
}

func cloneFromBundles(ctx context.Context, dest string, opts CloneOptions, bundles []io.Reader) (_ *Repo, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(bundles) == 0 {
		return nil, fmt.Errorf("%w: no bundles given", ErrEmptyBundle)
	}
	created, err := prepareDest(dest)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			cleanDest(dest, created)
		}
	}()
	if _, err := git.PlainInitWithOptions(dest, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: DefaultBranch},
	}); err != nil {
		return nil, err
	}
	r := open(dest, opts.Options)
	refs := map[plumbing.ReferenceName]plumbing.Hash{}
	for i, b := range bundles {
		hdr, err := ReadBundleInto(ctx, r.st, b)
		if err != nil {
			return nil, fmt.Errorf("bundle %d of %d: %w", i+1, len(bundles), err)
		}
		for _, ref := range hdr.Refs {
			refs[ref.Name] = ref.Hash
		}
	}
	names := make([]string, 0, len(refs))
	for name := range refs {
		if name != plumbing.HEAD {
			names = append(names, name.String())
		}
	}
	sort.Strings(names)
	for _, name := range names {
		if err := r.setRef(plumbing.ReferenceName(name), refs[plumbing.ReferenceName(name)]); err != nil {
			return nil, err
		}
	}
	// HEAD: the branch the bundles' HEAD names (main first), else detached.
	head, hasHead := refs[plumbing.HEAD]
	if !hasHead {
		head, hasHead = refs[DefaultBranch]
	}
	branch := plumbing.ReferenceName("")
	if hasHead {
		if refs[DefaultBranch] == head {
			branch = DefaultBranch
		} else {
			for _, name := range names {
				if strings.HasPrefix(name, "refs/heads/") && refs[plumbing.ReferenceName(name)] == head {
					branch = plumbing.ReferenceName(name)
					break
				}
			}
		}
	}
	want := head
	if opts.Commit != "" {
		h, ok := parseHash(opts.Commit)
		if !ok {
			return nil, fmt.Errorf("commit %q: %w", opts.Commit, ErrUnknownCommit)
		}
		if h != head {
			branch = ""
		}
		want = h
	}
	if want.IsZero() {
		return nil, fmt.Errorf("%w: bundles name no HEAD and no %s", ErrUnknownCommit, DefaultBranch)
	}
	if err := r.checkoutInto(ctx, want); err != nil {
		return nil, err
	}
	if branch != "" {
		err = r.st.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, branch))
	} else {
		err = r.setRef(plumbing.HEAD, want)
	}
	if err != nil {
		return nil, fmt.Errorf("set HEAD: %w", err)
	}
	return r, nil
}

// prepareDest makes sure dest exists and is empty; created says whether
// it had to be made.
func prepareDest(dest string) (created bool, err error) {
	ents, err := os.ReadDir(dest)
	switch {
	case os.IsNotExist(err):
		return true, os.MkdirAll(dest, 0o755)
	case err != nil:
		return false, err
	case len(ents) > 0:
		return false, fmt.Errorf("%s: %w", dest, ErrDestNotEmpty)
	}
	return false, nil
}

// cleanDest undoes a failed clone: it removes dest, or empties it when it
// existed (it was empty before).
func cleanDest(dest string, created bool) {
	if created {
		os.RemoveAll(dest)
		return
	}
	ents, _ := os.ReadDir(dest)
	for _, e := range ents {
		os.RemoveAll(filepath.Join(dest, e.Name()))
	}
}

// checkoutInto writes the tree of commit into the (empty) workspace and an
// index that matches it. Tree entry names come from bundles, so each is
// checked: no "..", no "/", no ".git", nothing written through a symlink.
func (r *Repo) checkoutInto(ctx context.Context, commit plumbing.Hash) error {
	c, err := object.GetCommit(r.st, commit)
	if err != nil {
		return fmt.Errorf("commit %s: %w: %w", commit, ErrUnknownCommit, err)
	}
	var entries []*index.Entry
	if err := r.writeTree(ctx, r.dir, c.TreeHash, "", &entries); err != nil {
		return fmt.Errorf("check out %s: %w", commit, err)
	}
	if err := r.writeIndex(entries); err != nil {
		return fmt.Errorf("write index: %w", err)
	}
	return nil
}

// writeTree writes tree h into root/prefix, appending an index entry with
// fresh stat data for every file it writes.
func (r *Repo) writeTree(ctx context.Context, root string, h plumbing.Hash, prefix string, entries *[]*index.Entry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t, err := object.GetTree(r.st, h)
	if err != nil {
		return fmt.Errorf("read tree %s: %w", h, err)
	}
	for _, e := range t.Entries {
		if !safeName(e.Name) {
			return fmt.Errorf("%w: %q in %q", ErrUnsafePath, e.Name, prefix)
		}
		rel := e.Name
		if prefix != "" {
			rel = prefix + "/" + e.Name
		}
		abs := filepath.Join(root, filepath.FromSlash(rel))
		switch e.Mode {
		case filemode.Dir:
			if err := os.Mkdir(abs, 0o755); err != nil {
				return err
			}
			if err := r.writeTree(ctx, root, e.Hash, rel, entries); err != nil {
				return err
			}
			continue
		case filemode.Submodule:
			// Like git without the submodule: an empty folder, no index entry.
			if err := os.Mkdir(abs, 0o755); err != nil {
				return err
			}
			continue
		case filemode.Regular, filemode.Executable, filemode.Deprecated, filemode.Symlink:
		default:
			return fmt.Errorf("%w: %q has mode %v", ErrUnsafePath, rel, e.Mode)
		}
		data, err := r.blob(e.Hash)
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		mode := e.Mode
		if mode == filemode.Deprecated {
			mode = filemode.Regular
		}
		switch mode {
		case filemode.Symlink:
			err = os.Symlink(string(data), abs)
		case filemode.Executable:
			err = createFile(abs, data, 0o755)
		default:
			err = createFile(abs, data, 0o644)
		}
		if err != nil {
			return err
		}
		fi, err := os.Lstat(abs)
		if err != nil {
			return err
		}
		ie := &index.Entry{Name: rel, Hash: e.Hash}
		statEntry(ie, fi, mode)
		*entries = append(*entries, ie)
	}
	return nil
}

// createFile writes a new file, never following or replacing an existing one.
func createFile(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(path, perm) // exact mode, whatever the umask
	}
	return err
}

func (r *Repo) blob(h plumbing.Hash) ([]byte, error) {
	b, err := object.GetBlob(r.st, h)
	if err != nil {
		return nil, fmt.Errorf("read blob %s: %w", h, err)
	}
	rd, err := b.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(rd)
}

// safeName accepts a tree entry name git itself would check out.
func safeName(n string) bool {
	return n != "" && n != "." && n != ".." && !strings.ContainsAny(n, "/\\\x00") &&
		!strings.EqualFold(n, ".git")
}

// Export writes the files of commit (full hex hash) into dest, which must
// be missing or empty, without a .git: a plain tree for running tests
// against, cheaper than a clone per commit. On error dest is left as it
// was found.
func (r *Repo) Export(ctx context.Context, commit, dest string) (err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("export %s to %s: %w", commit, dest, err)
		}
	}()
	h, ok := parseHash(commit)
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownCommit, commit)
	}
	c, err := object.GetCommit(r.st, h)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnknownCommit, err)
	}
	created, err := prepareDest(dest)
	if err != nil {
		return err
	}
	var entries []*index.Entry
	if err := r.writeTree(ctx, dest, c.TreeHash, "", &entries); err != nil {
		cleanDest(dest, created)
		return err
	}
	return nil
}
