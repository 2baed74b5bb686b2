package gitstate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// Sentinel errors of the package.
var (
	// ErrNotRepository: Open found no .git directory in the workspace.
	ErrNotRepository = errors.New("not a git repository")
	// ErrAlreadyRepository: Init found an existing .git.
	ErrAlreadyRepository = errors.New("already a git repository")
	// ErrUnknownCommit: a commit asked for is not in the repository.
	ErrUnknownCommit = errors.New("unknown commit")
	// ErrDestNotEmpty: a clone or checkout destination holds files.
	ErrDestNotEmpty = errors.New("destination is not empty")
	// ErrUnsafePath: a tree entry would write outside its folder or into .git.
	ErrUnsafePath = errors.New("unsafe path in tree")
)

// DefaultBranch is the branch Init creates.
const DefaultBranch = plumbing.ReferenceName("refs/heads/main")

// Author identity of every commit gitstate writes; fixed so that commits
// depend only on content, parent and clock.
const (
	AuthorName  = "traj"
	AuthorEmail = "traj@localhost"
)

// Options configure a Repo.
type Options struct {
	// Now is the clock for commit times; time.Now when nil.
	Now func() time.Time
}

func (o Options) now() time.Time {
	if o.Now == nil {
		return time.Now()
	}
	return o.Now()
}

// Repo is a workspace with a git repository at its root. It is not safe
// for concurrent use.
type Repo struct {
	dir  string
	git  string
	st   *filesystem.Storage
	opts Options
	// hashed counts the files the last checkpoint read and hashed, so
	// tests can see the stat cache work.
	hashed int
}

// Init makes dir (created if missing) a git repository whose branch main
// holds one empty commit, and returns it.
func Init(ctx context.Context, dir string, opts Options) (*Repo, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("init %s: %w", dir, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
		return nil, fmt.Errorf("init %s: %w", dir, ErrAlreadyRepository)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("init %s: %w", dir, err)
	}
	if _, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: DefaultBranch},
	}); err != nil {
		return nil, fmt.Errorf("init %s: %w", dir, err)
	}
	r := open(dir, opts)
	tree, err := writeObject(r.st, &object.Tree{})
	if err != nil {
		return nil, fmt.Errorf("init %s: write empty tree: %w", dir, err)
	}
	sig := r.signature()
	c, err := writeObject(r.st, &object.Commit{
		Author: sig, Committer: sig, Message: "initial empty commit\n", TreeHash: tree,
	})
	if err != nil {
		return nil, fmt.Errorf("init %s: write commit: %w", dir, err)
	}
	if err := r.setRef(DefaultBranch, c); err != nil {
		return nil, fmt.Errorf("init %s: %w", dir, err)
	}
	if err := r.writeIndex(nil); err != nil {
		return nil, fmt.Errorf("init %s: %w", dir, err)
	}
	return r, nil
}

// Open opens the repository at the root of dir.
func Open(ctx context.Context, dir string, opts Options) (*Repo, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	fi, err := os.Stat(filepath.Join(dir, ".git", "HEAD"))
	if err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("open %s: %w", dir, ErrNotRepository)
	}
	return open(dir, opts), nil
}

func open(dir string, opts Options) *Repo {
	gitDir := filepath.Join(dir, ".git")
	return &Repo{
		dir:  dir,
		git:  gitDir,
		st:   filesystem.NewStorage(osfs.New(gitDir), cache.NewObjectLRUDefault()),
		opts: opts,
	}
}

// Dir is the workspace folder.
func (r *Repo) Dir() string { return r.dir }

// Storage is the repository's object and reference storage, for reading
// bundles into it.
func (r *Repo) Storage() storer.Storer { return r.st }

func (r *Repo) signature() object.Signature {
	return object.Signature{Name: AuthorName, Email: AuthorEmail, When: r.opts.now()}
}

// headTarget returns the ref a new commit moves: the branch HEAD points
// to, or HEAD itself when detached.
func (r *Repo) headTarget() (plumbing.ReferenceName, error) {
	ref, err := r.st.Reference(plumbing.HEAD)
	if err != nil {
		return "", fmt.Errorf("read HEAD: %w", err)
	}
	if ref.Type() == plumbing.SymbolicReference {
		return ref.Target(), nil
	}
	return plumbing.HEAD, nil
}

// Head returns the commit HEAD points to.
func (r *Repo) Head() (plumbing.Hash, error) {
	ref, err := storer.ResolveReference(r.st, plumbing.HEAD)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("resolve HEAD: %w", err)
	}
	return ref.Hash(), nil
}

// setRef points name at h by writing a loose ref file atomically (temp
// file and rename), so a killed process leaves the old or the new value,
// never an empty ref. Like go-git's loose objects it is not fsynced: the
// promise covers process death, not power loss.
func (r *Repo) setRef(name plumbing.ReferenceName, h plumbing.Hash) error {
	if !strings.HasPrefix(name.String(), "refs/") && name != plumbing.HEAD {
		return fmt.Errorf("set ref %s: %w", name, ErrUnsafePath)
	}
	if err := atomicWrite(filepath.Join(r.git, filepath.FromSlash(name.String())), []byte(h.String()+"\n")); err != nil {
		return fmt.Errorf("set ref %s: %w", name, err)
	}
	return nil
}

// atomicWrite replaces path with data through a temp file in the same folder.
func atomicWrite(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// encoder is an object go-git can encode: trees, commits.
type encoder interface {
	Encode(plumbing.EncodedObject) error
}

// writeObject encodes o, stores it unless already present and returns its hash.
func writeObject(st storer.EncodedObjectStorer, o encoder) (plumbing.Hash, error) {
	obj := st.NewEncodedObject()
	if err := o.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	h := obj.Hash()
	if st.HasEncodedObject(h) == nil {
		return h, nil
	}
	return st.SetEncodedObject(obj)
}

// objectStore is the part of go-git's storage that gitstate writes to.
type objectStore = storer.EncodedObjectStorer
