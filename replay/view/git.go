package view

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	fdiff "github.com/go-git/go-git/v5/plumbing/format/diff"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/trajlab/traj/replay/linediff"
	"github.com/trajlab/traj/trace/gitstate"
)

// gitRepo is a trajectory's history cloned once from its bundles into the
// viewer's cache, read through go-git's on-disk storage: objects are read
// when a diff or a file asks for them, never all held in memory.
type gitRepo struct {
	dir     string
	st      storer.Storer
	bundles string // fingerprint of the bundles it was cloned from
	made    time.Time
}

// Limits on what one answer carries.
const (
	maxPatchBytes = 2 << 20
	maxFileBytes  = 1 << 20
)

// repo returns the trajectory's history, cloning it on first use and again
// when the bundles changed (a trajectory still being recorded gains
// history bundles) and a commit is missing.
func (t *trajectory) repo(ctx context.Context, want string) (*gitRepo, error) {
	// gitMu, not mu: a clone can take a while and must not hold up the
	// timeline's requests.
	t.gitMu.Lock()
	defer t.gitMu.Unlock()
	if r := t.git; r != nil && (want == "" || r.has(want) || time.Since(r.made) < 2*time.Second) {
		return r, nil
	}
	t.mu.Lock()
	rt := t.rt
	t.mu.Unlock()
	if rt == nil {
		return nil, errors.New("trajectory not opened")
	}
	paths, err := rt.BundlePaths(ctx)
	if err != nil {
		return nil, err
	}
	fp := fingerprint(paths)
	if t.git != nil && t.git.bundles == fp {
		t.git.made = time.Now()
		return t.git, nil
	}
	base := t.cat.cacheDir
	if base == "" {
		base = os.TempDir()
	}
	// One folder per trajectory, one clone in it per set of bundles: a
	// new clone replaces the older ones (a trajectory being recorded gains
	// history bundles), so the cache holds one clone per trajectory.
	ht := sha256.Sum256([]byte(rt.Store.URI(rt.Prefix)))
	hb := sha256.Sum256([]byte(fp))
	parent := filepath.Join(base, "git", hex.EncodeToString(ht[:12]))
	dir := filepath.Join(parent, hex.EncodeToString(hb[:12]))
	var gr *gitstate.Repo
	if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		gr, err = gitstate.OpenClone(ctx, dir, gitstate.Options{})
		if err != nil {
			return nil, err
		}
	} else {
		tmp := dir + ".tmp-" + fmt.Sprint(os.Getpid())
		os.RemoveAll(tmp)
		var readers []io.Reader
		for _, p := range paths {
			f, err := os.Open(p)
			if err != nil {
				return nil, fmt.Errorf("read bundle: %w", err)
			}
			defer f.Close()
			readers = append(readers, f)
		}
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			return nil, fmt.Errorf("create git cache: %w", err)
		}
		if _, err := gitstate.CloneFromBundles(ctx, tmp, gitstate.CloneOptions{}, readers...); err != nil {
			os.RemoveAll(tmp)
			return nil, err
		}
		if err := os.Rename(tmp, dir); err != nil {
			os.RemoveAll(tmp)
			return nil, fmt.Errorf("keep clone: %w", err)
		}
		if gr, err = gitstate.OpenClone(ctx, dir, gitstate.Options{}); err != nil {
			return nil, err
		}
	}
	if old, err := os.ReadDir(parent); err == nil {
		for _, e := range old {
			if p := filepath.Join(parent, e.Name()); p != dir && !strings.Contains(e.Name(), ".tmp-") {
				os.RemoveAll(p)
			}
		}
	}
	t.git = &gitRepo{dir: dir, st: gr.Storage(), bundles: fp, made: time.Now()}
	return t.git, nil
}

// fingerprint names a set of bundle files by path, size and time.
func fingerprint(paths []string) string {
	var b strings.Builder
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			fmt.Fprintf(&b, "%s?;", p)
			continue
		}
		fmt.Fprintf(&b, "%s:%d:%d;", p, fi.Size(), fi.ModTime().UnixNano())
	}
	return b.String()
}

func (r *gitRepo) has(commit string) bool {
	_, err := r.commit(commit)
	return err == nil
}

func (r *gitRepo) commit(hash string) (*object.Commit, error) {
	if !plumbing.IsHash(hash) {
		return nil, fmt.Errorf("%q is not a commit id", hash)
	}
	c, err := object.GetCommit(r.st, plumbing.NewHash(hash))
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", hash, err)
	}
	return c, nil
}

// Diff is one checkpoint's changes.
type Diff struct {
	Before    string     `json:"before"`
	After     string     `json:"after"`
	Files     []DiffFile `json:"files"`
	Patch     string     `json:"patch"`
	Truncated bool       `json:"truncated"`
	// TooLarge: at least one file is too large to diff (DiffFile.TooLarge).
	TooLarge bool `json:"too_large,omitempty"`
}

// DiffFile is one changed file.
type DiffFile struct {
	Path   string `json:"path"`
	Status string `json:"status"` // added | deleted | modified | renamed
	From   string `json:"from,omitempty"`
	Binary bool   `json:"binary"`
	// TooLarge: the line diff ran out of its budget (replay/linediff), so
	// the patch shows the file's header and no hunks, as a diff tool
	// that gives up says "too large to diff".
	TooLarge bool `json:"too_large,omitempty"`
}

// diff is the checkpoint's patch, each file's line diff bounded by what
// is left of one budget for the whole answer; ctx is the request's, so a
// client that goes away ends the work.
func (r *gitRepo) diff(ctx context.Context, before, after string) (*Diff, error) {
	a, err := r.commit(before)
	if err != nil {
		return nil, err
	}
	b, err := r.commit(after)
	if err != nil {
		return nil, err
	}
	ta, err := a.Tree()
	if err != nil {
		return nil, fmt.Errorf("tree of %s: %w", before, err)
	}
	tb, err := b.Tree()
	if err != nil {
		return nil, fmt.Errorf("tree of %s: %w", after, err)
	}
	changes, err := ta.DiffContext(ctx, tb)
	if ctx.Err() != nil {
		return nil, fmt.Errorf("diff %s..%s: %w", before, after, ctx.Err())
	}
	if err != nil {
		return nil, fmt.Errorf("diff %s..%s: %w", before, after, err)
	}
	d := &Diff{Before: before, After: after, Files: []DiffFile{}}
	p := &filePatches{}
	budget := linediff.DefaultBudget
	for _, c := range changes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		fp, f, work, err := filePatch(ctx, c, budget)
		if err != nil {
			return nil, fmt.Errorf("diff %s..%s: %w", before, after, err)
		}
		budget = max(budget-work, linediff.DefaultBudget/50)
		d.Files = append(d.Files, f)
		d.TooLarge = d.TooLarge || f.TooLarge
		p.files = append(p.files, fp)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var buf limitedBuffer
	buf.limit = maxPatchBytes
	if err := fdiff.NewUnifiedEncoder(&buf, fdiff.DefaultContextLines).Encode(p); err != nil && !errors.Is(err, errLimit) {
		return nil, fmt.Errorf("format diff: %w", err)
	}
	d.Patch, d.Truncated = strings.ToValidUTF8(buf.String(), "\uFFFD"), buf.full
	return d, nil
}

// filePatch is one change's patch (go-git's shapes, so go-git's unified
// encoder prints it as before) with its line diff done by linediff within
// budget; it returns the work spent.
func filePatch(ctx context.Context, c *object.Change, budget int) (fdiff.FilePatch, DiffFile, int, error) {
	from, to, err := c.Files()
	if err != nil {
		return nil, DiffFile{}, 0, err
	}
	fp := &filePatchOf{from: c.From, to: c.To}
	var f DiffFile
	switch {
	case from == nil:
		f.Path, f.Status = c.To.Name, "added"
	case to == nil:
		f.Path, f.Status = c.From.Name, "deleted"
	case c.From.Name != c.To.Name:
		f.Path, f.From, f.Status = c.To.Name, c.From.Name, "renamed"
	default:
		f.Path, f.Status = c.To.Name, "modified"
	}
	var text [2]string
	for i, file := range []*object.File{from, to} {
		if file == nil {
			continue
		}
		bin, err := file.IsBinary()
		if err != nil {
			return nil, f, 0, err
		}
		if bin {
			f.Binary, fp.binary = true, true
			return fp, f, 0, nil
		}
		if text[i], err = file.Contents(); err != nil {
			return nil, f, 0, err
		}
	}
	res := linediff.Lines(ctx, text[0], text[1], budget)
	if res.TooLarge {
		f.TooLarge = true
		return fp, f, res.Work, nil
	}
	for _, ch := range res.Chunks {
		op := fdiff.Equal
		switch ch.Op {
		case linediff.Delete:
			op = fdiff.Delete
		case linediff.Insert:
			op = fdiff.Add
		}
		fp.chunks = append(fp.chunks, lineChunk{ch.Text, op})
	}
	// go-git calls a text patch without chunks binary (an empty file
	// added or removed): the same here, so the patch reads as before.
	fp.binary = len(fp.chunks) == 0
	f.Binary = fp.binary
	return fp, f, res.Work, nil
}

// filePatches, filePatchOf, lineChunk and entryFile are go-git's diff
// interfaces (plumbing/format/diff) over our line diff.
type filePatches struct{ files []fdiff.FilePatch }

func (p *filePatches) FilePatches() []fdiff.FilePatch { return p.files }
func (p *filePatches) Message() string                { return "" }

type filePatchOf struct {
	from, to object.ChangeEntry
	chunks   []fdiff.Chunk
	binary   bool
}

func (f *filePatchOf) IsBinary() bool        { return f.binary }
func (f *filePatchOf) Chunks() []fdiff.Chunk { return f.chunks }
func (f *filePatchOf) Files() (from, to fdiff.File) {
	if f.from.TreeEntry.Mode.IsFile() {
		from = entryFile{f.from}
	}
	if f.to.TreeEntry.Mode.IsFile() {
		to = entryFile{f.to}
	}
	return from, to
}

type lineChunk struct {
	text string
	op   fdiff.Operation
}

func (c lineChunk) Content() string       { return c.text }
func (c lineChunk) Type() fdiff.Operation { return c.op }

type entryFile struct{ ce object.ChangeEntry }

func (e entryFile) Hash() plumbing.Hash     { return e.ce.TreeEntry.Hash }
func (e entryFile) Mode() filemode.FileMode { return e.ce.TreeEntry.Mode }
func (e entryFile) Path() string            { return e.ce.Name }

var errLimit = errors.New("output limit reached")

// limitedBuffer keeps the first limit bytes written and then refuses more.
type limitedBuffer struct {
	bytes.Buffer
	limit int
	full  bool
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.limit - l.Len(); len(p) > room {
		l.Buffer.Write(p[:max(room, 0)])
		l.full = true
		return 0, errLimit
	}
	return l.Buffer.Write(p)
}

// TreeEntry is one entry of a folder at a commit.
type TreeEntry struct {
	Name string `json:"name"`
	Type string `json:"type"` // file | dir | link | submodule
	Size int64  `json:"size,omitempty"`
}

// tree lists the folder dir ("" for the root) at commit.
func (r *gitRepo) tree(commit, dir string) ([]TreeEntry, error) {
	c, err := r.commit(commit)
	if err != nil {
		return nil, err
	}
	t, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("tree of %s: %w", commit, err)
	}
	if dir = cleanPath(dir); dir != "" {
		if t, err = t.Tree(dir); err != nil {
			return nil, fmt.Errorf("folder %q at %s: %w", dir, commit[:min(12, len(commit))], errNoSuchPath)
		}
	}
	out := make([]TreeEntry, 0, len(t.Entries))
	for _, e := range t.Entries {
		te := TreeEntry{Name: e.Name}
		switch e.Mode {
		case filemode.Dir:
			te.Type = "dir"
		case filemode.Symlink:
			te.Type = "link"
		case filemode.Submodule:
			te.Type = "submodule"
		default:
			te.Type = "file"
			if sz, err := r.st.EncodedObjectSize(e.Hash); err == nil {
				te.Size = sz
			}
		}
		out = append(out, te)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if (out[i].Type == "dir") != (out[j].Type == "dir") {
			return out[i].Type == "dir"
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

var errNoSuchPath = errors.New("no such path")

// File is a file's content at a commit.
type File struct {
	Path      string `json:"path"`
	Size      int64  `json:"size"`
	Binary    bool   `json:"binary"`
	Text      string `json:"text"`
	Truncated bool   `json:"truncated"`
	// Lines is Text highlighted (highlight.go); absent when no lexer
	// knows the file.
	Lines [][]Token `json:"lines,omitempty"`
	// Added are the lines this part added (1-based), when its
	// checkpoint changed the file.
	Added []int `json:"added"`
	// AddedTooLarge: the line diff that finds them ran out of its budget
	// (replay/linediff), so none are marked.
	AddedTooLarge bool `json:"added_too_large,omitempty"`
	// ChangedAt are the parts whose checkpoints changed the file.
	ChangedAt []int `json:"changed_at"`
	// MoreChanges says ChangedAt was cut at maxChangedAt.
	MoreChanges bool `json:"more_changes,omitempty"`
}

func (r *gitRepo) file(commit, name string) (*File, error) {
	out, err := r.plainFile(commit, name)
	if err != nil || out.Binary {
		return out, err
	}
	out.Lines, _ = highlight(out.Path, out.Text)
	return out, nil
}

// plainFile is file without highlighting.
func (r *gitRepo) plainFile(commit, name string) (*File, error) {
	c, err := r.commit(commit)
	if err != nil {
		return nil, err
	}
	name = cleanPath(name)
	f, err := c.File(name)
	if err != nil {
		return nil, fmt.Errorf("file %q at %s: %w", name, commit[:min(12, len(commit))], errNoSuchPath)
	}
	out := &File{Path: name, Size: f.Size}
	rd, err := f.Reader()
	if err != nil {
		return nil, fmt.Errorf("read %q: %w", name, err)
	}
	defer rd.Close()
	data, err := io.ReadAll(io.LimitReader(rd, maxFileBytes))
	if err != nil {
		return nil, fmt.Errorf("read %q: %w", name, err)
	}
	out.Truncated = int64(len(data)) < f.Size
	if bytes.IndexByte(data, 0) >= 0 {
		out.Binary = true
		return out, nil
	}
	out.Text = strings.ToValidUTF8(string(data), "\uFFFD")
	return out, nil
}

// addedLines are the line numbers (1-based) of after's lines that are not
// in before, line by line (linediff, bounded); tooLarge when the diff ran
// out of its budget or ctx ended (then none are marked).
func addedLines(ctx context.Context, before, after string) (added []int, tooLarge bool) {
	out := []int{}
	res := linediff.Lines(ctx, before, after, 0)
	if res.TooLarge {
		return out, true
	}
	line := 1
	for _, c := range res.Chunks {
		n := strings.Count(c.Text, "\n")
		if !strings.HasSuffix(c.Text, "\n") && c.Text != "" {
			n++
		}
		switch c.Op {
		case linediff.Insert:
			for i := 0; i < n; i++ {
				out = append(out, line+i)
			}
			line += n
		case linediff.Equal:
			line += n
		}
	}
	return out, false
}

// cleanPath makes a slash path relative and free of "." and "..".
func cleanPath(p string) string {
	p = path.Clean("/" + p)
	return strings.TrimPrefix(p, "/")
}
