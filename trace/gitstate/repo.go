package gitstate

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/trajlab/traj/trace"
)

// Sentinel errors of the package.
var (
	// ErrNotRepository: Open found no git directory where it looked.
	ErrNotRepository = errors.New("not a git repository")
	// ErrAlreadyRepository: Init found an existing git directory.
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

// largeObject is the size above which objects are streamed from packs and
// loose files instead of being read into memory whole.
const largeObject = 1 << 20

// Options configure a Repo.
type Options struct {
	// Now is the clock for commit times; time.Now when nil.
	Now func() time.Time
	// Capture decides what a checkpoint records. The workspace's own
	// .gitignore files are never read.
	Capture trace.CaptureRules
	// KeepPacksOpen keeps each pack file open after its first read (go-git
	// otherwise opens and closes the pack on every object read: 70 µs a
	// commit, most of a cached evaluate's tree lookups). For read-only
	// histories, whose packs never change; Close releases them.
	KeepPacksOpen bool
}

func (o Options) now() time.Time {
	if o.Now == nil {
		return time.Now()
	}
	return o.Now()
}

// Repo is a checkpoint history: a git directory and the work tree it
// records. The git directory of a trajectory's checkpoints lives outside
// the workspace (Init), so nothing the agent does to the workspace,
// its own .git included, reaches it. A clone (CloneFromBundles) is an
// ordinary repository with its .git inside. It is not safe for concurrent
// use.
type Repo struct {
	dir  string
	git  string
	st   *filesystem.Storage
	opts Options
	// exclude matches the capture rules' excluded paths.
	exclude gitignore.Matcher
	// index is the index the last checkpoint wrote (index.go).
	index *cachedIndex
	// trees are the last scan's trees by folder (checkpoint.go cachedTree).
	trees map[string]cachedTree
	// hashed counts the files the last checkpoint read and hashed, so
	// tests can see the stat cache work.
	hashed int
	// mu serialises Checkpoint and Snapshot (the tool gateway snapshots
	// the workspace while the recording loop checkpoints it).
	mu sync.Mutex
}

// Init makes gitDir (missing or empty) a git directory whose work tree is
// workTree (created if missing) and whose branch main holds one empty
// commit, and returns it. The git directory is a plain one the git CLI
// reads (`git --git-dir GITDIR log`); its config names the work tree.
func Init(ctx context.Context, gitDir, workTree string, opts Options) (*Repo, error) {
	r, err := initRepo(ctx, gitDir, workTree, opts)
	if err != nil {
		return nil, fmt.Errorf("init %s: %w", gitDir, err)
	}
	return r, nil
}

func initRepo(ctx context.Context, gitDir, workTree string, opts Options) (*Repo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if _, err := os.Lstat(filepath.Join(gitDir, "HEAD")); err == nil {
		return nil, ErrAlreadyRepository
	}
	if err := os.MkdirAll(workTree, 0o755); err != nil {
		return nil, err
	}
	g, err := git.PlainInitWithOptions(gitDir, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: DefaultBranch}, Bare: true,
	})
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(workTree)
	if err != nil {
		return nil, err
	}
	cfg, err := g.Config()
	if err != nil {
		return nil, err
	}
	cfg.Core.IsBare, cfg.Core.Worktree = false, abs
	if err := g.SetConfig(cfg); err != nil {
		return nil, err
	}
	r, err := open(gitDir, workTree, opts)
	if err != nil {
		return nil, err
	}
	if err := r.initialCommit(); err != nil {
		return nil, err
	}
	if err := r.writeExclude(); err != nil {
		return nil, err
	}
	return r, nil
}

// writeExclude writes the capture rules' excludes into info/exclude, so
// `git status` on the git directory agrees with what checkpoints record.
func (r *Repo) writeExclude() error {
	var b strings.Builder
	b.WriteString("# traj's capture rules (trace header \"capture\"); checkpoints never read .gitignore files\n")
	for _, p := range r.opts.Capture.Exclude {
		b.WriteString(p + "\n")
	}
	return atomicWrite(filepath.Join(r.git, "info", "exclude"), []byte(b.String()))
}

// initialCommit points the default branch at an empty commit and writes an
// empty index.
func (r *Repo) initialCommit() error {
	tree, err := writeObject(r.st, &object.Tree{})
	if err != nil {
		return fmt.Errorf("write empty tree: %w", err)
	}
	sig := r.signature()
	c, err := writeObject(r.st, &object.Commit{
		Author: sig, Committer: sig, Message: "initial empty commit\n", TreeHash: tree,
	})
	if err != nil {
		return fmt.Errorf("write commit: %w", err)
	}
	if err := r.setRef(DefaultBranch, c); err != nil {
		return err
	}
	return r.writeIndex(nil)
}

// Open opens the git directory gitDir with the work tree workTree.
func Open(ctx context.Context, gitDir, workTree string, opts Options) (*Repo, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("open %s: %w", gitDir, err)
	}
	fi, err := os.Stat(filepath.Join(gitDir, "HEAD"))
	if err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("open %s: %w", gitDir, ErrNotRepository)
	}
	r, err := open(gitDir, workTree, opts)
	if err == nil && len(opts.Capture.Exclude) > 0 {
		err = r.writeExclude()
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", gitDir, err)
	}
	return r, nil
}

// OpenClone opens a repository with its .git inside dir, such as one
// CloneFromBundles made.
func OpenClone(ctx context.Context, dir string, opts Options) (*Repo, error) {
	return Open(ctx, filepath.Join(dir, ".git"), dir, opts)
}

func open(gitDir, workTree string, opts Options) (*Repo, error) {
	ps := make([]gitignore.Pattern, 0, len(opts.Capture.Exclude))
	for _, p := range opts.Capture.Exclude {
		if strings.TrimSpace(p) == "" || strings.HasPrefix(p, "#") {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(p, nil))
	}
	return &Repo{
		dir: workTree,
		git: gitDir,
		st: filesystem.NewStorageWithOptions(osfs.New(gitDir), cache.NewObjectLRUDefault(),
			filesystem.Options{LargeObjectThreshold: largeObject, KeepDescriptors: opts.KeepPacksOpen}),
		opts:    opts,
		exclude: gitignore.NewMatcher(ps),
	}, nil
}

// Close releases the pack files KeepPacksOpen kept open.
func (r *Repo) Close() error { return r.st.Close() }

// GitDir is the repository's git directory.
func (r *Repo) GitDir() string { return r.git }

// Dir is the work tree: the workspace folder.
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
	return writeFileAtomic(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// writeFileAtomic replaces path with what write writes, through a temp
// file in the same folder. It is not trace/atomicfile on purpose: that one
// syncs file and folder, which made BenchmarkCheckpoint 3x slower (300
// files: 12 -> 40 ms a checkpoint; 3000: 32 -> 100 ms), and a checkpoint
// needs no sync here: the history bundle, not this git directory, is what
// survives a crash.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-")
	if err != nil {
		return err
	}
	tmp := f.Name()
	bw := bufio.NewWriterSize(f, 64<<10)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
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
