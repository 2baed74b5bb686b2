package gitstate

import (
	"context"
	"fmt"
	"io"
	"io/fs"
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
	undo, err := initDest(dest, false)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			undo()
		}
	}()
	r, err := open(filepath.Join(dest, ".git"), dest, opts.Options)
	if err != nil {
		return nil, err
	}
	refs, err := r.readBundles(ctx, bundles)
	if err != nil {
		return nil, err
	}
	if err := r.checkoutRefs(ctx, refs, opts.Commit); err != nil {
		return nil, err
	}
	return r, nil
}

// readBundles reads the bundles in order and returns the refs they name
// (later bundles win).
func (r *Repo) readBundles(ctx context.Context, bundles []io.Reader) (map[plumbing.ReferenceName]plumbing.Hash, error) {
	refs := map[plumbing.ReferenceName]plumbing.Hash{}
	for i, b := range bundles {
		hdr, err := r.ReadBundle(ctx, b)
		if err != nil {
			return nil, fmt.Errorf("bundle %d of %d: %w", i+1, len(bundles), err)
		}
		for _, ref := range hdr.Refs {
			refs[ref.Name] = ref.Hash
		}
	}
	return refs, nil
}

// FromBundles makes gitDir (missing or empty) a bare repository holding
// the objects and refs of the bundles, read in order, with HEAD as the
// bundles name it. Objects go to disk as Repo.ReadBundle stores them, so
// memory stays flat; Clone checks commits out of it.
func FromBundles(ctx context.Context, gitDir string, bundles ...io.Reader) (*Repo, error) {
	r, err := fromBundles(ctx, gitDir, bundles)
	if err != nil {
		return nil, fmt.Errorf("read bundles into %s: %w", gitDir, err)
	}
	return r, nil
}

func fromBundles(ctx context.Context, gitDir string, bundles []io.Reader) (_ *Repo, err error) {
	if len(bundles) == 0 {
		return nil, fmt.Errorf("%w: no bundles given", ErrEmptyBundle)
	}
	undo, err := initDest(gitDir, true)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			undo()
		}
	}()
	r, err := open(gitDir, "", Options{})
	if err != nil {
		return nil, err
	}
	refs, err := r.readBundles(ctx, bundles)
	if err != nil {
		return nil, err
	}
	head, branch, err := r.setRefs(refs, "")
	if err != nil {
		return nil, err
	}
	return r, r.setHead(head, branch)
}

// Clone makes dest (missing or empty) a repository with r's objects
// (hard-linked where the filesystem allows, else copied) and refs, and
// checks out commit ("" = HEAD), as `git clone --local` does. On error
// dest is left as it was found.
func (r *Repo) Clone(ctx context.Context, dest, commit string) (*Repo, error) {
	c, err := r.clone(ctx, dest, commit)
	if err != nil {
		return nil, fmt.Errorf("clone %s: %w", dest, err)
	}
	return c, nil
}

func (r *Repo) clone(ctx context.Context, dest, commit string) (_ *Repo, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	undo, err := initDest(dest, false)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			undo()
		}
	}()
	gitDir := filepath.Join(dest, ".git")
	if err := linkTree(ctx, filepath.Join(r.git, "objects"), filepath.Join(gitDir, "objects")); err != nil {
		return nil, fmt.Errorf("copy objects: %w", err)
	}
	list, err := bundleRefs(r.st)
	if err != nil {
		return nil, err
	}
	refs := map[plumbing.ReferenceName]plumbing.Hash{}
	for _, ref := range list {
		refs[ref.Name] = ref.Hash
	}
	c, err := open(gitDir, dest, r.opts)
	if err != nil {
		return nil, err
	}
	if err := c.checkoutRefs(ctx, refs, commit); err != nil {
		return nil, err
	}
	return c, nil
}

// linkTree hard-links (or copies) every file under src into dst. Object
// files are immutable, so sharing them is safe.
func linkTree(ctx context.Context, src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if err := os.Link(p, to); err == nil || os.IsExist(err) {
			return nil
		}
		return copyFile(p, to)
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// setRefs writes refs (HEAD aside) and returns the commit to check out —
// commit when given, else the refs' HEAD (else main) — and the branch HEAD
// should name ("" = detached).
func (r *Repo) setRefs(refs map[plumbing.ReferenceName]plumbing.Hash, commit string) (plumbing.Hash, plumbing.ReferenceName, error) {
	names := make([]string, 0, len(refs))
	for name := range refs {
		if name != plumbing.HEAD {
			names = append(names, name.String())
		}
	}
	sort.Strings(names)
	for _, name := range names {
		if err := r.setRef(plumbing.ReferenceName(name), refs[plumbing.ReferenceName(name)]); err != nil {
			return plumbing.ZeroHash, "", err
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
	if commit != "" {
		h, ok := parseHash(commit)
		if !ok {
			return plumbing.ZeroHash, "", fmt.Errorf("commit %q: %w", commit, ErrUnknownCommit)
		}
		if h != head {
			branch = ""
		}
		want = h
	}
	if want.IsZero() {
		return plumbing.ZeroHash, "", fmt.Errorf("%w: bundles name no HEAD and no %s", ErrUnknownCommit, DefaultBranch)
	}
	return want, branch, nil
}

// setHead points HEAD at branch, or at commit when branch is "".
func (r *Repo) setHead(commit plumbing.Hash, branch plumbing.ReferenceName) error {
	var err error
	if branch != "" {
		err = r.st.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, branch))
	} else {
		err = r.setRef(plumbing.HEAD, commit)
	}
	if err != nil {
		return fmt.Errorf("set HEAD: %w", err)
	}
	return nil
}

// checkoutRefs writes refs, checks out commit ("" = HEAD) and points HEAD
// at it.
func (r *Repo) checkoutRefs(ctx context.Context, refs map[plumbing.ReferenceName]plumbing.Hash, commit string) error {
	want, branch, err := r.setRefs(refs, commit)
	if err != nil {
		return err
	}
	if err := r.checkoutInto(ctx, want); err != nil {
		return err
	}
	return r.setHead(want, branch)
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
		mode := e.Mode
		if mode == filemode.Deprecated {
			mode = filemode.Regular
		}
		switch mode {
		case filemode.Symlink:
			err = r.writeSymlink(e.Hash, abs)
		case filemode.Executable:
			err = r.writeBlob(e.Hash, abs, 0o755)
		default:
			err = r.writeBlob(e.Hash, abs, 0o644)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		st, err := lstat(abs)
		if err != nil {
			return err
		}
		ie := &index.Entry{Name: rel, Hash: e.Hash}
		statEntry(ie, st, mode)
		*entries = append(*entries, ie)
	}
	return nil
}

// writeBlob writes blob h as a new file, never following or replacing an
// existing one. The content is streamed: a blob of any size costs a copy
// buffer, not its size.
func (r *Repo) writeBlob(h plumbing.Hash, path string, perm os.FileMode) error {
	b, err := object.GetBlob(r.st, h)
	if err != nil {
		return fmt.Errorf("read blob %s: %w", h, err)
	}
	rd, err := b.Reader()
	if err != nil {
		return fmt.Errorf("read blob %s: %w", h, err)
	}
	defer rd.Close()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, rd)
	if err == nil && n != b.Size {
		err = fmt.Errorf("blob %s: %d bytes, its header says %d", h, n, b.Size)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(path, perm) // exact mode, whatever the umask
	}
	return err
}

// writeSymlink makes a symlink whose target is blob h (at most 4 KB, as
// no system allows longer link targets).
func (r *Repo) writeSymlink(h plumbing.Hash, path string) error {
	b, err := object.GetBlob(r.st, h)
	if err != nil {
		return fmt.Errorf("read blob %s: %w", h, err)
	}
	if b.Size > 4<<10 {
		return fmt.Errorf("%w: symlink target of %d bytes", ErrUnsafePath, b.Size)
	}
	rd, err := b.Reader()
	if err != nil {
		return fmt.Errorf("read blob %s: %w", h, err)
	}
	defer rd.Close()
	data, err := io.ReadAll(io.LimitReader(rd, 4<<10))
	if err != nil {
		return fmt.Errorf("read blob %s: %w", h, err)
	}
	return os.Symlink(string(data), path)
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
	return r.exportTree(ctx, c.TreeHash, dest)
}

// ExportTree is Export for a tree hash (full hex), such as Snapshot's.
func (r *Repo) ExportTree(ctx context.Context, tree, dest string) error {
	h, ok := parseHash(tree)
	if !ok {
		return fmt.Errorf("export tree %q to %s: not a full hex hash", tree, dest)
	}
	if _, err := object.GetTree(r.st, h); err != nil {
		return fmt.Errorf("export tree %s to %s: %w", tree, dest, err)
	}
	if err := r.exportTree(ctx, h, dest); err != nil {
		return fmt.Errorf("export tree %s to %s: %w", tree, dest, err)
	}
	return nil
}

func (r *Repo) exportTree(ctx context.Context, tree plumbing.Hash, dest string) error {
	created, err := prepareDest(dest)
	if err != nil {
		return err
	}
	var entries []*index.Entry
	if err := r.writeTree(ctx, dest, tree, "", &entries); err != nil {
		cleanDest(dest, created)
		return err
	}
	return nil
}

// Populate writes the files of commit (full hex hash) into the work tree,
// which must be missing or empty, and an index matching them; refs are not
// touched. It restores a workspace that was deleted, from the checkpoint
// history alone.
func (r *Repo) Populate(ctx context.Context, commit string) (err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("populate %s with %s: %w", r.dir, commit, err)
		}
	}()
	h, ok := parseHash(commit)
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownCommit, commit)
	}
	created, err := prepareDest(r.dir)
	if err != nil {
		return err
	}
	if err := r.checkoutInto(ctx, h); err != nil {
		cleanDest(r.dir, created)
		return err
	}
	return nil
}

// initDest makes dest (missing or empty) a new repository, bare or with
// dest as its work tree, and returns undo, which leaves dest as it was
// found; callers run undo when a later part of their work fails.
func initDest(dest string, bare bool) (undo func(), err error) {
	created, err := prepareDest(dest)
	if err != nil {
		return nil, err
	}
	if _, err := git.PlainInitWithOptions(dest, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: DefaultBranch}, Bare: bare,
	}); err != nil {
		cleanDest(dest, created)
		return nil, err
	}
	return func() { cleanDest(dest, created) }, nil
}

// CommitTree returns the tree hash of commit (full hex hashes).
func (r *Repo) CommitTree(commit string) (string, error) {
	h, ok := parseHash(commit)
	if !ok {
		return "", fmt.Errorf("%w: %q", ErrUnknownCommit, commit)
	}
	c, err := object.GetCommit(r.st, h)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrUnknownCommit, commit, err)
	}
	return c.TreeHash.String(), nil
}
